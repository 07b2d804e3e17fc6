"""Shared table and CRUD of the SQL memory stores; each dialect adds its own full-text search.

Tables are prefixed ``memories`` and created by ``ensure_schema()`` so the memory store can
share a database with the session store without touching its migrations.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Self

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    case,
    delete,
    select,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import Executable

from youyou.adapters.memory.text_index import index_text
from youyou.adapters.storage.engine import create_engine, ensure_tables, transaction
from youyou.adapters.storage.tables import UtcDateTime, upsert_statement
from youyou.domain.memory import Memory

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    Column(
        "pk", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("namespace", String(255), nullable=False),
    Column("id", String(255), nullable=False),
    Column("content", Text, nullable=False),
    Column("search_text", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("source_session_id", String(255)),
    Column("source_seq_start", BigInteger),
    Column("source_seq_end", BigInteger),
    UniqueConstraint("namespace", "id", name="memories_namespace_id_key"),
    Index("memories_namespace_updated_idx", "namespace", "updated_at"),
)

SCHEMA_LOCK = "youyou.memory"  # one process at a time creates the memory tables
UPSERT_CHUNK = 500  # rows per statement, well under SQLite's bound-parameter limit

MEMORY_COLUMNS = tuple(c for c in memories.c if c.name not in ("pk", "search_text"))


def row_to_memory(row: Row[Any]) -> Memory:
    m = row._mapping
    return Memory(**{c.name: m[c.name] for c in MEMORY_COLUMNS})


def memory_row(memory: Memory) -> dict[str, Any]:
    return {**memory.model_dump(), "search_text": index_text(memory.content)}


class SqlMemoryStorage(abc.ABC):
    """``MemoryStorage`` CRUD on the ``memories`` table; subclasses implement ``search``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @classmethod
    def from_url(cls, url: str) -> Self:
        """An engine set up like the session storage's (async driver, SQLite pragmas)."""
        return cls(create_engine(url))

    def _connect(self, *, write: bool = False) -> AbstractAsyncContextManager[AsyncConnection]:
        """One transaction whose database errors surface as STORAGE_ERROR; a write takes
        SQLite's write lock first (``BEGIN IMMEDIATE``), so concurrent writers queue instead
        of failing with "database is locked" when a read lock cannot be upgraded."""
        return transaction(self.engine, "memory storage", write=write)

    async def ensure_schema(self) -> None:
        await ensure_tables(
            self.engine,
            metadata,
            self._search_ddl(),
            lock_key=SCHEMA_LOCK,
            action="preparing the memory tables",
        )

    @abc.abstractmethod
    def _search_ddl(self) -> Sequence[str]:
        """Statements (idempotent) creating the dialect's full-text index."""

    @abc.abstractmethod
    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]: ...

    async def list_recent(self, namespace: str, limit: int) -> Sequence[Memory]:
        stmt = (
            select(*MEMORY_COLUMNS)
            .where(memories.c.namespace == namespace)
            .order_by(memories.c.updated_at.desc(), memories.c.pk.desc())
            .limit(max(limit, 0))
        )
        async with self._connect() as conn:
            return [row_to_memory(r) for r in await conn.execute(stmt)]

    async def list_all(self, namespace: str) -> Sequence[Memory]:
        stmt = select(*MEMORY_COLUMNS).where(memories.c.namespace == namespace)
        async with self._connect() as conn:
            return [row_to_memory(r) for r in await conn.execute(stmt)]

    async def upsert(self, memory: Memory) -> None:
        await self.upsert_many([memory])

    async def upsert_many(self, batch: Sequence[Memory]) -> None:
        """Bulk form of ``upsert`` (imports, benchmarks): multi-row statements, one transaction.

        A later item with the same id wins, as if the items were upserted one by one.
        """
        latest = list({(m.namespace, m.id): m for m in batch}.values())
        async with self._connect(write=True) as conn:
            for start in range(0, len(latest), UPSERT_CHUNK):
                chunk = latest[start : start + UPSERT_CHUNK]
                await conn.execute(self._upsert([memory_row(m) for m in chunk]))

    def _upsert(self, rows: list[dict[str, Any]]) -> Executable:
        """Same content: only ``updated_at`` moves; new content: content, provenance, time."""
        stmt = upsert_statement(self.engine.dialect.name, memories).values(rows)
        new = stmt.excluded
        same = memories.c.content == new.content
        keep_if_same = {
            name: case((same, memories.c[name]), else_=new[name])
            for name in (
                "content",
                "search_text",
                "source_session_id",
                "source_seq_start",
                "source_seq_end",
            )
        }
        return stmt.on_conflict_do_update(
            index_elements=[memories.c.namespace, memories.c.id],
            set_={**keep_if_same, "updated_at": new.updated_at},
        )

    async def delete(self, namespace: str, id: str) -> None:
        stmt = delete(memories).where(memories.c.namespace == namespace, memories.c.id == id)
        async with self._connect(write=True) as conn:
            await conn.execute(stmt)

    async def close(self) -> None:
        await self.engine.dispose()
