"""Several ``youyou serve`` processes on one PostgreSQL database behave as one server.

Two servers on two ports share a database and the fake model: a session's turn is held by a
lease in the database, so a send to one while a turn runs on the other is refused, a cancel
sent to either stops it, a process that cached a session reloads it when the other appended,
and the lease of a process that died expires. ``--workers 2`` is the same thing behind one
port; on SQLite it is refused before the server listens.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from fakes.http_server import RecordedRequest, Reply
from fakes.openai_server import FakeOpenAIServer, OpenAIStream, text_reply
from port_kit import free_port
from server_kit import (
    COMMAND,
    START_TIMEOUT_S,
    Api,
    Server,
    StreamingSend,
    descendants,
    kill_tree,
    ledger_id_of,
    model_messages,
    pausing_reply,
    start_together,
    text_of,
    try_send,
    wait_until,
    write_config,
)
from youyou.adapters.storage.engine import create_engine
from youyou.adapters.storage.lease import SqlSessionLeases
from youyou.domain.memory_extraction import MEMORY_EXTRACTION_PROMPT

StartPair = Callable[..., tuple[Server, Server]]

FIRST_PIECE = "Checking the disk. "
# A cancel is seen by the process running the turn when it next renews its lease (every
# 0.5 s); the bound leaves room for a loaded test machine.
CANCEL_BOUND_S = 4.0
OPEN_GAUGE = "youyou_open_sessions "


def slow_reply(pause_s: float) -> Reply:
    return pausing_reply(FIRST_PIECE, pause_s)


def gated_reply(opened: threading.Event) -> Reply:
    """``FIRST_PIECE`` at once, the rest once the test sets ``opened``: the turn runs for as
    long as the test needs it to, however loaded the machine is."""
    return OpenAIStream().text(FIRST_PIECE).gate(opened).text("Done.").finish().usage(10, 5).reply()


def echo(request: RecordedRequest) -> Reply:
    """Answers ``answer to <the last user message>``."""
    return text_reply(f"answer to {model_messages(request)[-1][1]}")


def history(api: Api, session_id: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = api.data("GET", f"/chat/sessions/{session_id}/messages")
    return messages


@pytest.fixture
def start_pair(
    tmp_path: Path, migrated_pg_url: str, fake_model: FakeOpenAIServer
) -> Iterator[StartPair]:
    """``start_pair(extra=…, memory=…)`` → two servers on two ports, one database and model."""
    started: list[Server] = []

    def start(extra: str = "", memory: bool = False) -> tuple[Server, Server]:
        pair = []
        for name in ("a", "b"):
            root = tmp_path / name
            root.mkdir()
            config = write_config(
                root, migrated_pg_url, fake_model.base_url, extra=extra, memory=memory
            )
            pair.append(Server(root, config, free_port()))
        started.extend(pair)
        start_together(*pair)
        return pair[0], pair[1]

    yield start
    for server in started:
        kill_tree(server)


def same_user(a: Server, b: Server, username: str) -> tuple[Api, Api]:
    """One user signed in once, with a client on each server."""
    on_a = Api.signed_up(a.url, username)
    return on_a, Api(b.url, on_a.token)


def test_a_send_while_the_turn_runs_on_the_other_server_is_409(
    start_pair: StartPair, fake_model: FakeOpenAIServer
) -> None:
    a, b = start_pair()
    on_a, on_b = same_user(a, b, "alice")
    sid = on_a.new_session()["id"]
    opened = threading.Event()
    fake_model.enqueue(gated_reply(opened))
    turn = StreamingSend(on_b, sid, "first")
    try:
        turn.wait_for("text_delta")
        busy = on_a.error("POST", f"/chat/sessions/{sid}/messages", 409, json={"content": "second"})
        assert busy["code"] == "TURN_BUSY"
        assert b.process is not None
        holder = f"youyou serve, pid {b.process.pid} on "
        assert "another server process" in busy["message"]
        assert holder not in busy["message"], "the client learns no host or pid"
        assert holder in a.log(), "the holder is in the refusing process's log"
        mode = on_a.error("PUT", f"/chat/sessions/{sid}/memory", 409, json={"mode": "manual"})
        assert mode["code"] == "TURN_BUSY"
    finally:
        opened.set()  # the turn ends only now: every refusal above was during it

    assert turn.join()[-1].event == "turn_complete"
    assert on_a.send(sid, "second")[-1].event == "turn_complete"
    users = [text_of(m) for m in history(on_b, sid) if m["role"] == "user"]
    assert users == ["first", "second"]


def copied_frames(migrated_pg_url: str) -> int:
    async def count() -> int:
        engine = create_engine(migrated_pg_url)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(text("SELECT count(*) FROM wb_turn_frames"))
                return int(rows.scalar_one())
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_a_client_re_attaching_through_the_other_server_follows_the_turn(
    start_pair: StartPair, fake_model: FakeOpenAIServer, migrated_pg_url: str
) -> None:
    """The frames come from copies the running server makes once a client follows the turn
    elsewhere: all of them, or those after ``Last-Event-ID``, the same frames the sender
    reads, through the end. Turns nobody follows elsewhere are not copied."""
    a, b = start_pair()
    on_a, on_b = same_user(a, b, "frank")
    sid = on_a.new_session()["id"]
    assert on_b.send(sid, "nobody follows this one elsewhere")[-1].event == "turn_complete"
    assert copied_frames(migrated_pg_url) == 0
    first_opened, second_opened = threading.Event(), threading.Event()
    fake_model.enqueue(gated_reply(first_opened), gated_reply(second_opened))
    try:
        sent = StreamingSend(on_b, sid, "first")
        first_piece = sent.wait_for("text_delta")
        assert first_piece.id is not None
        whole = StreamingSend.reattach(on_a, sid)
        rest = StreamingSend.reattach(on_a, sid, last_event_id=first_piece.id)
        whole.wait_for("text_delta")  # both follow the running turn before it goes on
        assert wait_until(lambda: rest.status is not None, 30), "the re-attach got no answer"
    finally:
        first_opened.set()

    frames = sent.join()
    assert frames[-1].event == "turn_complete"
    assert whole.status == rest.status == 200
    assert whole.join() == frames
    assert rest.join() == [f for f in frames if f.id is not None and f.id > first_piece.id]
    assert on_a.http.get(f"/chat/sessions/{sid}/stream").status_code == 204  # none runs

    try:
        second = StreamingSend(on_b, sid, "second")
        second.wait_for("text_delta")
        again = StreamingSend.reattach(on_a, sid)  # the copies of the first turn are not served
        again.wait_for("text_delta")
    finally:
        second_opened.set()
    assert again.join() == second.join()
    assert [f.event for f in again.frames][:2] == ["turn_started", "text_delta"]


def test_a_cancel_sent_to_one_server_stops_the_turn_on_the_other(
    start_pair: StartPair, fake_model: FakeOpenAIServer
) -> None:
    a, b = start_pair()
    on_a, on_b = same_user(a, b, "bob")
    sid = on_a.new_session()["id"]
    fake_model.enqueue(slow_reply(pause_s=60))
    turn = StreamingSend(on_b, sid, "a long answer please")
    turn.wait_for("text_delta")
    provider_request = fake_model.requests[-1]

    asked = time.monotonic()
    on_a.data("POST", f"/chat/sessions/{sid}/cancel")
    turn.wait_for("turn_cancelled", timeout_s=15)
    took = time.monotonic() - asked
    assert took < CANCEL_BOUND_S, f"the cancel took {took:.1f} s"
    assert turn.join()[-1].event == "turn_cancelled"
    assert turn.text() == FIRST_PIECE
    assert provider_request.disconnected.wait(5), "the provider stream stayed open"

    for api in (on_a, on_b):
        messages = history(api, sid)
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[1]["status"] == "incomplete"
        assert text_of(messages[1]) == FIRST_PIECE
    assert on_a.send(sid, "shorter then")[-1].event == "turn_complete"


def test_messages_through_either_server_make_one_history(
    start_pair: StartPair, fake_model: FakeOpenAIServer
) -> None:
    fake_model.default = echo
    a, b = start_pair()
    on_a, on_b = same_user(a, b, "carol")
    sid = on_a.new_session()["id"]  # opened, and cached, on A
    questions = ["q1 via A", "q2 via B", "q3 via A", "q4 via B", "q5 via A"]
    for number, question in enumerate(questions):
        api = (on_a, on_b)[number % 2]
        frames = api.send(sid, question)
        assert frames[-1].event == "turn_complete", frames

    expected = []
    for question in questions:
        expected += [("user", question), ("assistant", f"answer to {question}")]
    seen = [[(m["role"], text_of(m)) for m in history(api, sid)] for api in (on_a, on_b)]
    assert seen[0] == seen[1] == expected
    seqs = [[m["seq"] for m in history(api, sid)] for api in (on_a, on_b)]
    assert seqs[0] == seqs[1] == sorted(seqs[0])

    # Each server had the session cached from its previous send; the other one appended
    # since, and what the model was sent shows that it reloaded before answering.
    requests = {model_messages(r)[-1][1]: model_messages(r) for r in fake_model.requests}
    for number, question in enumerate(questions):
        sent = [m for m in requests[question] if m[0] in ("user", "assistant")]
        assert sent == expected[: 2 * number + 1], question


def open_sessions(api: Api) -> float:
    metrics = api.http.get("/metrics").text
    [value] = [line.split()[1] for line in metrics.splitlines() if line.startswith(OPEN_GAUGE)]
    return float(value)


def test_an_idle_copy_the_other_server_wrote_to_is_dropped_without_extracting(
    start_pair: StartPair, fake_model: FakeOpenAIServer
) -> None:
    """Closing an idle session extracts long-term memories from it; a copy the other process
    has appended to since would extract from an outdated history (and a second time)."""
    a, b = start_pair(extra="[server]\nsession_idle_s = 1", memory=True)
    on_a, on_b = same_user(a, b, "frank")
    sid = on_a.new_session()["id"]
    on_a.send(sid, "first, on a")
    on_b.send(sid, "second, on b")  # a's open copy is now behind the ledger

    extractions = closed_with_extractions(on_a, on_b, fake_model)
    assert len(extractions) == 1, "only the process that wrote last extracts"
    assert "second, on b" in json.dumps(extractions[0].json["messages"])


def closed_with_extractions(
    on_a: Api, on_b: Api, fake_model: FakeOpenAIServer
) -> list[RecordedRequest]:
    """The extraction requests once both servers closed their idle copies. A session leaves
    the open-sessions gauge when its closing starts, before it extracts: wait for one, then
    leave room for a second (wrong) one to arrive."""
    deadline = time.monotonic() + 30
    while open_sessions(on_a) or open_sessions(on_b) or not extraction_requests(fake_model):
        assert time.monotonic() < deadline, "idle sessions were not closed with an extraction"
        time.sleep(0.2)
    time.sleep(0.5)
    return extraction_requests(fake_model)


def extraction_requests(fake_model: FakeOpenAIServer) -> list[RecordedRequest]:
    return [
        request
        for request in fake_model.requests
        if model_messages(request)
        and request.json["messages"][0]["content"] == MEMORY_EXTRACTION_PROMPT
    ]


def test_an_idle_session_whose_lease_is_busy_stays_open_and_extracts_once_it_is_free(
    start_pair: StartPair, fake_model: FakeOpenAIServer, migrated_pg_url: str
) -> None:
    """Both servers hold an idle copy; while a third holder has the lease (as when the other
    server drops its outdated copy), the up-to-date copy waits instead of being dropped, so
    its memories are still extracted, once."""
    # idle after 3 s: long enough that no sweep runs between the sends and the third holder
    a, b = start_pair(extra="[server]\nsession_idle_s = 3", memory=True)
    on_a, on_b = same_user(a, b, "gina")
    sid = on_a.new_session()["id"]
    on_a.send(sid, "first, on a")
    on_b.send(sid, "second, on b")  # a's copy is outdated, b's is the one to extract from
    ledger_id = asyncio.run(ledger_id_of(migrated_pg_url, sid))
    other = "youyou serve, pid 1 on another-host (test)"  # a live holder elsewhere
    assert asyncio.run(_lease(migrated_pg_url, ledger_id, other, acquire=True)) is None
    try:
        time.sleep(5.5)  # both copies are idle now, and the reapers have found the lease busy
        assert (open_sessions(on_a), open_sessions(on_b)) == (1, 1)
        assert extraction_requests(fake_model) == []
    finally:
        asyncio.run(_lease(migrated_pg_url, ledger_id, other, acquire=False))
    [extraction] = closed_with_extractions(on_a, on_b, fake_model)
    assert "second, on b" in json.dumps(extraction.json["messages"])


async def _lease(migrated_pg_url: str, ledger_id: str, holder: str, *, acquire: bool) -> str | None:
    engine = create_engine(migrated_pg_url)
    try:
        leases = SqlSessionLeases(engine)
        if acquire:
            return await leases.acquire(ledger_id, holder, 60.0)
        await leases.release(ledger_id, holder)
        return None
    finally:
        await engine.dispose()


def test_the_lease_of_a_killed_server_of_this_machine_is_taken_over_at_once(
    start_pair: StartPair, fake_model: FakeOpenAIServer
) -> None:
    """Its process is gone, so nobody can be writing under its lease: the other server goes on
    without waiting for the expiry (a lease of another machine's process still waits)."""
    a, b = start_pair(extra="[database]\nlease_ttl_s = 600")
    on_a, on_b = same_user(a, b, "dave")
    sid = on_a.new_session()["id"]
    fake_model.enqueue(slow_reply(pause_s=60))
    turn = StreamingSend(on_b, sid, "before the crash")
    turn.wait_for("text_delta")
    relayed = StreamingSend.reattach(on_a, sid)
    relayed.wait_for("text_delta")
    b.kill()  # SIGKILL: no cleanup, the lease stays in the database for 10 minutes
    turn.join()
    assert turn.error is not None, "the stream must break, not end cleanly"
    # a's relay sees that b has ended and ends its stream without a last frame
    assert [f.event for f in relayed.join(timeout_s=15)] == ["turn_started", "text_delta"]

    assert on_a.http.get(f"/chat/sessions/{sid}/stream").status_code == 204  # none runs
    status, frames, code = try_send(on_a, sid, "after the crash")
    assert (status, code) == (200, ""), frames
    assert frames[-1].event == "turn_complete"
    users = [text_of(m) for m in history(on_a, sid) if m["role"] == "user"]
    assert users == ["before the crash", "after the crash"]


def test_two_workers_on_postgresql_serve_as_one(
    tmp_path: Path, pg_url: str, fake_model: FakeOpenAIServer
) -> None:
    """On a new database: the server migrates it before its workers start."""
    config = write_config(tmp_path, pg_url, fake_model.base_url)
    server = Server(tmp_path, config, free_port())
    try:
        # uvicorn starts the workers one after the other, each importing the server anew
        start_together(server, args=("--workers", "2"), timeout_s=3 * START_TIMEOUT_S)
        assert server.process is not None
        assert len(descendants(server.process.pid)) >= 2, "expected two worker processes"
        api = Api.signed_up(server.url, "erin")
        sid = api.new_session()["id"]
        auth = {"Authorization": f"Bearer {api.token}"}

        def fresh(method: str, path: str, **kwargs: Any) -> httpx.Response:
            """A new connection each time, so either worker may answer."""
            return httpx.request(method, f"{server.url}{path}", headers=auth, timeout=30, **kwargs)

        statuses = [fresh("GET", f"/chat/sessions/{sid}").status_code for _ in range(20)]
        assert statuses == [200] * 20

        fake_model.enqueue(slow_reply(pause_s=60))
        turn = StreamingSend(api, sid, "first")
        turn.wait_for("text_delta")
        for _ in range(6):
            busy = fresh("POST", f"/chat/sessions/{sid}/messages", json={"content": "again"})
            assert busy.status_code == 409, busy.text
            assert busy.json()["error"]["code"] == "TURN_BUSY"
        assert fresh("POST", f"/chat/sessions/{sid}/cancel").status_code == 200
        turn.wait_for("turn_cancelled", timeout_s=15)
        assert api.send(sid, "second")[-1].event == "turn_complete"
        assert server.stop() == 0
    finally:
        kill_tree(server)


def test_workers_on_sqlite_are_refused_before_listening(
    tmp_path: Path, sqlite_url: str, fake_model: FakeOpenAIServer
) -> None:
    config = write_config(tmp_path, sqlite_url, fake_model.base_url)
    port = free_port()
    server = Server(tmp_path, config, port)
    started = subprocess.run(
        [*COMMAND, "serve", "--config", str(config), "--port", str(port), "--workers", "2"],
        capture_output=True,
        text=True,
        env=server.env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert started.returncode != 0
    said = " ".join((started.stdout + started.stderr).split())  # the console wraps lines
    assert "--workers > 1 needs PostgreSQL" in said, said
    assert "Set [database] url or YOUYOU_DATABASE_URL to a postgresql:// URL" in said, said
    assert "YouYou workbench on" not in said
    assert not (tmp_path / "youyou.db").exists(), "nothing may be created or migrated"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/healthz")
