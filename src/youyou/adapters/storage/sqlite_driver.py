"""Statements run on SQLite through aiosqlite directly: one trip to its thread per statement.

aiosqlite runs every call on its connection's own thread, and SQLAlchemy makes three calls of
each statement (open a cursor, execute, close it). On an append, those trips cost more than
SQLite's own work. A ``DriverStatement`` is the SQL and bind processing SQLAlchemy compiles for
the same statement, run with ``execute_fetchall`` (execute and fetch in one call) on the
connection of the caller's SQLAlchemy transaction, so it commits or rolls back with it. Rows
come back as tuples with SQLAlchemy's result processing applied (text to ``datetime``). Driver
errors are wrapped as SQLAlchemy would wrap them, so they map to storage errors the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.selectable import ReturnsRows


@dataclass(frozen=True, slots=True)
class DriverStatement:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    # Per returned column; empty when no column needs processing.
    results: tuple[Callable[[Any], Any] | None, ...] = ()

    @classmethod
    def compile(cls, statement: ReturnsRows, dialect: Dialect) -> DriverStatement:
        compiled = statement.compile(dialect=dialect)
        names = tuple(compiled.positiontup or ())
        processors = tuple(
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in names
        )
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.exported_columns
        )
        return cls(compiled.string, names, processors, results if any(results) else ())

    def parameters(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(
            values[name] if process is None else process(values[name])
            for name, process in zip(self.names, self.processors, strict=True)
        )

    async def run(self, conn: AsyncConnection, values: Mapping[str, Any]) -> Sequence[Any]:
        """Execute in ``conn``'s transaction; the rows it returns (RETURNING), if any."""
        driver = (await conn.get_raw_connection()).driver_connection
        rows = await driver_execute(driver, self.sql, self.parameters(values))
        if not self.results:
            return list(rows)
        return [
            tuple(v if p is None else p(v) for v, p in zip(row, self.results, strict=True))
            for row in rows
        ]


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


async def driver_execute(driver: Any, sql: str, parameters: tuple[Any, ...] = ()) -> Sequence[Any]:
    """``sql`` on an aiosqlite connection in one trip, its rows fetched; a driver error is
    raised as the ``DBAPIError`` SQLAlchemy would have raised for it."""
    try:
        return list(await driver.execute_fetchall(sql, parameters))
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, parameters, exc, sqlite3.Error) from exc
