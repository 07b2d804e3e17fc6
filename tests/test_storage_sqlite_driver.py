"""Statements and BEGIN sent to aiosqlite directly, inside SQLAlchemy's transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage import engine as engine_module
from youyou.adapters.storage.engine import create_engine, migrate, transaction
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
    holder = sqlite3.connect(str(engine.url.database), isolation_level=None)
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


async def test_a_write_meeting_another_process_write_lock_is_a_storage_error(
    engine: AsyncEngine,
) -> None:
    holder = other_process_writing(engine)
    try:
        with pytest.raises(AgentError) as exc:
            async with transaction(engine, "appending event 2", write=True):
                pytest.fail("the write lock was taken twice")
        assert exc.value.code is ErrorCode.STORAGE_ERROR
        assert "appending event 2" in exc.value.message
        assert "another process holds the database's write lock" in exc.value.message
    finally:
        holder.rollback()
        holder.close()
    insert = DriverStatement.compile(sessions.insert(), engine.dialect)
    async with transaction(engine, "writing", write=True) as conn:  # the pool's connection is fine
        await insert.run(conn, ROW)


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
