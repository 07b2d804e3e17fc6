"""A database that a newer YouYou migrated is refused with one clear error and left unchanged.

Both Alembic chains (the kernel's session storage and the workbench's own tables) go through
``engine.migrate``, so both are checked here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text

from youyou.adapters.storage.engine import create_engine, migrate
from youyou.adapters.storage.tables import VERSION_TABLE
from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.store import migrate_workbench
from youyou.workbench.store.tables import VERSION_TABLE as WORKBENCH_VERSION_TABLE

FUTURE = "0099_from_a_newer_youyou"
Migrate = Callable[..., Awaitable[None]]


async def _versions(url: str, table: str) -> list[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(text(f"SELECT version_num FROM {table}"))).scalars())
    finally:
        await engine.dispose()


async def _stamp(url: str, table: str, revision: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(f"UPDATE {table} SET version_num = :v"), {"v": revision})
    finally:
        await engine.dispose()


async def _migrate(url: str, run: Migrate) -> None:
    engine = create_engine(url)
    try:
        await run(engine)
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("run", "table", "newest"),
    [(migrate, VERSION_TABLE, "0002"), (migrate_workbench, WORKBENCH_VERSION_TABLE, "wb0006")],
    ids=["sessions", "workbench"],
)
async def test_a_newer_schema_revision_is_refused_and_left_alone(
    db_url: str, run: Migrate, table: str, newest: str
) -> None:
    await _migrate(db_url, run)
    assert await _versions(db_url, table) == [newest]
    await _stamp(db_url, table, FUTURE)

    with pytest.raises(AgentError) as info:
        await _migrate(db_url, run)

    error = info.value
    assert error.code is ErrorCode.STORAGE_ERROR
    assert f"schema is at revision '{FUTURE}'" in error.message
    assert f"its newest is '{newest}'" in error.message
    assert "Upgrade YouYou" in error.message
    assert await _versions(db_url, table) == [FUTURE]
