"""What the server reads of a request before routing (``workbench/intake.py``), through real
HTTP: a stranger's large body is refused before it is read, a large body needs a valid token
first, a slow body is cut off, and a NUL character is a 400 on both backends."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from server_kit import Api, Workbench, try_send

StartWorkbench = Callable[..., Workbench]
MIB = 1024 * 1024
PNG_HEAD = b"\x89PNG\r\n\x1a\n"
JSON = {"Content-Type": "application/json"}


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def open_request(wb: Workbench, head: str) -> socket.socket:
    """A raw connection that has sent ``head`` (request line and headers) and nothing else."""
    sock = socket.create_connection(("127.0.0.1", wb.server.port), timeout=30)
    sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
    return sock


def answer_of(sock: socket.socket) -> tuple[int, bytes]:
    """(status, whole answer) of a response the server closes the connection after."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return int(received.split(b" ", 2)[1]), received


def test_strangers_sending_large_bodies_add_no_memory(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(process=True)
    pid = wb.process.pid
    before = rss_bytes(pid)
    senders = []
    for _ in range(6):
        sock = open_request(
            wb,
            "POST /auth/login HTTP/1.1\nHost: x\nContent-Type: application/json\n"
            f"Content-Length: {32 * MIB}\n",
        )
        with contextlib.suppress(OSError):  # refused and closed before the body is read
            sock.sendall(b"x" * (30 * MIB))
        senders.append(sock)  # and then the sender goes quiet, keeping its connection
    time.sleep(1)
    grown = rss_bytes(pid) - before
    for sock in senders:
        sock.close()
    assert grown < 24 * MIB, f"the server grew by {grown / MIB:.0f} MiB"
    assert httpx.get(f"{wb.url}/healthz").status_code == 200


def test_a_large_body_is_read_only_after_a_valid_token(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("ann")
    session = api.new_session()
    path = f"/chat/sessions/{session['id']}/messages"
    # only the headers are sent: the answer comes before any of the 20 MB body
    for authorization, status in (("", 413), ("Authorization: Bearer forged\n", 401)):
        sock = open_request(
            wb,
            f"POST {path} HTTP/1.1\nHost: x\nContent-Type: application/json\n"
            f"{authorization}Content-Length: {20 * MIB}\n",
        )
        assert answer_of(sock)[0] == status
        sock.close()
    # the same token-less refusal for a chunked body once it passes the anonymous limit
    chunks = (b"x" * 8192 for _ in range(10))
    login = httpx.post(f"{wb.url}/auth/login", content=chunks)
    assert (login.status_code, login.json()["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    # signed in: a message may be large, other routes stop at 1 MiB
    status, frames, _ = try_send(api, session["id"], "y" * (100 * 1024))
    assert status == 200 and frames[-1].event == "turn_complete"
    big_prompt = {"label": "big", "content": "z" * (MIB + 1)}
    assert api.error("POST", "/chat/prompts", 413, json=big_prompt)["code"] == ("PAYLOAD_TOO_LARGE")
    assert api.error("POST", "/chat/prompts", 400, json={**big_prompt, "content": "z" * 20_000})


def test_a_body_that_does_not_arrive_in_time_is_refused(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nbody_timeout_s = 1")
    sock = open_request(
        wb,
        "POST /auth/login HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: 50\n",
    )
    sock.sendall(b'{"username": "a')
    started = time.monotonic()
    status, answer = answer_of(sock)
    assert status == 408 and b"REQUEST_TIMEOUT" in answer
    assert 0.5 < time.monotonic() - started < 10


def test_a_nul_character_is_an_invalid_argument_everywhere(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("bea")
    session = api.new_session()
    anonymous = Api(wb.url)
    for client, method, path, kwargs in (
        (anonymous, "POST", "/auth/login", {"json": {"username": "bea\x00", "password": "x"}}),
        (anonymous, "POST", "/auth/register", {"json": {"username": "a\x00", "password": "p" * 9}}),
        (api, "POST", "/chat/prompts", {"json": {"label": "l", "content": "a\x00b"}}),
        (api, "POST", "/chat/prompts", {"json": {"label": "l", "content": "c", "\x00": 1}}),
        (api, "POST", f"/chat/sessions/{session['id']}/messages", {"json": {"content": "\x00"}}),
        (api, "GET", "/chat/sessions", {"params": {"q": "disk\x00"}}),
        (api, "GET", "/chat/sessions/a%00b", {}),
        (api, "GET", "/chat/prompts/%00", {}),
        (api, "POST", "/chat/knowledge", {"files": {"file": ("a.md", b"Restart it\x00 at once.")}}),
        (api, "POST", "/chat/skills", {"files": {"file": ("SKILL.md", b"---\nname: a\x00\n")}}),
    ):
        error = client.error(method, path, 400, **kwargs)
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT", (path, error)
    # a backslash followed by "u0000" is ordinary text
    literal = json.dumps({"label": "l", "content": "a\\u0000b"})
    stored = api.data(
        "POST", "/chat/prompts", 201, content=literal, headers={"Content-Type": "application/json"}
    )
    assert stored["content"] == "a\\u0000b"
    anonymous.close()


def test_a_signed_in_message_may_be_larger_than_other_bodies(
    start_workbench: StartWorkbench,
) -> None:
    """Only messages and uploads reach ``max_body_bytes``: a 3 MiB screenshot in a message is
    read and answered, while the same body sent to another route stops at 1 MiB."""
    wb = start_workbench()
    api = wb.user("ann")
    session = api.new_session()
    screenshot = base64.b64encode(PNG_HEAD + b"\0" * (3 * MIB)).decode()
    content = [
        {"type": "text", "text": "what does this graph say?"},
        {"type": "image", "mimeType": "image/png", "dataBase64": screenshot},
    ]
    assert api.send(session["id"], content)[-1].event == "turn_complete"
    body = json.dumps({"label": "x", "content": screenshot})
    api.error("POST", "/chat/prompts", 413, content=body, headers=JSON)
