"""Tool approvals across server processes: a call that waits survives a SIGKILL of the server
(SQLite and PostgreSQL) and the turn goes on after a restart, approved or denied; a decision
claimed before the process died is carried out by the next one; a decision sent to one of two
processes on PostgreSQL reaches the turn running on the other within half a second; a cancel
after the restart ends the turn no process runs any more."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from approval_kit import DENIED, TOOL, asks_for_the_time, decide, time_server, waiting_turn
from conftest import drop_pg_database, new_pg_database
from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import (
    Api,
    Server,
    kill_tree,
    start_together,
    try_send,
    wait_until,
    write_config,
)
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.approvals import Decision

# The bound the issue sets for a decision to reach the process running the turn.
DELIVERY_BOUND_S = 0.5


@pytest.fixture
def asking(fake_model: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_model.default = asks_for_the_time
    return fake_model


@pytest.fixture
def servers(tmp_path: Path, asking: FakeOpenAIServer) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        kill_tree(server)


def new_server(root: Path, url: str, model: FakeOpenAIServer, started: list[Server]) -> Server:
    root.mkdir(exist_ok=True)
    config = write_config(root, url, model.base_url, extra=time_server())
    server = Server(root, config, free_port())
    started.append(server)
    return server


def answered(api: Api, session_id: str) -> list[dict[str, Any]]:
    """The history once the turn's answer (``tool said: …``) is in it."""
    found: list[dict[str, Any]] = []

    def done() -> bool:
        nonlocal found
        found = api.data("GET", f"/chat/sessions/{session_id}/messages")
        return any(
            block.get("text", "").startswith("tool said:")
            for message in found
            for block in message["content"]
        )

    assert wait_until(done, 60, 0.05), found
    return found


# -- a server stopped while calls wait, and the one started after it ------------------------

# The sessions whose calls wait when the server stops, by the test that goes on with each:
# one stop and one restart serve them all (each test has a session of its own).
ROLES = {"kill": ("approve", "deny", "claimed", "cancel"), "term": ("approve", "cancel")}


@dataclass
class Restart:
    """A server stopped (``kill``: SIGKILL, ``term``: SIGTERM, a graceful stop) while a call
    waited in each session of ``waiting`` (role → session id, call id), and a new server
    started on the same database; ``alice`` is the sessions' owner on the new server."""

    alice: Api
    waiting: dict[str, tuple[str, str]]
    second: Server


Restarts = Callable[[str, str], Restart]


def shared_setup(params: dict[str, Any]) -> tuple[str, str] | None:
    """The ``restarts(backend, how)`` a test uses: conftest runs the tests that share one
    next to each other."""
    if "backend" not in params:
        return None
    return params["backend"], params.get("how", "kill")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend


@pytest.fixture(scope="module")
def restarts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarts]:
    """``restarts(backend, how)``: the ``Restart`` for the tests of ``ROLES[how]``, built by the
    first of them (in this process) on a database of its own, shared by the others."""
    built: dict[tuple[str, str], Restart] = {}
    started: list[Server] = []
    databases: list[str] = []
    with FakeOpenAIServer() as model:
        model.default = asks_for_the_time

        def restart(backend: str, how: str) -> Restart:
            if (backend, how) not in built:
                root = tmp_path_factory.mktemp(f"approvals-{backend}-{how}")
                if backend == "sqlite":
                    url = f"sqlite+aiosqlite:///{root / 'youyou.db'}"
                else:
                    url = asyncio.run(new_pg_database())
                    databases.append(url)
                built[backend, how] = stopped_while_waiting(root, url, model, started, how)
            return built[backend, how]

        try:
            yield restart
        finally:
            for restarted in built.values():
                restarted.alice.close()
            for server in started:
                kill_tree(server)
    for url in databases:
        asyncio.run(drop_pg_database(url))


def stopped_while_waiting(
    root: Path, url: str, model: FakeOpenAIServer, started: list[Server], how: str
) -> Restart:
    first = new_server(root / "first", url, model, started).start()
    alice = Api.signed_up(first.url, "alice")
    waiting: dict[str, tuple[str, str]] = {}
    turns = []
    for role in ROLES[how]:
        sid = alice.new_session()["id"]
        turn, asked = waiting_turn(alice, sid)
        waiting[role] = (sid, asked["callId"])
        turns.append(turn)
    if how == "kill":
        first.kill()
        for turn in turns:
            turn.join(30)
            assert turn.error is not None, "the stream breaks with the process"
    else:
        assert first.stop() == 0
        for turn in turns:
            turn.join(30)
    alice.close()
    if "claimed" in waiting:
        asyncio.run(claim(url, *waiting["claimed"]))
    second = new_server(root / "second", url, model, started).start()
    return Restart(Api(second.url, alice.token), waiting, second)


