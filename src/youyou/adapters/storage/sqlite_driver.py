"""Statements run on SQLite through aiosqlite directly: one trip to its thread per statement,
or per whole transaction (``run_transaction``).

aiosqlite runs every call on its connection's own thread, and SQLAlchemy makes three calls of
each statement (open a cursor, execute, close it). On an append, those trips cost more than
SQLite's own work. A ``DriverStatement`` is the SQL and bind processing SQLAlchemy compiles for
the same statement, executed and fetched in one call on the connection's thread (through
aiosqlite's ``Connection._execute``, as its own ``execute_fetchall`` does): ``run`` inside the
caller's SQLAlchemy transaction, so it commits or rolls back with it, ``run_on`` inside a
``run_transaction``. Rows come back as tuples with SQLAlchemy's result processing applied
(text to ``datetime``). Driver errors are wrapped as SQLAlchemy would wrap them, so they map to
storage errors the same way.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from sqlalchemy import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.selectable import ReturnsRows

_GIVEN = object()  # a parameter the caller gives (a ``bindparam`` without a value)


@dataclass(frozen=True, slots=True)
class DriverStatement:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    # Per returned column; empty when no column needs processing.
    results: tuple[Callable[[Any], Any] | None, ...] = ()
    # Per parameter: the value the statement itself holds (a literal such as ``coalesce(x,
    # 0)``'s 0), or ``_GIVEN``; empty when every parameter is given.
    fixed: tuple[Any, ...] = ()

    @classmethod
    def compile(cls, statement: ReturnsRows, dialect: Dialect) -> DriverStatement:
        compiled = statement.compile(dialect=dialect)
        names = tuple(compiled.positiontup or ())
        binds = [compiled.binds[name] for name in names]
        processors = tuple(
            bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds
        )
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.exported_columns
        )
        fixed = tuple(_GIVEN if bind.required else bind.effective_value for bind in binds)
        return cls(
            compiled.string,
            names,
            processors,
            results if any(results) else (),
            fixed if any(value is not _GIVEN for value in fixed) else (),
        )

    def parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.fixed:
            values = {
                name: values[name] if value is _GIVEN else value
                for name, value in zip(self.names, self.fixed, strict=True)
            }
        return tuple(
            values[name] if process is None else process(values[name])
            for name, process in zip(self.names, self.processors, strict=True)
        )

    async def run(self, conn: AsyncConnection, values: Mapping[str, Any]) -> Sequence[Any]:
        """Execute in ``conn``'s transaction; the rows it returns (RETURNING), if any."""
        driver = (await conn.get_raw_connection()).driver_connection
        return self._processed(await driver_execute(driver, self.sql, self.parameters(values)))

    def run_on(self, connection: sqlite3.Connection, values: Mapping[str, Any]) -> Sequence[Any]:
        """Execute on the driver's own thread, inside a ``run_transaction``."""
        return self._processed(_execute_on(connection, self.sql, self.parameters(values)))

    def _processed(self, rows: Sequence[Any]) -> Sequence[Any]:
        if not self.results:  # already a fresh list from the driver
            return rows
        return [
            tuple(v if p is None else p(v) for v, p in zip(row, self.results, strict=True))
            for row in rows
        ]


_T = TypeVar("_T")
_COMPILED: dict[tuple[Any, ...], DriverStatement] = {}


def compiled_statement(statement: ReturnsRows, dialect: Dialect) -> DriverStatement:
    """``statement`` compiled once per process for each kind of dialect (class, paramstyle,
    SQLite version), not once per engine: each storage opened (every CLI command, every
    reopen) otherwise paid SQLAlchemy's compiler again, ~1 ms a statement on this machine."""
    key = (statement, type(dialect), dialect.paramstyle, dialect.server_version_info)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = DriverStatement.compile(statement, dialect)
    return found


async def run_transaction(
    driver: Any, work: Callable[[sqlite3.Connection], _T], *, write: bool
) -> _T:
    """``BEGIN`` (``BEGIN IMMEDIATE`` to ``write``), ``work`` and ``COMMIT`` (``ROLLBACK`` if
    anything fails) in one trip to the aiosqlite connection's thread instead of one trip per
    statement: the trips, not SQLite, were most of a durable append (0.47 ms for four against
    0.15 ms for one on the 2-core machine) and most of loading a session's head. aiosqlite
    runs its own ``execute_fetchall`` the same way, through ``Connection._execute``;
    tests/test_storage_sqlite_driver.py holds it to that contract. A read transaction sees one
    snapshot of the database (WAL) for all of ``work``'s statements.

    The transaction ends on the driver's thread whatever happens to the awaiting task, so a
    cancelled caller never leaves the connection inside a transaction (as a cancel between
    two trips could). A cancel waits for that end before it is raised: the caller keeps its
    turn as the process's writer while SQLite's write lock is still held, and, like any
    commit cancelled at the last moment, the write may be durable.
    """
    begin = "BEGIN IMMEDIATE" if write else "BEGIN"
    # The result comes back in ``box``, emptied here: aiosqlite's thread keeps its last call
    # and what it returned alive until its next call, which for a held connection could pin a
    # whole session's rows.
    box: list[_T] = []
    trip = asyncio.ensure_future(driver._execute(_in_transaction, driver._conn, begin, work, box))
    try:
        await asyncio.shield(trip)
    except asyncio.CancelledError:
        await asyncio.wait([trip])
        box.clear()
        raise
    return box.pop()


def _in_transaction(
    connection: sqlite3.Connection,
    begin: str,
    work: Callable[[sqlite3.Connection], _T],
    box: list[_T],
) -> None:
    _execute_on(connection, begin)
    try:
        box.append(work(connection))
        _execute_on(connection, "COMMIT")
    except BaseException:
        box.clear()
        if connection.in_transaction:
            connection.rollback()
        raise


def _execute_on(
    connection: sqlite3.Connection, sql: str, parameters: tuple[Any, ...] = ()
) -> list[Any]:
    """On the driver's thread; a driver error is raised as the ``DBAPIError`` SQLAlchemy
    would have raised for it."""
    try:
        return connection.execute(sql, parameters).fetchall()
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, parameters, exc, sqlite3.Error) from exc


async def driver_execute(driver: Any, sql: str, parameters: tuple[Any, ...] = ()) -> Sequence[Any]:
    """``sql`` on an aiosqlite connection in one trip, its rows fetched (what aiosqlite's
    ``execute_fetchall`` does, with ``_execute_on``'s error wrapping)."""
    return cast(list[Any], await driver._execute(_execute_on, driver._conn, sql, parameters))
