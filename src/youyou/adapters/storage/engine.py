"""Database URLs, engines and schema migrations for session storage.

One code path for both backends: SQLite through aiosqlite (embedded default, WAL, foreign keys,
busy timeout, real transactions) and PostgreSQL through asyncpg. Alembic's configuration is
built here in code, so migrations run from an installed wheel without an ``alembic.ini``.
"""

from __future__ import annotations

import ast
import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from contextvars import ContextVar
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Engine, MetaData, String, column, event, select, table, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util import await_

from youyou.adapters.private_files import private_directory, private_file
from youyou.adapters.storage.errors import storage_error
from youyou.adapters.storage.sqlite_driver import driver_execute, run_transaction
from youyou.adapters.storage.tables import VERSION_TABLE
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

if TYPE_CHECKING:
    from alembic.config import Config

SQLITE_BUSY_TIMEOUT_MS = 5_000
SqliteSynchronous = Literal["normal", "full"]
_SQLITE_WRITERS: WeakKeyDictionary[Engine, asyncio.Lock] = WeakKeyDictionary()
_MIGRATIONS = Path(__file__).with_name("migrations")
_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
# Execution option: open the SQLite transaction with BEGIN IMMEDIATE (take the write lock first).
SQLITE_IMMEDIATE = "youyou_sqlite_immediate"
_T = TypeVar("_T")
# A SQLite write still waiting this long waits for another process's write lock (this
# process's own writers take turns before it): ``LOCK_WAIT_NOTICE`` is called then, so a
# terminal can say why nothing happens for up to the busy timeout.
LOCK_WAIT_NOTICE_AFTER_S = 1.0
LOCK_WAIT_NOTICE: ContextVar[Callable[[], object] | None] = ContextVar(
    "youyou_lock_wait_notice", default=None
)


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


def create_engine(url: str, *, sqlite_synchronous: SqliteSynchronous = "normal") -> AsyncEngine:
    """``sqlite_synchronous`` is SQLite's ``PRAGMA synchronous`` in WAL mode: ``normal`` (a
    commit is in the WAL file, flushed to disk at checkpoints) survives a killed process but
    may lose the last commits in a power cut; ``full`` flushes every commit (~5 ms each)."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "postgresql":
        return create_async_engine(parsed, pool_pre_ping=True)
    file = parsed.database
    if file and file != ":memory:" and not file.startswith("file:"):
        directory = Path(file).parent
        try:
            private_file(private_directory(directory) / Path(file).name)
        except OSError as exc:
            raise storage_error(f"creating the database file {file}", exc) from exc
    # Every use ends its transaction (``transaction`` commits or rolls back, and SQLAlchemy rolls
    # back a connection closed inside one), so the pool's extra rollback on return, one more
    # trip to aiosqlite's thread per transaction, is left out.
    engine = create_async_engine(
        parsed,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        pool_reset_on_return=None,
    )
    event.listen(engine.sync_engine, "connect", partial(_sqlite_connect, sqlite_synchronous))
    event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(synchronous: SqliteSynchronous, dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin (DDL included).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    _enter_wal(cursor)
    cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.close()


def _enter_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL`` skips the busy handler: two connections converting a fresh
    database at once can get "database is locked" at once. Retry within the busy timeout."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def _sqlite_begin(connection: Connection) -> None:
    """BEGIN in one trip to aiosqlite's thread (through SQLAlchemy: open a cursor, execute,
    close it; three trips, a third of a durable append)."""
    immediate = connection.get_execution_options().get(SQLITE_IMMEDIATE, False)
    sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"
    await_(driver_execute(connection.connection.driver_connection, sql))


def alembic_config(connection: Connection, script_location: Path = _MIGRATIONS) -> Config:
    """The ``alembic.ini`` equivalent; ``env.py`` migrates through ``connection``."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.attributes["connection"] = connection
    return config


def run_alembic_environment(metadata: MetaData, version_table: str, runner: str) -> None:
    """The body of every chain's ``env.py``: migrate through the connection ``migrate`` put
    in the configuration (never a URL of Alembic's own). ``runner`` names the entry point to
    use instead when the script was started some other way."""
    from alembic import context

    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(f"run these migrations through {runner}")
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=version_table,
        render_as_batch=True,  # SQLite can only ALTER through table copies
    )
    with context.begin_transaction():
        context.run_migrations()


def _writer_turn(engine: AsyncEngine) -> AbstractAsyncContextManager[object]:
    """SQLite has one writer at a time: the writers of one process take turns on an asyncio
    lock before ``BEGIN IMMEDIATE``, so they queue in the event loop instead of polling the
    database lock from pool threads and running into the busy timeout under load. Other
    processes (a ``youyou chat`` next to the server) still meet at the database lock."""
    if engine.dialect.name != "sqlite":
        return nullcontext()
    lock = _SQLITE_WRITERS.get(engine.sync_engine)
    if lock is None:
        lock = _SQLITE_WRITERS[engine.sync_engine] = asyncio.Lock()
    return lock


