"""PostgreSQL knowledge search: a generated ``tsvector`` behind a GIN index, ``ts_rank``.

The vector is built with the ``simple`` configuration over the passages' language-aware terms
(stemmed English, CJK bigrams), as in the memory store, so Chinese and English queries both go
through the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.knowledge.index import HIT_COLUMNS, KnowledgeIndex, PassageHit, row_to_hit
from youyou.adapters.memory.postgres import ts_query

_DDL = (
    "ALTER TABLE knowledge_passages ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
    "CREATE INDEX IF NOT EXISTS knowledge_passages_search_idx ON knowledge_passages "
    "USING gin (search_vector)",
)

_SEARCH = text(
    f"SELECT {HIT_COLUMNS} FROM knowledge_passages AS p "
    "JOIN knowledge_documents AS d ON d.pk = p.document_pk, "
    "to_tsquery('simple', :tsquery) AS q "
    "WHERE p.scope = ANY(:scopes) AND p.search_vector @@ q "
    "ORDER BY ts_rank(p.search_vector, q) DESC, p.pk LIMIT :top_k"
)


class PostgresKnowledgeIndex(KnowledgeIndex):
    def _search_ddl(self) -> Sequence[str]:
        return _DDL

    async def _search(
        self, conn: AsyncConnection, scopes: Sequence[str], terms: list[str], top_k: int
    ) -> list[PassageHit]:
        params = {"tsquery": ts_query(terms), "scopes": list(scopes), "top_k": top_k}
        return [row_to_hit(r) for r in await conn.execute(_SEARCH, params)]
