"""Database URLs, SQLite connection settings and Alembic migrations of session storage."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import platformdirs
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage import engine as engine_module
from youyou.adapters.storage.engine import (
    alembic_config,
    chain_heads,
    create_engine,
    migrate,
    normalize_url,
    upgrade_database,
)
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import TITLE_TRGM_INDEX, VERSION_TABLE, metadata
from youyou.config import (
    DATABASE_URL_ENV,
    Settings,
    default_database_url,
    load_settings,
)
from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.store import migrate_workbench
from youyou.workbench.store.repository import MIGRATIONS as WORKBENCH_MIGRATIONS

SESSION_MIGRATIONS = Path(engine_module.__file__).with_name("migrations")


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


@pytest.mark.parametrize("location", [SESSION_MIGRATIONS, WORKBENCH_MIGRATIONS])
def test_the_heads_read_from_the_scripts_are_alembics(location: Path) -> None:
    assert chain_heads(location) == frozenset(ScriptDirectory(str(location)).get_heads())


_SCRIPTS = {
    "__init__.py": "",
    "1_base.py": 'revision = "a"\ndown_revision = None\n',
    "2_annotated.py": 'revision: str = "b"\ndown_revision: str | None = "a"\n',
    "3_branch.py": 'revision = "c"\ndown_revision = "a"\ndepends_on = "b"\n',
    "4_merge.py": 'revision = "d"\ndown_revision = ("b", "c")\n',
    "5_other_branch.py": 'revision = "e"\ndown_revision = "a"\n',
    "notes.txt": 'revision = "z"\ndown_revision = "e"\n',
}


def _write_chain(root: Path, scripts: dict[str, str]) -> Path:
    (root / "versions").mkdir(parents=True)
    for name, body in scripts.items():
        (root / "versions" / name).write_text(body)
    return root


def test_branches_merges_and_dependencies_give_alembics_heads(tmp_path: Path) -> None:
    location = _write_chain(tmp_path, _SCRIPTS)
    heads = chain_heads(location)
    assert heads == frozenset({"d", "e"})
    assert heads == frozenset(ScriptDirectory(str(location)).get_heads())


def test_a_revision_that_is_not_a_literal_is_left_to_alembic(tmp_path: Path) -> None:
    computed = {**_SCRIPTS, "6_computed.py": 'revision = "f".upper()\ndown_revision = "d"\n'}
    assert chain_heads(_write_chain(tmp_path / "computed", computed)) is None
    missing = {**_SCRIPTS, "6_no_parent.py": 'revision = "f"\n'}
    assert chain_heads(_write_chain(tmp_path / "missing", missing)) is None


_OPEN_AT_HEAD = """
import asyncio, sys
from youyou.adapters.storage.engine import create_engine, migrate
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.workbench.store import migrate_workbench

async def main(url):
    await (await SqlSessionStorage.open(url)).close()
    engine = create_engine(url)
    try:
        await migrate_workbench(engine)
    finally:
        await engine.dispose()

asyncio.run(main(sys.argv[1]))
print(sorted(name for name in sys.modules if name.split(".")[0] in ("alembic", "mako")))
"""


async def test_a_database_at_head_is_opened_without_importing_alembic(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        await migrate(engine)
        await migrate_workbench(engine)
    finally:
        await engine.dispose()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _OPEN_AT_HEAD, db_url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), timeout=60)
    assert child.returncode == 0
    assert out.decode().strip() == "[]"
