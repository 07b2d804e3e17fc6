"""Database URLs, SQLite connection settings and Alembic migrations of session storage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import platformdirs
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.settings import (
    DATABASE_URL_ENV,
    Settings,
    default_database_url,
    load_settings,
)
from youyou.adapters.storage.engine import (
    alembic_config,
    create_engine,
    migrate,
    normalize_url,
    upgrade_database,
)
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import TITLE_TRGM_INDEX, VERSION_TABLE, metadata
from youyou.domain.errors import AgentError, ErrorCode


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://u@h/db", "postgresql+asyncpg"),
        ("postgres://u@h/db", "postgresql+asyncpg"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg"),
        ("sqlite:///x.db", "sqlite+aiosqlite"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
    ],
)
def test_urls_get_the_async_driver(given: str, driver: str) -> None:
    assert normalize_url(given).drivername == driver


@pytest.mark.parametrize("url", ["mysql://u@h/db", "not a url"])
def test_unsupported_urls_are_invalid_config(url: str) -> None:
    with pytest.raises(AgentError) as exc:
        normalize_url(url)
    assert exc.value.code is ErrorCode.INVALID_CONFIG


async def test_environment_wins_over_configuration_and_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda name: str(tmp_path / "data" / name))
    config = tmp_path / "youyou.toml"
    config.write_text('[database]\nurl = "sqlite:///a.db"\n')

    def url(path: Path | None, environ: dict[str, str]) -> str:
        return load_settings(path, environ=environ).database.url

    assert url(config, {DATABASE_URL_ENV: "sqlite:///b.db"}) == "sqlite:///b.db"
    assert url(config, {}) == "sqlite:///a.db"
    default = url(None, {})
    assert default == default_database_url()
    assert default == f"sqlite+aiosqlite:///{tmp_path / 'data' / 'youyou' / 'youyou.db'}"
    storage = await SqlSessionStorage.open(default)  # the data directory is created on open
    await storage.close()
    assert (tmp_path / "data" / "youyou").is_dir()


async def sqlite_pragmas(engine: AsyncEngine, *names: str) -> list[Any]:
    try:
        async with engine.connect() as conn:
            return [(await conn.exec_driver_sql(f"PRAGMA {name}")).scalar_one() for name in names]
    finally:
        await engine.dispose()


async def test_sqlite_connections_are_configured(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'y.db'}")
    pragmas = await sqlite_pragmas(
        engine, "journal_mode", "foreign_keys", "busy_timeout", "synchronous"
    )
    assert pragmas == ["wal", 1, 5000, 1]  # synchronous=NORMAL by default


async def test_connections_converting_a_fresh_database_to_wal_at_once_all_succeed(
    tmp_path: Path,
) -> None:
    # SQLite answers a journal-mode change that meets another one "database is locked" at once,
    # without its busy handler: in ~2 % of such rounds before connections retried it.
    for round_ in range(150):
        engines = [create_engine(f"sqlite:///{tmp_path / f'{round_}.db'}") for _ in range(4)]
        modes = await asyncio.gather(*(sqlite_pragmas(e, "journal_mode") for e in engines))
        assert modes == [["wal"]] * 4


async def test_full_flushes_are_a_setting(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"database": {"url": f"sqlite:///{tmp_path / 'y.db'}", "sqlite_synchronous": "full"}}
    )
    storage = await SqlSessionStorage.open(
        settings.database.url, sqlite_synchronous=settings.database.sqlite_synchronous
    )
    assert await sqlite_pragmas(storage.engine, "synchronous") == [2]  # FULL
    await storage.close()


def _schema_state(conn: Connection) -> dict[str, Any]:
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    diff = [
        d
        for d in compare_metadata(context, metadata)
        if not (d[0] == "remove_index" and d[1].name == TITLE_TRGM_INDEX)
    ]
    return {
        "revision": context.get_current_revision(),
        "diff": diff,
        "indexes": {i["name"] for i in inspect(conn).get_indexes("sessions")},
    }


async def _state_of(url: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_schema_state)
    finally:
        await engine.dispose()


async def test_upgrade_builds_the_declared_schema_and_is_idempotent(db_url: str) -> None:
    await upgrade_database(db_url)
    await upgrade_database(db_url)
    state = await _state_of(db_url)
    assert state["revision"] == "0002"
    assert state["diff"] == []
    assert "ix_sessions_recent" in state["indexes"]
    assert (TITLE_TRGM_INDEX in state["indexes"]) == db_url.startswith("postgresql")


async def test_downgrade_to_base_removes_the_schema(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "base"))
        async with engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
        await migrate(engine)
        async with engine.connect() as conn:
            count = (await conn.execute(text("SELECT count(*) FROM sessions"))).scalar_one()
    finally:
        await engine.dispose()
    assert tables == {VERSION_TABLE}
    assert count == 0


async def test_concurrent_upgrades_of_a_fresh_database_both_succeed(db_url: str) -> None:
    await asyncio.gather(*(upgrade_database(db_url) for _ in range(3)))
    state = await _state_of(db_url)
    assert state["revision"] == "0002" and state["diff"] == []
