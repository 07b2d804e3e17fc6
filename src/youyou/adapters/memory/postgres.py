"""PostgreSQL memory store: ``tsvector`` + GIN ranked by ``ts_rank``, fused with ``pg_trgm``.

Two ranked lists are merged by reciprocal-rank fusion (scores of the two are not comparable):

- full text: a generated ``tsvector`` (``simple`` configuration) over the language-aware terms
  of ``text_index`` (stemmed English words, CJK bigrams) behind a GIN index;
- trigram similarity: ``word_similarity`` on the raw content behind a ``gin_trgm_ops`` index.
  It catches what word matching misses (typos, partial words, CJK text written differently)
  and is used only for short queries that have search terms, where a similarity to a fragment
  is meaningful.

Without the ``pg_trgm`` extension (no privilege to create it) search uses full text only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from youyou.adapters.memory.sql_base import MEMORY_COLUMNS, SqlMemoryStorage, row_to_memory
from youyou.adapters.memory.text_index import query_terms
from youyou.domain.memory import Memory

logger = logging.getLogger(__name__)

TRIGRAM_MAX_QUERY_CHARS = 24
TRIGRAM_THRESHOLD = 0.3
RRF_K = 60

_TSVECTOR_DDL = (
    "ALTER TABLE memories ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
    "CREATE INDEX IF NOT EXISTS memories_search_vector_idx ON memories USING gin (search_vector)",
)
_TRIGRAM_INDEX = (
    "CREATE INDEX IF NOT EXISTS memories_content_trgm_idx ON memories "
    "USING gin (content gin_trgm_ops)"
)

_COLUMNS = ", ".join(c.name for c in MEMORY_COLUMNS)
_FULL_TEXT = text(
    f"SELECT {_COLUMNS} FROM memories, to_tsquery('simple', :tsquery) AS q "
    "WHERE namespace = :namespace AND search_vector @@ q "
    "ORDER BY ts_rank(search_vector, q) DESC, updated_at DESC LIMIT :top_k"
)
_TRIGRAM = text(
    f"SELECT {_COLUMNS} FROM memories "
    "WHERE namespace = :namespace AND :query <% content "
    "ORDER BY word_similarity(:query, content) DESC, updated_at DESC LIMIT :top_k"
)


def ts_query(terms: Sequence[str]) -> str:
    """An OR ``to_tsquery`` of quoted lexemes, so user text cannot inject query operators."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Memory]], top_k: int) -> list[Memory]:
    """Sum of 1/(k + rank) over the lists; ties keep the order of the first list."""
    scores: dict[str, float] = {}
    by_id: dict[str, Memory] = {}
    for ranking in rankings:
        for rank, memory in enumerate(ranking):
            scores[memory.id] = scores.get(memory.id, 0.0) + 1.0 / (RRF_K + rank + 1)
            by_id.setdefault(memory.id, memory)
    ordered = sorted(by_id, key=lambda i: scores[i], reverse=True)
    return [by_id[i] for i in ordered[:top_k]]


class PostgresMemoryStorage(SqlMemoryStorage):
    @classmethod
    def from_url(cls, url: str) -> PostgresMemoryStorage:
        return cls(create_async_engine(url, pool_pre_ping=True))

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self.trigram_enabled = False

    def _search_ddl(self) -> Sequence[str]:
        return _TSVECTOR_DDL

    async def ensure_schema(self) -> None:
        await super().ensure_schema()
        try:
            async with self.engine.begin() as conn:
                await conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                await conn.exec_driver_sql(_TRIGRAM_INDEX)
        except SQLAlchemyError as exc:
            logger.warning("pg_trgm unavailable, memory search uses full text only: %s", exc)
            return
        self.trigram_enabled = True

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]:
        terms = query_terms(query)
        if top_k <= 0 or not terms:
            return []
        use_trigram = self.trigram_enabled and len(query.strip()) <= TRIGRAM_MAX_QUERY_CHARS
        rankings: list[list[Memory]] = []
        async with self._connect(write=True) as conn:
            params = {"tsquery": ts_query(terms), "namespace": namespace, "top_k": top_k}
            rankings.append(await _fetch(conn, _FULL_TEXT, params))
            if use_trigram:
                await conn.exec_driver_sql(
                    "SELECT set_config('pg_trgm.word_similarity_threshold', "
                    f"'{TRIGRAM_THRESHOLD}', true)"
                )
                params = {"query": query.strip(), "namespace": namespace, "top_k": top_k}
                rankings.append(await _fetch(conn, _TRIGRAM, params))
        return reciprocal_rank_fusion(rankings, top_k)


async def _fetch(conn: AsyncConnection, stmt: Any, params: dict[str, Any]) -> list[Memory]:
    return [row_to_memory(r) for r in await conn.execute(stmt, params)]
