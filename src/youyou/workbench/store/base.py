"""What every part of the workbench store shares: the engine, transactions, row mapping."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Column, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from youyou.adapters.storage.engine import transaction
from youyou.workbench.store.one_trip import OneTrip

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def now() -> datetime:
    return datetime.now(UTC)


def columns_of(table: Table, record: type[DataclassInstance]) -> tuple[Column[Any], ...]:
    """The columns of ``record``'s fields, in field order, so ``record(*row)`` rebuilds it."""
    return tuple(table.c[field.name] for field in fields(record))


class StoreBase:
    """One engine for all workbench tables; the query mixins of ``WorkbenchStore`` extend it."""

    def __init__(self, engine: AsyncEngine, *, owns_engine: bool = True) -> None:
        self._engine = engine
        self._owns_engine = owns_engine
        self._postgresql = engine.dialect.name == "postgresql"
        self._one_trip = OneTrip(engine)

    @property
    def is_postgresql(self) -> bool:
        """Only a PostgreSQL store is shared by several server processes."""
        return self._postgresql

    def _transaction(
        self, action: str, *, write: bool = False
    ) -> AbstractAsyncContextManager[AsyncConnection]:
        return transaction(self._engine, action, write=write)

    def _insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        """The dialect's INSERT, for its ON CONFLICT clauses (both databases have them)."""
        return postgresql.insert(table) if self._postgresql else sqlite.insert(table)
