"""Statements and BEGIN sent to aiosqlite directly, inside SQLAlchemy's transactions, and
read and write transactions run whole on aiosqlite's thread."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage import engine as engine_module
from youyou.adapters.storage.engine import (
    SqliteConnection,
    create_engine,
    migrate,
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


@pytest.fixture
async def held(engine: AsyncEngine) -> AsyncIterator[SqliteConnection]:
    """The connection a storage holds for its one-trip transactions."""
    connection = SqliteConnection(engine)
    yield connection
    await connection.close()


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
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    insert, row = _insert(engine)
    seen: list[int] = []

    def work(connection: sqlite3.Connection) -> str:
        seen.append(threading.get_ident())
        assert connection.in_transaction  # BEGIN IMMEDIATE came first
        insert.run_on(connection, row)
        return "done"

    assert await held.write("writing", work) == "done"
    assert seen and seen[0] != threading.get_ident()  # not the event loop's thread
    assert await _rows(engine) == ["s-1"]
    other_process_writing(engine).close()  # committed: the write lock is free


async def test_a_failing_one_trip_write_rolls_back_all_of_it(
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    insert, row = _insert(engine)

    def work(connection: sqlite3.Connection) -> None:
        insert.run_on(connection, row)
        insert.run_on(connection, row)  # the primary key refuses it

    with pytest.raises(AgentError) as exc:
        await held.write("writing twice", work)
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert exc.value.message.startswith("writing twice failed")
    assert await _rows(engine) == []  # the first insert went with it
    other_process_writing(engine).close()  # nothing was left open
    await held.write("writing", lambda c: insert.run_on(c, row))
    assert await _rows(engine) == ["s-1"]


Write = Callable[
    [AsyncEngine, SqliteConnection, str, DriverStatement, dict[str, object]], Awaitable[None]
]


async def _write_through_sqlalchemy(
    engine: AsyncEngine,
    _held: SqliteConnection,
    action: str,
    insert: DriverStatement,
    row: dict[str, object],
) -> None:
    async with transaction(engine, action, write=True) as conn:
        await insert.run(conn, row)


async def _write_in_one_trip(
    _engine: AsyncEngine,
    held: SqliteConnection,
    action: str,
    insert: DriverStatement,
    row: dict[str, object],
) -> None:
    await held.write(action, lambda connection: insert.run_on(connection, row))


@pytest.mark.parametrize("write", [_write_through_sqlalchemy, _write_in_one_trip])
async def test_a_write_meeting_another_process_write_lock_is_a_storage_error(
    engine: AsyncEngine, held: SqliteConnection, write: Write
) -> None:
    insert, row = _insert(engine)
    holder = other_process_writing(engine)
    try:
        with pytest.raises(AgentError) as exc:
            await write(engine, held, "appending event 2", insert, row)
        assert exc.value.code is ErrorCode.STORAGE_ERROR
        assert "appending event 2" in exc.value.message
        assert "another process holds the database's write lock" in exc.value.message
        assert exc.value.retryable
    finally:
        holder.rollback()
        holder.close()
    await write(engine, held, "writing", insert, row)  # the pool's connection is fine
    assert await _rows(engine) == ["s-1"]


async def test_a_cancelled_caller_never_leaves_the_connection_inside_a_transaction(
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    insert, row = _insert(engine)
    started = threading.Event()

    def slow(connection: sqlite3.Connection) -> None:
        started.set()
        time.sleep(0.3)  # the caller is cancelled meanwhile
        insert.run_on(connection, row)

    task = asyncio.create_task(held.write("writing slowly", slow))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The cancel was raised once the transaction had ended on the driver's thread.
    other_process_writing(engine).close()
    assert await _rows(engine) == ["s-1"]
    second = {**ROW, "id": "s-2"}
    await held.write("writing", lambda c: insert.run_on(c, second))
    assert sorted(await _rows(engine)) == ["s-1", "s-2"]
    other_process_writing(engine).close()


async def test_a_one_trip_read_sees_one_snapshot_without_taking_the_write_lock(
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    insert, row = _insert(engine)
    await held.write("writing", lambda c: insert.run_on(c, row))
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
        assert await held.read("reading", work) == [("s-1",), ("s-1",)]
    finally:
        holder.close()
    assert seen and seen[0] != threading.get_ident()
    assert sorted(await _rows(engine)) == ["s-1", "s-2"]  # the next read sees the commit


async def test_a_failing_one_trip_read_leaves_no_transaction_open(
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    missing = DriverStatement("SELECT * FROM no_such_table", (), ())

    def work(connection: sqlite3.Connection) -> None:
        missing.run_on(connection, {})

    with pytest.raises(AgentError) as exc:
        await held.read("reading a session", work)
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert exc.value.message.startswith("reading a session failed")
    other_process_writing(engine).close()  # no read transaction pins the connection
    insert, row = _insert(engine)
    await held.write("writing", lambda c: insert.run_on(c, row))
    assert await _rows(engine) == ["s-1"]


async def test_the_held_connection_is_kept_and_replaced_after_a_failure(
    held: SqliteConnection,
) -> None:
    missing = DriverStatement("SELECT * FROM no_such_table", (), ())

    def same(connection: sqlite3.Connection) -> sqlite3.Connection:
        return connection

    first = await held.read("reading", same)
    assert await held.write("writing", same) is first  # one connection for both

    def refuse(_: sqlite3.Connection) -> None:
        raise AgentError(ErrorCode.SESSION_NOT_FOUND, "no such session")

    with pytest.raises(AgentError):
        await held.read("reading", refuse)
    assert await held.read("reading", same) is first  # a refusal leaves the connection as it is
    with pytest.raises(AgentError):
        await held.read("reading", lambda connection: missing.run_on(connection, {}))
    assert await held.read("reading", same) is not first  # a fresh one after a driver failure


async def test_overlapping_calls_on_the_held_connection_are_each_one_transaction(
    engine: AsyncEngine, held: SqliteConnection
) -> None:
    insert, _ = _insert(engine)
    rows = [{**ROW, "id": f"s-{n}"} for n in range(20)]
    count = compiled_statement(select(sessions.c.id), engine.dialect)

    def write(row: dict[str, object], connection: sqlite3.Connection) -> None:
        insert.run_on(connection, row)
        time.sleep(0.001)  # another call queued meanwhile must not run inside this one

    def read(connection: sqlite3.Connection) -> int:
        return len(count.run_on(connection, {}))

    writes = [held.write("writing", functools.partial(write, row)) for row in rows]
    # A call run inside another's transaction would fail on its BEGIN.
    await asyncio.gather(*writes, *(held.read("reading", read) for _ in rows))
    assert sorted(await _rows(engine)) == sorted(str(row["id"]) for row in rows)


async def test_the_held_connection_keeps_nothing_a_call_returned(held: SqliteConnection) -> None:
    """aiosqlite's thread holds its last call's result until its next call; a held connection
    must not pin a whole session's rows that way."""

    class Rows:
        pass

    returned = weakref.ref(await held.read("reading", lambda _: Rows()))
    assert returned() is None
