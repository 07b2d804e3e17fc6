"""Database round trips of one send, on a real SQLite file and a real PostgreSQL, through the
real HTTP server (running in this process, so its engines can be watched).

Counted: every trip to the database while the send is handled, before the first byte of the
stream reaches the client and after it until the stream ends. A trip is a statement sent
through SQLAlchemy, or, on SQLite, one call into the connection's thread of the storage's own
driver path (a whole transaction of several statements goes in one: ``sqlite_driver.py``).
Trips of the process's periodic tasks (the idle sweep, lease renewals, looking for stopped
turns) are not the send's and are left out. The second send of a session is measured: the
first one also resumes the session and creates the user's default prompt.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from fakes.openai_server import OpenAIStream
from server_kit import Api, Workbench

StartWorkbench = Callable[..., Workbench]

# The process's own periodic work, by the name of the coroutine its task runs.
PERIODIC = frozenset(
    {
        "reap_idle",
        "serve_followers",
        "apply_decisions",
        "resume_stopped_turns",
        "index_backlog",
        "_renew",
    }
)


@dataclass
class Statements:
    """What the engines of this process executed, in order, outside the periodic tasks."""

    seen: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        self.add(statement)

    def add(self, statement: str) -> None:
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        name = getattr(task.get_coro(), "__name__", "") if task is not None else ""
        if name in PERIODIC:
            return
        with self.lock:
            self.seen.append(" ".join(statement.split())[:90])

    def mark(self) -> int:
        with self.lock:
            return len(self.seen)


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Statements]:
    statements = Statements()
    execute: Any = aiosqlite.Connection._execute

    async def driver_trip(self: aiosqlite.Connection, fn: Any, *args: Any) -> Any:
        if fn.__module__ == "youyou.adapters.storage.sqlite_driver":
            sql = args[1]  # the statement, or the BEGIN of a whole transaction
            statements.add(f"[driver] {fn.__name__}: {sql if isinstance(sql, str) else ''}")
        return await execute(self, fn, *args)

    def begin(conn: Any) -> None:
        statements.add("(begin)")

    monkeypatch.setattr(aiosqlite.Connection, "_execute", driver_trip)
    event.listen(Engine, "before_cursor_execute", statements)
    event.listen(Engine, "begin", begin)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", statements)
        event.remove(Engine, "begin", begin)
        monkeypatch.undo()


def transactions(trips: list[str]) -> int:
    """SQLAlchemy's transactions, and the storage's own driver transactions on SQLite."""
    return sum(1 for t in trips if t == "(begin)" or t.startswith("[driver] _in_transaction"))


def statements_of(trips: list[str]) -> int:
    """Statements, a driver transaction counting as one (its statements go in one trip)."""
    return sum(1 for t in trips if t != "(begin)" and not t.startswith("[driver] _execute_on"))


def measured_send(api: Api, session_id: str, statements: Statements) -> tuple[list[str], list[str]]:
    """The trips of one send before its stream's first byte, and after it."""
    start = statements.mark()
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": "how is db-1?"}
    ) as response:
        chunks = response.iter_bytes()
        next(chunks)
        first = statements.mark()
        rest = b"".join(chunks)
    assert response.status_code == 200
    assert b"turn_complete" in rest
    end = statements.mark()
    return statements.seen[start:first], statements.seen[first:end]


def test_a_send_reads_its_configuration_in_one_transaction_and_its_lease_in_one_statement(
    start_workbench: StartWorkbench, monkeypatch: pytest.MonkeyPatch, workbench_db: str
) -> None:
    """Before the first byte, three transactions: the token, the session's row and the owner's
    configuration (prompts, skills, selection and groups: read fresh, so a change made through
    another process counts from the next send) in one; the lease with the ledger's last seq
    (has another process appended?) in one statement; the user's message. After it, two: the
    answer with the lease given back in the same transaction (the turn's last write), and the
    turn's usage, the session's projection and the message index of the turn's messages as the
    session has them in memory (the ledger is not read again) in one. On SQLite each of these
    transactions goes to the driver in one trip, as the ledger's appends do, so their
    statements are not seen one by one there."""
    wb = start_workbench()
    api = wb.user("rita")
    session_id = api.new_session()["id"]
    api.send(session_id, "hello")  # resumes the session, makes the default prompt
    # the model waits 1 s before answering, so the answer's writes cannot land before the
    # client has read the stream's first byte (that split is what is counted)
    wb.model.enqueue(OpenAIStream().delay(1.0).text("db-1 is fine").finish().usage(10, 5).reply())
    with counting(monkeypatch) as statements:
        before, after = measured_send(api, session_id, statements)
    report = "\n".join(["before:", *before, "after:", *after])
    assert transactions(before) + transactions(after) == 5, report
    assert transactions(before) <= 3, report
    assert transactions(after) <= 2, report
    assert not any("ledger_events.event_json" in t for t in after), report
    assert not any(t.startswith("SELECT sessions") for t in before), report  # no head read
    if workbench_db.startswith("sqlite"):
        # the token, the session's row and the configuration in one read; the lease (with the
        # ledger's last seq); the user's message
        reads, writes = (
            "[driver] _in_transaction: BEGIN",
            "[driver] _in_transaction: BEGIN IMMEDIATE",
        )
        assert before == [reads, writes, writes], report
        # the answer with the lease given back; the turn's end as the workbench records it
        assert after == [writes, writes], report
    else:
        configuration = [t for t in before if "wb_prompts" in t or "wb_groups" in t]
        assert len(configuration) == 2, report
        reading = before.index(configuration[0])
        assert "(begin)" not in before[reading : before.index(configuration[1])], report
        # the token's user with the session's row in one statement, then the configuration
        token = next(i for i, t in enumerate(before) if t.startswith("SELECT wb_users.id"))
        assert not any(t.startswith("SELECT wb_chat_sessions") for t in before), report
        assert "(begin)" not in before[token:reading], report
        leases = [t for t in before if "session_leases" in t]
        assert len(leases) == 1 and leases[0].startswith("INSERT"), report
        # the lease is deleted in the answer's transaction, right after its event
        answer = next(i for i, t in enumerate(after) if t.startswith("INSERT INTO ledger_events"))
        assert after[answer + 1].startswith("DELETE FROM session_leases"), report
        assert sum(1 for t in after if "session_leases" in t) == 1, report
    assert statements_of(before) + statements_of(after) <= 18, report
