"""Hot transactions of the workbench (a send's reads, a turn's end) in one trip to the
database's driver.

On SQLite every statement SQLAlchemy runs is several calls into aiosqlite's thread (open a
cursor, execute, fetch, close) besides the transaction's own, and those calls cost far more
than SQLite's work: such a transaction is run whole on the driver's thread instead, as the
kernel runs its ledger appends (``sqlite_driver.py``), over one connection the store holds.
On PostgreSQL the same statements run in a SQLAlchemy transaction.

The work is a plain function of ``Run``: it runs statements, in order, and returns what it
read. Its statements are module constants with ``bindparam`` values, compiled once per
process and dialect (``compiled_statement`` caches them by identity: a statement built per
call would be compiled, and kept, every time).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import Executable
from sqlalchemy.sql.selectable import ReturnsRows

from youyou.adapters.storage.engine import SqliteConnection, transaction
from youyou.adapters.storage.sqlite_driver import compiled_statement

_T = TypeVar("_T")


class Run(Protocol):
    def __call__(
        self, statement: ReturnsRows, values: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> Sequence[Any]:
        """Execute ``statement`` with ``values`` (a list: once per item); the rows it returns
        as tuples (none for a list)."""
        ...


class OneTrip:
    """Runs a store's hot transactions; ``close`` gives its held SQLite connection back."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._sqlite = SqliteConnection(engine) if engine.dialect.name == "sqlite" else None

    async def run(self, action: str, work: Callable[[Run], _T], *, write: bool = False) -> _T:
        """``work`` in one transaction (``write``: SQLite's write lock taken up front);
        failures are STORAGE_ERROR naming ``action``, as ``transaction``'s are."""
        if self._sqlite is not None:
            on_driver = partial(_on_driver, self._engine, work)
            if write:
                return await self._sqlite.write(action, on_driver)
            return await self._sqlite.read(action, on_driver)
        async with transaction(self._engine, action, write=write) as conn:
            return await conn.run_sync(partial(_on_connection, work))

    async def close(self) -> None:
        if self._sqlite is not None:
            await self._sqlite.close()


def _on_driver(
    engine: AsyncEngine, work: Callable[[Run], _T], connection: sqlite3.Connection
) -> _T:
    dialect = engine.dialect

    def run(
        statement: ReturnsRows, values: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> Sequence[Any]:
        compiled = compiled_statement(statement, dialect)
        if isinstance(values, Mapping):
            return compiled.run_on(connection, values)
        for each in values:
            compiled.run_on(connection, each)
        return ()

    return work(run)


def _on_connection(work: Callable[[Run], _T], connection: Connection) -> _T:
    def run(
        statement: ReturnsRows, values: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> Sequence[Any]:
        executable = cast(Executable, statement)  # every ``ReturnsRows`` run here is one
        if not isinstance(values, Mapping):
            if values:
                connection.execute(executable, list(values))
            return ()
        result = connection.execute(executable, values)
        return [tuple(row) for row in result] if result.returns_rows else ()

    return work(run)