@asynccontextmanager
async def transaction(
    engine: AsyncEngine, action: str, *, write: bool = False
) -> AsyncIterator[AsyncConnection]:
    """One transaction; database failures become STORAGE_ERROR naming ``action``.

    ``write`` takes SQLite's write lock up front, so concurrent writers queue on the busy
    timeout instead of failing when a read lock cannot be upgraded.
    """
    with _storage_errors(engine, action):
        async with _writer_turn(engine) if write else nullcontext(), AsyncExitStack() as stack:
            with _lock_wait_notice(engine, write):
                conn = await stack.enter_async_context(engine.connect())
                if write:
                    conn = await conn.execution_options(**{SQLITE_IMMEDIATE: True})
                await stack.enter_async_context(conn.begin())
            yield conn


@contextmanager
def _lock_wait_notice(engine: AsyncEngine, write: bool) -> Iterator[None]:
    """Call ``LOCK_WAIT_NOTICE`` if the block (a SQLite write taking its lock) runs long."""
    notice = LOCK_WAIT_NOTICE.get()
    if notice is None or not write or engine.dialect.name != "sqlite":
        yield
        return
    timer = asyncio.get_running_loop().call_later(LOCK_WAIT_NOTICE_AFTER_S, notice)
    try:
        yield
    finally:
        timer.cancel()


class SqliteConnection:
    """One pooled SQLite connection held for one-trip transactions (``run_transaction``).

    Checking a connection out of SQLAlchemy's async pool and back in costs about as much as
    the trip itself (~0.2 ms each on the 2-core machine), and a ledger append or a session load
    is a single trip, so the storage keeps one connection checked out for them. Calls that
    overlap queue on that connection's thread, each a whole transaction. A connection whose
    transaction failed in the driver is invalidated and the next call checks out a fresh one,
    as the pool does with a connection that raised.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._held: tuple[AsyncConnection, Any] | None = None
        self._opening = asyncio.Lock()

    async def read(self, action: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """A read transaction (one snapshot) run whole on the driver's thread: for hot reads
        such as loading a session."""
        return await self._run(action, work, write=False)

    async def write(self, action: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """A write transaction run whole on the driver's thread: for hot writes whose
        statements are known up front, such as a ledger append."""
        async with _writer_turn(self._engine):
            with _lock_wait_notice(self._engine, True):
                return await self._run(action, work, write=True)

    async def close(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held[0].close()

    async def _run(
        self, action: str, work: Callable[[sqlite3.Connection], _T], *, write: bool
    ) -> _T:
        with _storage_errors(self._engine, action):
            conn, driver = await self._connection()
            try:
                return await run_transaction(driver, work, write=write)
            except AgentError:  # a refusal ``work`` raised (rolled back): the connection is fine
                raise
            except Exception:
                await self._invalidate(conn)
                raise

    async def _connection(self) -> tuple[AsyncConnection, Any]:
        async with self._opening:
            if self._held is None:
                conn = await self._engine.connect()
                try:
                    driver = (await conn.get_raw_connection()).driver_connection
                except BaseException:
                    await conn.close()
                    raise
                self._held = (conn, driver)
            return self._held

    async def _invalidate(self, conn: AsyncConnection) -> None:
        if self._held is not None and self._held[0] is conn:
            self._held = None
            await conn.invalidate()
            await conn.close()


@contextmanager
def _storage_errors(engine: AsyncEngine, action: str) -> Iterator[None]:
    try:
        yield
    except (SQLAlchemyError, OSError, TimeoutError) as exc:
        raise storage_error(action, exc, database=engine.url) from exc


async def lock_schema(conn: AsyncConnection, key: str) -> None:
    """Serialize the schema changes of processes that start together (``--workers N``):
    PostgreSQL's DDL races otherwise (``CREATE TABLE IF NOT EXISTS`` in two transactions at
    once fails on a unique index); SQLite's write lock already serializes them."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})


async def ensure_tables(
    engine: AsyncEngine, tables: MetaData, ddl: Sequence[str], *, lock_key: str, action: str
) -> None:
    """Stores without migrations (memory, knowledge): ``CREATE … IF NOT EXISTS`` for
    ``tables`` and the idempotent ``ddl`` after them, serialized across processes."""
    async with transaction(engine, action, write=True) as conn:
        await lock_schema(conn, lock_key)
        await conn.run_sync(tables.create_all)
        for statement in ddl:
            await conn.exec_driver_sql(statement)