async def claim(url: str, session_id: str, call_id: str) -> None:
    """The decision reaches the approvals index, but no process carries it out."""
    store = await WorkbenchStore.open(url)
    try:
        decision = Decision("approve", "alice", datetime.now(UTC))
        await store.claim_decision(session_id, call_id, decision)
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("how", "decision"), [("kill", "approve"), ("kill", "deny"), ("term", "approve")]
)
def test_a_waiting_call_survives_a_stop_and_the_turn_goes_on_after_a_restart(
    restarts: Restarts, backend: str, how: str, decision: str
) -> None:
    stopped = restarts(backend, how)
    alice, (sid, call_id) = stopped.alice, stopped.waiting[decision]
    shown = alice.data("GET", f"/chat/sessions/{sid}")
    assert [p["callId"] for p in shown["pendingApprovals"]] == [call_id]
    assert shown["awaitingApproval"] is True
    assert try_send(alice, sid, "something else")[2] == "TURN_BUSY"

    decided = decide(alice, sid, call_id, decision=decision, reason="after the crash")
    assert decided["decision"] == decision
    messages = answered(alice, sid)
    (call,) = [c for m in messages for c in m["toolCalls"]]
    assert call["toolName"] == TOOL and call["approval"]["decision"] == decision
    if decision == "approve":
        assert call["isError"] is False and "Asia/Tokyo" in call["output"]
    else:
        assert DENIED in call["output"] and "after the crash" in call["output"]
    assert "interrupted" not in call["output"].lower()
    assert [m["role"] for m in messages if m["role"] == "user"] == ["user"]  # one turn
    assert alice.data("GET", f"/chat/sessions/{sid}")["pendingApprovals"] == []
    follow_up, _ = waiting_turn(alice, sid)  # the session takes new turns again
    alice.data("POST", f"/chat/sessions/{sid}/cancel")
    assert follow_up.join(60)[-1].event == "turn_cancelled"


def test_a_decision_claimed_before_the_process_died_is_carried_out_by_the_next_one(
    restarts: Restarts, backend: str
) -> None:
    """The decision reached the index but not the turn (the process died in between): the
    next server goes on with the turn on its own, the tool runs and the model answers."""
    stopped = restarts(backend, "kill")
    sid, _ = stopped.waiting["claimed"]
    messages = answered(stopped.alice, sid)
    (call,) = [c for m in messages for c in m["toolCalls"]]
    assert call["isError"] is False and "Asia/Tokyo" in call["output"]
    assert call["approval"]["decidedBy"] == "alice"


def posted(api: Api, session_id: str, call_id: str, result: dict[str, Any]) -> None:
    result["out"] = decide(api, session_id, call_id, decision="approve")


def test_a_decision_sent_to_the_other_process_reaches_the_turn_within_half_a_second(
    tmp_path: Path, migrated_pg_url: str, asking: FakeOpenAIServer, servers: list[Server]
) -> None:
    a = new_server(tmp_path / "a", migrated_pg_url, asking, servers)
    b = new_server(tmp_path / "b", migrated_pg_url, asking, servers)
    start_together(a, b)
    on_a = Api.signed_up(a.url, "alice")
    on_b = Api(b.url, on_a.token)
    latencies = []
    for round_ in range(3):
        sid = on_a.new_session()["id"]
        turn, asked = waiting_turn(on_b, sid)  # the turn runs on b
        result: dict[str, Any] = {}
        sent = time.monotonic()
        poster = threading.Thread(
            target=posted, args=(on_a, sid, asked["callId"], result), daemon=True
        )
        poster.start()
        turn.wait_for("tool_approval_decided", timeout_s=10)
        latencies.append(time.monotonic() - sent)
        poster.join(10)
        assert result["out"]["decision"] == "approve", round_
        assert turn.join(60)[-1].event == "turn_complete"
        assert "Asia/Tokyo" in turn.text()
    print(f"cross-process decision latency: {[f'{s:.3f}' for s in latencies]} s")
    assert min(latencies) < DELIVERY_BOUND_S, latencies


@pytest.mark.parametrize("how", ["kill", "term"])
def test_a_turn_left_waiting_by_a_stopped_server_is_cancelled_after_a_restart(
    restarts: Restarts, backend: str, how: str
) -> None:
    """No process runs the turn any more, yet its call waits: cancel ends it durably (the
    call gets the cancelled result, nothing waits) and the session takes new messages."""
    stopped = restarts(backend, how)
    alice, (sid, call_id) = stopped.alice, stopped.waiting["cancel"]
    assert alice.data("GET", f"/chat/sessions/{sid}")["running"] is True

    cancelled = alice.data("POST", f"/chat/sessions/{sid}/cancel")

    for shown in (cancelled, alice.data("GET", f"/chat/sessions/{sid}")):
        assert shown["pendingApprovals"] == []
        assert (shown["awaitingApproval"], shown["running"]) == (False, False)
    assert decide(alice, sid, call_id, 409, decision="approve")["code"] == (
        "APPROVAL_ALREADY_DECIDED"
    )
    history = alice.data("GET", f"/chat/sessions/{sid}/messages")
    (call,) = [c for m in history for c in m["toolCalls"]]
    assert call["isError"] is True and "cancelled" in call["output"]
    assert "Asia/Tokyo" not in call["output"]
    assert alice.data("POST", f"/chat/sessions/{sid}/cancel")["running"] is False  # idempotent
    follow_up, asked = waiting_turn(alice, sid)  # the session takes new turns again
    assert asked["callId"] != call_id
    assert decide(alice, sid, asked["callId"], decision="approve")["decision"] == "approve"
    assert follow_up.join(60)[-1].event == "turn_complete"
    assert "Asia/Tokyo" in follow_up.text()
