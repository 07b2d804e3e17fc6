"""The connection guards of ``youyou serve`` (``workbench/connections.py`` and uvicorn's
settings), through real sockets: a connection that sends no complete request head is
closed, an idle kept-alive one too, connections over the cap are closed at once, and a
crowd of idle connections that exhausts the file descriptors lets go of them."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Callable

import httpx
import pytest

from server_kit import StreamingSend, Workbench, pausing_reply, wait_until

StartWorkbench = Callable[..., Workbench]


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """Connections do not depend on the database: SQLite only."""
    return migrated_sqlite_url


def connect(wb: Workbench) -> socket.socket:
    return socket.create_connection(("127.0.0.1", wb.server.port), timeout=30)


def closed_after(sock: socket.socket) -> float:
    """Seconds until the server closed ``sock`` (read returns nothing, or a reset)."""
    started = time.monotonic()
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_a_connection_must_send_its_request_head_in_time(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nheader_timeout_s = 1\nkeep_alive_timeout_s = 1")
    silent = connect(wb)
    assert closed_after(silent) < 5
    trickle = connect(wb)
    started = time.monotonic()
    try:
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":
            trickle.sendall(bytes([byte]))
            time.sleep(0.2)
        raise AssertionError("a header sent a byte at a time was never cut off")
    except OSError:
        assert time.monotonic() - started < 5
    kept = connect(wb)
    kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert kept.recv(65536).startswith(b"HTTP/1.1 200")
    assert closed_after(kept) < 5


def test_a_long_answer_outlives_the_header_deadline(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nheader_timeout_s = 1")
    wb.model.enqueue(pausing_reply("Checking", 3))
    api = wb.user("cid")
    send = StreamingSend(api, api.new_session()["id"], "hi")
    assert [f.event for f in send.join(30)][-1] == "turn_complete"
    assert send.text() == "CheckingDone."


def test_connections_over_the_cap_are_closed_at_once(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nmax_connections = 10\nheader_timeout_s = 60")
    crowd = [connect(wb) for _ in range(15)]
    for sock in crowd:
        sock.settimeout(0.5)
    closed = []
    for sock in crowd:
        try:
            closed.append(sock.recv(1) == b"")
        except TimeoutError:
            closed.append(False)
        except ConnectionResetError:
            closed.append(True)
    assert closed.count(True) == 5 and not any(closed[:9]), closed
    for sock in crowd:
        sock.close()
    assert wait_until(lambda: httpx.get(f"{wb.url}/healthz").status_code == 200, 10)


def test_idle_connections_that_exhaust_descriptors_are_let_go(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(process=True, extra="[server]\nheader_timeout_s = 2")
    resource.prlimit(wb.process.pid, resource.RLIMIT_NOFILE, (256, 256))
    crowd = [connect(wb) for _ in range(300)]
    try:

        def healthy() -> bool:
            try:
                return httpx.get(f"{wb.url}/healthz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        assert wait_until(healthy, 20), "the idle crowd still holds every descriptor"
    finally:
        for sock in crowd:
            sock.close()