async def migrate(
    engine: AsyncEngine,
    revision: str = "head",
    *,
    script_location: Path = _MIGRATIONS,
    version_table: str = VERSION_TABLE,
    lock_key: str = "youyou.sessions",
) -> None:
    """Bring the schema to ``revision`` in one transaction (serialized across processes).

    The revision is read first without any lock, so a database already at ``head`` (every
    start but the first after an upgrade) is opened without SQLite's write lock: a read-only
    command is not blocked by another process's long write. Each Alembic chain in the
    database (own ``script_location`` and ``version_table``) passes its own ``lock_key``, so
    chains do not wait on each other. A database a newer YouYou has migrated past this
    chain's revisions is a STORAGE_ERROR saying so, and is left unchanged.
    """
    if revision == "head":
        async with transaction(engine, "opening the database") as conn:
            if await conn.run_sync(_at_head, script_location, version_table):
                return

    def run(connection: Connection) -> None:
        from alembic import command
        from alembic.script import ScriptDirectory
        from alembic.script.revision import ResolutionError
        from alembic.util import CommandError

        if connection.dialect.name == "postgresql":
            lock = text("SELECT pg_advisory_xact_lock(hashtext(:key))")
            connection.execute(lock, {"key": lock_key})
        config = alembic_config(connection, script_location)
        try:
            command.upgrade(config, revision)
        except CommandError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ResolutionError) or cause.argument == revision:
                raise
            heads = ScriptDirectory.from_config(config).get_heads()
            raise newer_schema_error(cause.argument, heads) from exc

    async with transaction(engine, "database migration", write=True) as conn:
        await conn.run_sync(run)


def _at_head(connection: Connection, script_location: Path, version_table: str) -> bool:
    """Whether the schema is at this chain's heads, read without writing anything (not even
    Alembic's version table); a revision this version does not know is refused here.

    Alembic (~0.1 s to import) is only loaded when the quick answer of ``_known_at_head`` is
    not yes: on a first start, after an upgrade, or to refuse an unknown revision.
    """
    if _known_at_head(connection, script_location, version_table):
        return True
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(connection, script_location))
    context = MigrationContext.configure(connection, opts={"version_table": version_table})
    current = context.get_current_heads()
    heads = script.get_heads()
    known = {item.revision for item in script.walk_revisions()}
    if unknown := [found for found in current if found not in known]:
        raise newer_schema_error(unknown[0], heads)
    return set(current) == set(heads)


def _known_at_head(connection: Connection, script_location: Path, version_table: str) -> bool:
    """The version table holds exactly the heads of the chain's scripts (read as text by
    ``chain_heads``): the common case, answered with one query and no Alembic."""
    heads = chain_heads(script_location)
    if heads is None or not connection.dialect.has_table(connection, version_table):
        return False  # like Alembic, which finds no current revision without the table
    versions = select(column("version_num", String)).select_from(table(version_table))
    return set(connection.execute(versions).scalars()) == heads


@cache
def chain_heads(script_location: Path) -> frozenset[str] | None:
    """The heads of an Alembic chain (revisions no script revises), read from the literal
    ``revision``/``down_revision`` of its ``versions/*.py`` as Alembic finds them, but without
    importing Alembic or the scripts. None when a script does not spell them as literals:
    the caller then asks Alembic."""
    revises: dict[str, tuple[str, ...]] = {}
    for path in sorted((script_location / "versions").glob("*.py")):
        if path.name.startswith((".#", "__init__")):
            continue
        found = _literal_assignments(path, ("revision", "down_revision"))
        revision, down = found.get("revision"), found.get("down_revision", ())
        parents = (down,) if isinstance(down, str) else () if down is None else down
        if (
            not isinstance(revision, str)
            or "down_revision" not in found
            or not isinstance(parents, (tuple, list))
            or not all(isinstance(parent, str) for parent in parents)
        ):
            return None
        revises[revision] = tuple(parents)
    revised = {parent for parents in revises.values() for parent in parents}
    return frozenset(revises.keys() - revised)


def _literal_assignments(path: Path, names: tuple[str, ...]) -> dict[str, object]:
    """Module-level ``name = <literal>`` (annotated or not) of a Python file."""
    try:
        module = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, object] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in names:
            try:
                found[target.id] = ast.literal_eval(value)
            except (ValueError, TypeError):  # not a literal: its value is not known here
                found.pop(target.id, None)
    return found


async def upgrade_database(url: str) -> None:
    """``youyou db upgrade``: apply all pending migrations to the database at ``url``."""
    engine = create_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def newer_schema_error(found: str, known_heads: Sequence[str]) -> AgentError:
    """The database's schema revision is not one of this version's: a newer YouYou wrote it."""
    known = ", ".join(repr(head) for head in known_heads)
    return AgentError(
        ErrorCode.STORAGE_ERROR,
        f"the database schema is at revision {found!r}, which this version of YouYou does not "
        f"know (its newest is {known}); a newer YouYou has upgraded this database. Upgrade "
        "YouYou to use it; the database was not changed",
        source=ErrorSource.STORAGE,
    )


def _invalid_config(message: str) -> AgentError:
    return AgentError(ErrorCode.INVALID_CONFIG, message, source=ErrorSource.STORAGE)
