"""Documents and passages of the knowledge base, in the database everything else lives in.

Tables are prefixed ``knowledge`` and created by ``ensure_schema()`` (like the memory store's),
so the knowledge base shares a database, and an engine, with the session store without touching
its migrations. Every document belongs to one scope: a configured source (shared) or one
workbench user's uploads; passages carry their document's scope so a search filters on it
without a join. Each dialect adds its own full-text index over the passages' language-aware
terms (``memory.text_index``: stemmed English, CJK bigrams).
"""

from __future__ import annotations

import abc
import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from youyou.adapters.knowledge.passages import Passage
from youyou.adapters.memory.text_index import index_text, query_terms
from youyou.adapters.storage.engine import ensure_tables, transaction
from youyou.adapters.storage.tables import UtcDateTime

metadata = MetaData()

_PK = BigInteger().with_variant(Integer, "sqlite")

documents = Table(
    "knowledge_documents",
    metadata,
    Column("pk", _PK, primary_key=True, autoincrement=True),
    Column("id", String(32), nullable=False, unique=True),
    Column("scope", String(255), nullable=False),
    Column("path", String(1024), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("passage_count", Integer, nullable=False),
    Column("indexed_at", UtcDateTime, nullable=False),
    UniqueConstraint("scope", "path", name="knowledge_documents_scope_path_key"),
)

passages = Table(
    "knowledge_passages",
    metadata,
    Column("pk", _PK, primary_key=True, autoincrement=True),
    Column(
        "document_pk",
        _PK,
        ForeignKey("knowledge_documents.pk", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("scope", String(255), nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("headings", Text, nullable=False),  # a JSON array of the heading path
    Column("line_start", Integer, nullable=False),
    Column("line_end", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("search_text", Text, nullable=False),
    Index("knowledge_passages_document_idx", "document_pk"),
)

INSERT_CHUNK = 500  # rows per statement, well under SQLite's bound-parameter limit
# Matches a search may rank (``choose_terms``): a quarter of the memory store's. A search wants
# only a few passages (``top_k`` 5) and rare terms carry the relevance; ranking costs the same
# per row, and passages are longer than memories.
POSTINGS_BUDGET = 500
SCHEMA_LOCK = "youyou.knowledge"


@dataclass(frozen=True, slots=True)
class KnowledgeDocument:
    id: str
    scope: str
    path: str
    content_hash: str
    size_bytes: int
    passage_count: int
    indexed_at: datetime


@dataclass(frozen=True, slots=True)
class PassageHit:
    """One search result: the passage and what its citation needs."""

    scope: str
    path: str
    headings: tuple[str, ...]
    line_start: int
    line_end: int
    text: str


_DOCUMENT_COLUMNS = tuple(documents.c[name] for name in KnowledgeDocument.__slots__)
HIT_COLUMNS = "p.scope, d.path, p.headings, p.line_start, p.line_end, p.content"


def row_to_hit(row: Row[Any]) -> PassageHit:
    headings = tuple(json.loads(row.headings))
    return PassageHit(row.scope, row.path, headings, row.line_start, row.line_end, row.content)


def passage_rows(scope: str, items: Sequence[Passage]) -> list[dict[str, Any]]:
    """The heading path is indexed with the text, so "failover steps" finds the steps; the
    document's key is added once it is known."""
    return [
        {
            "scope": scope,
            "ordinal": ordinal,
            "headings": json.dumps(list(p.headings), ensure_ascii=False),
            "line_start": p.line_start,
            "line_end": p.line_end,
            "content": p.text,
            "search_text": index_text("\n".join([*p.headings, p.text])),
        }
        for ordinal, p in enumerate(items)
    ]


class KnowledgeIndex(abc.ABC):
    """Documents replaced whole (their passages with them), deleted, listed and searched."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def ensure_schema(self) -> None:
        await ensure_tables(
            self.engine,
            metadata,
            self._search_ddl(),
            lock_key=SCHEMA_LOCK,
            action="knowledge schema",
        )

    @abc.abstractmethod
    def _search_ddl(self) -> Sequence[str]:
        """Statements (idempotent) creating the dialect's full-text index."""

    @abc.abstractmethod
    async def _search(
        self, conn: AsyncConnection, scopes: Sequence[str], terms: list[str], top_k: int
    ) -> list[PassageHit]:
        """Ranked passages of ``scopes`` matching any of ``terms`` (already non-empty)."""

    async def search(self, scopes: Sequence[str], query: str, top_k: int) -> list[PassageHit]:
        """Best first; a query without searchable terms ("the", "?") finds nothing."""
        terms = query_terms(query)
        if not scopes or not terms or top_k <= 0:
            return []
        async with transaction(self.engine, "knowledge search") as conn:
            return await self._search(conn, scopes, terms, top_k)

    async def documents(self, scope: str) -> list[KnowledgeDocument]:
        stmt = select(*_DOCUMENT_COLUMNS).where(documents.c.scope == scope)
        async with transaction(self.engine, "knowledge documents") as conn:
            rows = await conn.execute(stmt.order_by(documents.c.path))
        return [KnowledgeDocument(*row) for row in rows]

    async def scopes(self) -> list[str]:
        async with transaction(self.engine, "knowledge scopes") as conn:
            rows = await conn.execute(select(documents.c.scope).distinct())
        return sorted(row.scope for row in rows)

    async def put(
        self, scope: str, path: str, content_hash: str, size_bytes: int, items: Sequence[Passage]
    ) -> KnowledgeDocument:
        """Insert the document, or replace its passages if ``path`` is already in ``scope``."""
        values = {
            "content_hash": content_hash,
            "size_bytes": size_bytes,
            "passage_count": len(items),
            "indexed_at": datetime.now(UTC),
        }
        where = (documents.c.scope == scope, documents.c.path == path)
        # Indexing terms (stemming every word) is the costly part: off the event loop.
        rows = await asyncio.to_thread(passage_rows, scope, items)
        async with transaction(self.engine, "knowledge index", write=True) as conn:
            found = (await conn.execute(select(documents.c.pk).where(*where))).first()
            if found is None:
                values |= {"id": uuid.uuid4().hex, "scope": scope, "path": path}
                result = await conn.execute(insert(documents).values(values))
                pk = result.inserted_primary_key[0]  # type: ignore[index]
            else:
                pk = found.pk
                await conn.execute(delete(passages).where(passages.c.document_pk == pk))
                await conn.execute(update(documents).where(documents.c.pk == pk).values(values))
            for row in rows:
                row["document_pk"] = pk
            for start in range(0, len(rows), INSERT_CHUNK):
                await conn.execute(insert(passages), rows[start : start + INSERT_CHUNK])
            stored = (await conn.execute(select(*_DOCUMENT_COLUMNS).where(*where))).one()
        return KnowledgeDocument(*stored)

    async def delete(
        self, scope: str, *, paths: Sequence[str] = (), ids: Sequence[str] = ()
    ) -> int:
        """Documents of ``scope`` with one of ``paths`` or ``ids``; how many were deleted."""
        if not paths and not ids:
            return 0
        match = documents.c.path.in_(paths) if paths else documents.c.id.in_(ids)
        doomed = select(documents.c.pk).where(documents.c.scope == scope, match)
        async with transaction(self.engine, "knowledge delete", write=True) as conn:
            await conn.execute(delete(passages).where(passages.c.document_pk.in_(doomed)))
            result = await conn.execute(delete(documents).where(documents.c.scope == scope, match))
        return int(result.rowcount)

    async def delete_scope(self, scope: str) -> int:
        """Every document of a scope (a source no longer configured); how many."""
        async with transaction(self.engine, "knowledge delete", write=True) as conn:
            await conn.execute(delete(passages).where(passages.c.scope == scope))
            result = await conn.execute(delete(documents).where(documents.c.scope == scope))
        return int(result.rowcount)
