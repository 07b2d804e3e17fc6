"""Statements and BEGIN sent to aiosqlite directly, inside SQLAlchemy's transactions, and
read and write transactions run whole on aiosqlite's thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage import engine as engine_module
from youyou.adapters.storage.engine import (
    create_engine,
    migrate,
    sqlite_read,
    sqlite_write,
    transaction,
)
from youyou.adapters.storage.sqlite_driver import DriverStatement, compiled_statement
from youyou.adapters.storage.tables import sessions
from youyou.domain.errors import AgentError, ErrorCode

AT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
ROW = {
    "id": "s-1",
    "title": "t",
    "title_folded": "t",
    "created_at": AT,
    "updated_at": AT,
    "message_count": 0,
    "last_seq": 1,
    **dict.fromkeys(("profile_seq", "compaction_seq", "checkpoint_seq", "memory_mode_seq")),
}


@pytest.fixture
async def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[AsyncEngine]:
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)  # a held lock fails fast
    created = create_engine(f"sqlite:///{tmp_path / 'y.db'}")
    await migrate(created)
    yield created
    await created.dispose()


def other_process_writing(engine: AsyncEngine) -> sqlite3.Connection:
    holder = sqlite3.connect(str(engine.url.database), isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def test_rows_come_back_with_sqlalchemys_result_processing(engine: AsyncEngine) -> None:
    insert = DriverStatement.compile(sessions.insert(), engine.dialect)
    query = DriverStatement.compile(
        select(sessions.c.id, sessions.c.created_at, sessions.c.last_seq), engine.dialect
    )
    async with transaction(engine, "writing", write=True) as conn:
        assert await insert.run(conn, ROW) == []
    async with transaction(engine, "reading") as conn:
        assert await query.run(conn, {}) == [("s-1", AT, 1)]


async def test_a_failed_write_leaves_no_transaction_open_in_the_pool(engine: AsyncEngine) -> None:
    insert = DriverStatement.compile(sessions.insert(), engine.dialect)
    with pytest.raises(AgentError) as exc:
        async with transaction(engine, "writing twice", write=True) as conn:
            await insert.run(conn, ROW)
            await insert.run(conn, ROW)  # the primary key refuses it
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    other_process_writing(engine).close()  # the lock is free: nothing was left open
    async with transaction(engine, "reading") as conn:
        assert (await conn.execute(select(sessions.c.id))).all() == []


async def test_a_statement_is_compiled_once_for_every_engine_of_the_same_kind(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    query = select(sessions.c.id).where(sessions.c.id == bindparam("id"))
    other = create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        await migrate(other)
        for each in (engine, other):
            async with transaction(each, "reading") as conn:  # the dialect learns its version
                await conn.execute(select(1))
        first = compiled_statement(query, engine.dialect)
        assert compiled_statement(query, other.dialect) is first
        assert first.sql == DriverStatement.compile(query, other.dialect).sql
        async with transaction(other, "reading") as conn:
            assert await first.run(conn, {"id": "s-1"}) == []
    finally:
        await other.dispose()


async def _rows(engine: AsyncEngine) -> list[str]:
    async with transaction(engine, "reading") as conn:
        return list((await conn.execute(select(sessions.c.id))).scalars())


def _insert(engine: AsyncEngine, **changes: object) -> tuple[DriverStatement, dict[str, object]]:
    return DriverStatement.compile(sessions.insert(), engine.dialect), {**ROW, **changes}


async def test_a_one_trip_write_runs_on_aiosqlites_own_thread_and_commits(
    engine: AsyncEngine,
) -> None:
    insert, row = _insert(engine)
    seen: list[int] = []

    def work(connection: sqlite3.Connection) -> str:
        seen.append(threading.get_ident())
        assert connection.in_transaction  # BEGIN IMMEDIATE came first
        insert.run_on(connection, row)
        return "done"

    assert await sqlite_write(engine, "writing", work) == "done"
    assert seen and seen[0] != threading.get_ident()  # not the event loop's thread
    assert await _rows(engine) == ["s-1"]
    other_process_writing(engine).close()  # committed: the write lock is free


async def test_a_failing_one_trip_write_rolls_back_all_of_it(engine: AsyncEngine) -> None:
    insert, row = _insert(engine)

    def work(connection: sqlite3.Connection) -> None:
        insert.run_on(connection, row)
        insert.run_on(connection, row)  # the primary key refuses it

    with pytest.raises(AgentError) as exc:
        await sqlite_write(engine, "writing twice", work)
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert exc.value.message.startswith("writing twice failed")
    assert await _rows(engine) == []  # the first insert went with it
    other_process_writing(engine).close()  # nothing was left open
    await sqlite_write(engine, "writing", lambda c: insert.run_on(c, row))
    assert await _rows(engine) == ["s-1"]


Write = Callable[[AsyncEngine, str, DriverStatement, dict[str, object]], Awaitable[None]]


async def _write_through_sqlalchemy(
    engine: AsyncEngine, action: str, insert: DriverStatement, row: dict[str, object]
) -> None:
    async with transaction(engine, action, write=True) as conn:
        await insert.run(conn, row)


async def _write_in_one_trip(
    engine: AsyncEngine, action: str, insert: DriverStatement, row: dict[str, object]
) -> None:
    await sqlite_write(engine, action, lambda connection: insert.run_on(connection, row))


@pytest.mark.parametrize("write", [_write_through_sqlalchemy, _write_in_one_trip])
async def test_a_write_meeting_another_process_write_lock_is_a_storage_error(
    engine: AsyncEngine, write: Write
) -> None:
    insert, row = _insert(engine)
    holder = other_process_writing(engine)
    try:
        with pytest.raises(AgentError) as exc:
            await write(engine, "appending event 2", insert, row)
        assert exc.value.code is ErrorCode.STORAGE_ERROR
        assert "appending event 2" in exc.value.message
        assert "another process holds the database's write lock" in exc.value.message
        assert exc.value.retryable
    finally:
        holder.rollback()
        holder.close()
    await write(engine, "writing", insert, row)  # the pool's connection is fine
    assert await _rows(engine) == ["s-1"]


async def test_a_cancelled_caller_never_leaves_the_connection_inside_a_transaction(
    engine: AsyncEngine,
) -> None:
    insert, row = _insert(engine)
    started = threading.Event()

    def slow(connection: sqlite3.Connection) -> None:
        started.set()
        time.sleep(0.3)  # the caller is cancelled meanwhile
        insert.run_on(connection, row)

    task = asyncio.create_task(sqlite_write(engine, "writing slowly", slow))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The cancel was raised once the transaction had ended on the driver's thread.
    other_process_writing(engine).close()
    assert await _rows(engine) == ["s-1"]
    second = {**ROW, "id": "s-2"}
    await sqlite_write(engine, "writing", lambda c: insert.run_on(c, second))
    assert sorted(await _rows(engine)) == ["s-1", "s-2"]
    other_process_writing(engine).close()


async def test_a_one_trip_read_sees_one_snapshot_without_taking_the_write_lock(
    engine: AsyncEngine,
) -> None:
    insert, row = _insert(engine)
    await sqlite_write(engine, "writing", lambda c: insert.run_on(c, row))
    query = compiled_statement(select(sessions.c.id), engine.dialect)
    # A writer elsewhere does not block a reader (it writes from the driver's thread below).
    holder = sqlite3.connect(
        str(engine.url.database), isolation_level=None, timeout=0, check_same_thread=False
    )
    holder.execute("BEGIN IMMEDIATE")
    seen: list[int] = []

    def work(connection: sqlite3.Connection) -> list[object]:
        seen.append(threading.get_ident())
        first = query.run_on(connection, {})
        # Another process commits between the two reads; the snapshot does not move.
        holder.execute(
            "INSERT INTO sessions (id, title, title_folded, created_at, updated_at, "
            "message_count, last_seq) VALUES ('s-2', 't', 't', 'x', 'x', 0, 1)"
        )
        holder.execute("COMMIT")
        return [*first, *query.run_on(connection, {})]

    try:
        assert await sqlite_read(engine, "reading", work) == [("s-1",), ("s-1",)]
    finally:
        holder.close()
    assert seen and seen[0] != threading.get_ident()
    assert sorted(await _rows(engine)) == ["s-1", "s-2"]  # the next read sees the commit


async def test_a_failing_one_trip_read_leaves_no_transaction_open(engine: AsyncEngine) -> None:
    missing = DriverStatement("SELECT * FROM no_such_table", (), ())

    def work(connection: sqlite3.Connection) -> None:
        missing.run_on(connection, {})

    with pytest.raises(AgentError) as exc:
        await sqlite_read(engine, "reading a session", work)
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert exc.value.message.startswith("reading a session failed")
    other_process_writing(engine).close()  # no read transaction pins the connection
    insert, row = _insert(engine)
    await sqlite_write(engine, "writing", lambda c: insert.run_on(c, row))
    assert await _rows(engine) == ["s-1"]
