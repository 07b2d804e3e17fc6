"""The life of a ``youyou serve`` process: stop signals, crashes, idle sessions, start-up with
no configuration, and its logs.

Each test runs the real server in a subprocess, on SQLite and on PostgreSQL where a database is
involved; the model is the fake OpenAI server.
"""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import (
    COMMAND,
    PROBE_INTERVAL_S,
    START_TIMEOUT_S,
    Api,
    Server,
    StreamingSend,
    Workbench,
    is_healthy,
    listening_addresses,
    model_messages,
    pausing_reply,
    probe_client,
    text_of,
    try_send,
    wait_until,
    write_config,
)
from youyou.config import Settings
from youyou.workbench.app import create_app
from youyou.workbench.server import setup_server_process

StartWorkbench = Callable[..., Workbench]

FIRST_PIECE = "Looking at db-1. "
# SIGTERM cancels the running turns at once; what is left is closing the streams and the
# storages. The bound leaves room for a loaded test machine.
STOP_BOUND_S = 8.0


def history(api: Api, session_id: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = api.data("GET", f"/chat/sessions/{session_id}/messages")
    return messages


def open_sessions(api: Api) -> float:
    metrics = api.http.get("/metrics").text
    [line] = [line for line in metrics.splitlines() if line.startswith("youyou_open_sessions ")]
    return float(line.split()[1])


def test_sigterm_mid_turn_stores_the_partial_answer_and_exits_0(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(process=True)
    api = wb.user("amy")
    sid = api.new_session()["id"]
    wb.model.enqueue(pausing_reply(FIRST_PIECE, pause_s=60))
    turn = StreamingSend(api, sid, "why is db-1 slow?")
    turn.wait_for("text_delta")

    asked = time.monotonic()
    process = wb.process
    process.send_signal(signal.SIGTERM)
    assert process.wait(STOP_BOUND_S + 20) == 0, wb.server.log()
    took = time.monotonic() - asked
    assert took < STOP_BOUND_S, f"stopping took {took:.1f} s"
    frames = turn.join()
    assert frames[-1].event == "turn_cancelled", turn.events()
    assert turn.text() == FIRST_PIECE

    restarted = start_workbench()  # same database
    again = Api(restarted.url, api.token)
    messages = history(again, sid)
    assert [(m["role"], m["status"]) for m in messages] == [
        ("user", "complete"),
        ("assistant", "incomplete"),
    ]
    assert text_of(messages[0]) == "why is db-1 slow?"
    assert text_of(messages[1]) == FIRST_PIECE
    assert again.send(sid, "go on")[-1].event == "turn_complete"
    sent = model_messages(wb.model.requests[-1])
    assert ("user", "why is db-1 slow?") in sent and sent[-1] == ("user", "go on")
    again.close()


def test_a_hung_model_does_not_hold_up_shutdown_with_memory_extraction(
    start_workbench: StartWorkbench,
) -> None:
    """Closing the open sessions at shutdown extracts their memories, a model call: bounded
    by ``[memory] close_timeout_s`` (the provider's own timeout here is 20 s)."""
    wb = start_workbench(process=True, memory=True, memory_keys="close_timeout_s = 1")
    api = wb.user("ann")
    sid = api.new_session()["id"]
    assert api.send(sid, "db-1 runs postgres 15")[-1].event == "turn_complete"
    wb.model.enqueue(pausing_reply("{", pause_s=120))  # the extraction request hangs

    asked = time.monotonic()
    process = wb.process
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, wb.server.log()
    took = time.monotonic() - asked
    assert took < STOP_BOUND_S, f"stopping took {took:.1f} s"
    assert "without extracting memories" in wb.server.log()
    assert len(wb.model.requests) == 2, "one turn and one extraction request"


def test_sigkill_mid_turn_keeps_everything_acknowledged(start_workbench: StartWorkbench) -> None:
    """The crash test: nothing the client was told is stored is lost, nothing is corrupted."""
    wb = start_workbench(process=True)  # the lease lives 30 s: a restart must not wait for it
    api = wb.user("ben")
    sid = api.new_session()["id"]
    assert api.send(sid, "first question")[-1].event == "turn_complete"
    wb.model.enqueue(pausing_reply(FIRST_PIECE, pause_s=60))
    turn = StreamingSend(api, sid, "second question")
    acknowledged = turn.wait_for("turn_started").data["userMessageSeq"]
    turn.wait_for("text_delta")
    wb.server.kill()  # SIGKILL
    turn.join()
    assert turn.error is not None, "the stream must break, not end cleanly"

    restarted = start_workbench()  # same database
    again = Api(restarted.url, api.token)
    messages = history(again, sid)
    assert [(m["role"], text_of(m), m["status"]) for m in messages[:3]] == [
        ("user", "first question", "complete"),
        ("assistant", "ok", "complete"),
        ("user", "second question", "complete"),
    ]
    assert messages[2]["seq"] == acknowledged
    # Whatever of the answer reached the ledger before the kill is marked incomplete.
    assert all(m["role"] == "assistant" and m["status"] == "incomplete" for m in messages[3:])
    assert [m["seq"] for m in messages] == sorted({m["seq"] for m in messages})

    # The killed process's lease is taken over at once: its holder ran here and is gone.
    status, frames, code = try_send(again, sid, "third question")
    assert (status, code) == (200, "")
    assert frames[-1].event == "turn_complete"
    sent = [m for m in model_messages(wb.model.requests[-1]) if m[0] == "user"]
    assert sent == [
        ("user", "first question"),
        ("user", "second question"),
        ("user", "third question"),
    ]
    users = [text_of(m) for m in history(again, sid) if m["role"] == "user"]
    assert users == ["first question", "second question", "third question"]
    again.close()


def test_idle_sessions_are_closed_and_resume_with_their_history(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(extra="[server]\nsession_idle_s = 1")
    api = wb.user("cleo")
    sid = api.new_session()["id"]
    assert api.send(sid, "db-1 is on postgres 15")[-1].event == "turn_complete"
    assert wait_until(lambda: open_sessions(api) == 0, timeout_s=15), "the session stayed open"

    assert api.send(sid, "which version again?")[-1].event == "turn_complete"
    sent = [m for m in model_messages(wb.model.requests[-1]) if m[0] != "system"]
    assert sent == [
        ("user", "db-1 is on postgres 15"),
        ("assistant", "ok"),
        ("user", "which version again?"),
    ]
    assert len(history(api, sid)) == 4


# -- start-up and logs ----------------------------------------------------------------------


@pytest.fixture
def bare_server(tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen[str], Path]]]:
    """``youyou serve ARGS`` with HOME and XDG_DATA_HOME in tmp_path and no YOUYOU_* variables;
    returns the process and the file its stdout goes to (stderr goes to another)."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], Path]:
        stdout = tmp_path / "stdout.txt"
        process = subprocess.Popen(
            [*COMMAND, "serve", *args],
            stdout=stdout.open("w", encoding="utf-8"),
            stderr=(tmp_path / "stderr.txt").open("w", encoding="utf-8"),
            env=Server(tmp_path, tmp_path / "unused.toml", 0).env(),
            cwd=tmp_path,
            text=True,
        )
        started.append(process)
        return process, stdout

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def wait_healthy(process: subprocess.Popen[str], port: int, log: Path) -> None:
    with probe_client() as probe:

        def healthy() -> bool:
            assert process.poll() is None, log.read_text()
            return is_healthy(probe, f"http://127.0.0.1:{port}")

        assert wait_until(healthy, START_TIMEOUT_S, PROBE_INTERVAL_S), log.read_text()


def test_without_configuration_it_serves_the_demo_model_from_the_user_data_dir(
    tmp_path: Path, bare_server: Callable[..., tuple[subprocess.Popen[str], Path]]
) -> None:
    port = free_port()  # the default is 8000; a free port keeps parallel runs apart
    process, stdout = bare_server("--port", str(port))
    wait_healthy(process, port, stdout)

    assert listening_addresses(port) == {"127.0.0.1"}
    database = tmp_path / "xdg-data" / "youyou" / "youyou.db"
    assert database.is_file()
    said = " ".join(stdout.read_text().split())  # the console wraps long lines
    assert f"YouYou workbench on http://127.0.0.1:{port}" in said
    assert "offline demo model" in said and "[[providers]]" in said and "--config" in said
    assert "warning" not in said
    assert f"sqlite+aiosqlite:///{database}" in "".join(said.split())

    api = Api.signed_up(f"http://127.0.0.1:{port}", "dora")
    frames = api.send(api.new_session()["id"], "hello")
    assert frames[-1].event == "turn_complete" and any(f.event == "text_delta" for f in frames)
    api.close()
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0


def test_a_non_loopback_host_prints_a_warning(
    tmp_path: Path,
    sqlite_url: str,
    fake_model: FakeOpenAIServer,
    bare_server: Callable[..., tuple[subprocess.Popen[str], Path]],
) -> None:
    config = write_config(tmp_path, sqlite_url, fake_model.base_url)
    port = free_port()
    process, stdout = bare_server("--config", str(config), "--host", "0.0.0.0", "--port", str(port))
    wait_healthy(process, port, stdout)
    said = " ".join(stdout.read_text().split())
    assert "warning: listening on 0.0.0.0, reachable from other machines" in said
    assert listening_addresses(port) == {"0.0.0.0"}
    process.send_signal(signal.SIGTERM)
    assert process.wait(30) == 0


def test_json_logs_carry_the_request_id_of_each_response(start_workbench: StartWorkbench) -> None:
    wb = start_workbench("--log-format", "json")
    api = wb.user("eve")
    listed = api.http.get("/chat/sessions")
    given = api.http.get("/chat/sessions/nope", headers={"X-Request-Id": "trace-42"})
    assert given.status_code == 404 and given.headers["x-request-id"] == "trace-42"
    sid = api.new_session()["id"]
    with api.http.stream(
        "POST", f"/chat/sessions/{sid}/messages", json={"content": "hi"}
    ) as response:
        response.read()
    ids = {listed.headers["x-request-id"], "trace-42", response.headers["x-request-id"]}

    def records() -> list[dict[str, Any]]:
        lines = wb.server.log().splitlines()
        first = next(i for i, line in enumerate(lines) if line.startswith("{"))
        # Before the first log line only the console's start-up lines; after it, JSON only.
        return [json.loads(line) for line in lines[first:]]

    assert wait_until(lambda: ids <= {r["request_id"] for r in records()}, timeout_s=10), (
        wb.server.log()
    )
    logged = records()
    assert all(
        {"time", "level", "logger", "request_id", "message"} <= record.keys() for record in logged
    )
    send = [r for r in logged if r["request_id"] == response.headers["x-request-id"]]
    # the access line, and the model call made by the turn the request started
    assert {"uvicorn.access"} < {r["logger"] for r in send}, send


async def test_the_app_alone_changes_nothing_in_its_process(tmp_path: Path) -> None:
    """``create_app`` can run inside any process (tests, an embedder's server): its lifespan
    neither installs signal handlers nor freezes the garbage collector."""
    settings = Settings.model_validate({"database": {"url": f"sqlite:///{tmp_path / 'y.db'}"}})
    app = create_app(settings)
    gc.unfreeze()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() == 0
        assert {sig: signal.getsignal(sig) for sig in handlers} == handlers


async def test_the_server_process_keeps_startup_objects_out_of_full_collections(
    tmp_path: Path,
) -> None:
    """A full collection walks every tracked object: without freezing what start-up built,
    one gen-2 pause took ~100 ms of a busy server's event loop. ``youyou serve``'s process
    setup freezes them, and chains the stop signals to the hub."""
    settings = Settings.model_validate({"database": {"url": f"sqlite:///{tmp_path / 'y.db'}"}})
    app = create_app(settings, on_started=setup_server_process)
    gc.unfreeze()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 10_000
            # chained to the handler in place (uvicorn's in a server; Python's for SIGINT here)
            assert signal.getsignal(signal.SIGINT) is not handlers[signal.SIGINT]
    finally:
        gc.unfreeze()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
