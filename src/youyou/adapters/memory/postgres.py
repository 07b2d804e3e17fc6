"""PostgreSQL memory store: ``tsvector`` + GIN ranked by ``ts_rank``, fused with ``pg_trgm``.

Two ranked lists, merged by reciprocal-rank fusion (their scores are not comparable):

- full text: a generated ``tsvector`` (``simple`` configuration) over the language-aware terms
  of ``text_index`` (stemmed English words, CJK bigrams) behind a GIN index, ranked by
  ``ts_rank``. It answers Chinese as well as English queries. Statement triggers keep the
  document frequency of every term in ``memories_terms``, so a search leaves out its most common
  terms exactly like the SQLite store (``choose_terms``, newest ``POSTINGS_BUDGET`` matches
  ranked when even the rarest term is common);
- trigram similarity: ``word_similarity`` on the raw content (``gin_trgm_ops`` index). It
  catches what term matching misses (typos, partial words, CJK written with other characters
  around it). It runs only as a fallback — a short query for which full text found fewer than
  ``top_k`` memories — because evaluating trigram similarity over a large namespace costs far
  more than the full-text leg.

Without the ``pg_trgm`` extension (no privilege to create it) search uses full text only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from youyou.adapters.memory.sql_base import (
    MEMORY_COLUMNS,
    SCHEMA_LOCK,
    SqlMemoryStorage,
    row_to_memory,
)
from youyou.adapters.memory.text_index import POSTINGS_BUDGET, choose_terms, query_terms
from youyou.adapters.storage.engine import lock_schema
from youyou.domain.memory import Memory

logger = logging.getLogger(__name__)

TRIGRAM_MAX_QUERY_CHARS = 24
TRIGRAM_THRESHOLD = 0.3
RRF_K = 60

_TERMS_OF = (
    "SELECT term, {n} AS n FROM {rows}, unnest(tsvector_to_array({rows}.search_vector)) term"
)
_NEW_TERMS = _TERMS_OF.format(n=1, rows="new_rows")
_OLD_TERMS = _TERMS_OF.format(n=-1, rows="old_rows")


def term_statistics_ddl(table: str) -> tuple[str, ...]:
    """``<table>_terms`` (term, docs) kept by statement triggers on ``table``'s
    ``search_vector``: one aggregated change per write, locked in term order."""
    terms, sync = f"{table}_terms", f"{table}_terms_sync()"
    add = (
        f"INSERT INTO {terms} AS t (term, docs) SELECT term, sum(n) FROM ({{rows}}) AS delta "
        "GROUP BY term HAVING sum(n) <> 0 ORDER BY term "
        "ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs;"
    )
    function = f"""
CREATE OR REPLACE FUNCTION {sync} RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN {add.format(rows=_NEW_TERMS)}
  ELSIF TG_OP = 'DELETE' THEN {add.format(rows=_OLD_TERMS)}
  ELSE {add.format(rows=f"{_NEW_TERMS} UNION ALL {_OLD_TERMS}")}
  END IF;
  RETURN NULL;
END $$"""
    return (
        f"CREATE TABLE IF NOT EXISTS {terms} (term text PRIMARY KEY, docs bigint NOT NULL)",
        function,
        f"CREATE OR REPLACE TRIGGER {terms}_ins AFTER INSERT ON {table} "
        f"REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {sync}",
        f"CREATE OR REPLACE TRIGGER {terms}_upd AFTER UPDATE ON {table} "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {sync}",
        f"CREATE OR REPLACE TRIGGER {terms}_del AFTER DELETE ON {table} "
        f"REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {sync}",
    )


_SEARCH_DDL = (
    "ALTER TABLE memories ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
    "CREATE INDEX IF NOT EXISTS memories_search_vector_idx ON memories USING gin (search_vector)",
    *term_statistics_ddl("memories"),
)
_TRIGRAM_INDEX = (
    "CREATE INDEX IF NOT EXISTS memories_content_trgm_idx ON memories "
    "USING gin (content gin_trgm_ops)"
)

_COLUMNS = ", ".join(c.name for c in MEMORY_COLUMNS)
_DOC_FREQ = text("SELECT term, docs FROM memories_terms WHERE term = ANY(:terms)")
_FULL_TEXT = text(
    f"SELECT {_COLUMNS} FROM memories, to_tsquery('simple', :tsquery) AS q "
    "WHERE namespace = :namespace AND search_vector @@ q "
    "ORDER BY ts_rank(search_vector, q) DESC, updated_at DESC LIMIT :top_k"
)
# A query of common terms only: rank the newest ``window`` matches (dense matches make a
# backward walk of the primary key cheap); ts_rank is computed after the cut.
_FULL_TEXT_NEWEST = text(
    f"SELECT {_COLUMNS} FROM (SELECT {_COLUMNS}, search_vector FROM memories "
    "WHERE namespace = :namespace AND search_vector @@ to_tsquery('simple', :tsquery) "
    "ORDER BY pk DESC LIMIT :window) AS c "
    "ORDER BY ts_rank(search_vector, to_tsquery('simple', :tsquery)) DESC, updated_at DESC "
    "LIMIT :top_k"
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
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__(engine)
        self.trigram_enabled = False

    def _search_ddl(self) -> Sequence[str]:
        return _SEARCH_DDL

    async def ensure_schema(self) -> None:
        await super().ensure_schema()
        try:
            async with self.engine.begin() as conn:
                await lock_schema(conn, SCHEMA_LOCK)
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
        async with self._connect(write=True) as conn:
            doc_freq = {r.term: r.docs for r in await conn.execute(_DOC_FREQ, {"terms": terms})}
            chosen = choose_terms(terms, doc_freq, POSTINGS_BUDGET)
            params = {
                "tsquery": ts_query(chosen),
                "namespace": namespace,
                "window": POSTINGS_BUDGET,
                "top_k": top_k,
            }
            common = sum(doc_freq.get(t, 0) for t in chosen) > POSTINGS_BUDGET
            found = await _fetch(conn, _FULL_TEXT_NEWEST if common else _FULL_TEXT, params)
            if len(found) >= top_k or not use_trigram:
                return found
            await conn.exec_driver_sql(
                "SELECT set_config('pg_trgm.word_similarity_threshold', "
                f"'{TRIGRAM_THRESHOLD}', true)"
            )
            params = {"query": query.strip(), "namespace": namespace, "top_k": top_k}
            similar = await _fetch(conn, _TRIGRAM, params)
        return reciprocal_rank_fusion([found, similar], top_k)


async def _fetch(conn: AsyncConnection, stmt: Any, params: dict[str, Any]) -> list[Memory]:
    return [row_to_memory(r) for r in await conn.execute(stmt, params)]
