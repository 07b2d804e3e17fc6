"""Database URLs, engines and schema migrations for session storage.

One code path for both backends: SQLite through aiosqlite (embedded default, WAL, foreign keys,
busy timeout, real transactions) and PostgreSQL through asyncpg. Alembic's configuration is
built here in code, so migrations run from an installed wheel without an ``alembic.ini``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from youyou.adapters.storage.errors import storage_error
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

SQLITE_BUSY_TIMEOUT_MS = 5_000
_MIGRATIONS = Path(__file__).with_name("migrations")
_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
# Execution option: open the SQLite transaction with BEGIN IMMEDIATE (take the write lock first).
SQLITE_IMMEDIATE = "youyou_sqlite_immediate"


def normalize_url(url: str) -> URL:
    """Pin the async driver (``postgresql://`` → asyncpg, ``sqlite://`` → aiosqlite)."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise _invalid_config(f"invalid database URL: {exc}") from exc
    backend = "postgresql" if parsed.get_backend_name() == "postgres" else parsed.get_backend_name()
    if backend not in _DRIVERS:
        raise _invalid_config(f"unsupported database {backend!r}: use sqlite or postgresql")
    return parsed.set(drivername=_DRIVERS[backend])


def create_engine(url: str) -> AsyncEngine:
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "postgresql":
        return create_async_engine(parsed, pool_pre_ping=True)
    file = parsed.database
    if file and file != ":memory:" and not file.startswith("file:"):
        Path(file).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    event.listen(engine.sync_engine, "connect", _sqlite_connect)
    event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin (DDL included).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(SQLITE_IMMEDIATE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def alembic_config(connection: Connection) -> Config:
    """The ``alembic.ini`` equivalent; ``env.py`` migrates through ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def migrate(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` in one transaction (serialized across processes)."""

    def run(connection: Connection) -> None:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext('youyou.sessions'))")
        command.upgrade(alembic_config(connection), revision)

    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(**{SQLITE_IMMEDIATE: True})
            async with conn.begin():
                await conn.run_sync(run)
    except (SQLAlchemyError, OSError, TimeoutError) as exc:
        raise storage_error("database migration", exc) from exc


async def upgrade_database(url: str) -> None:
    """``youyou db upgrade``: apply all pending migrations to the database at ``url``."""
    engine = create_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def _invalid_config(message: str) -> AgentError:
    return AgentError(ErrorCode.INVALID_CONFIG, message, source=ErrorSource.STORAGE)
