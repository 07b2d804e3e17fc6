"""PostgreSQL knowledge search: a generated ``tsvector`` behind a GIN index, ``ts_rank``.

The vector is built with the ``simple`` configuration over the passages' language-aware terms
(stemmed English, CJK bigrams), as in the memory store, so Chinese and English queries both go
through the index. Statement triggers keep each term's document frequency in
``knowledge_passages_terms``, and a search keeps the rarest query terms within the postings
budget (``choose_terms``), ranking only the newest ``POSTINGS_BUDGET`` matches when even the
rarest is common: ``ts_rank`` must score every match, and a query of common words ("restart
the service") would otherwise score most of the knowledge base.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.knowledge.index import (
    HIT_COLUMNS,
    POSTINGS_BUDGET,
    KnowledgeIndex,
    PassageHit,
    row_to_hit,
)
from youyou.adapters.memory.postgres import term_statistics_ddl, ts_query
from youyou.adapters.memory.text_index import choose_terms

_DDL = (
    "ALTER TABLE knowledge_passages ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
    "CREATE INDEX IF NOT EXISTS knowledge_passages_search_idx ON knowledge_passages "
    "USING gin (search_vector)",
    *term_statistics_ddl("knowledge_passages"),
)

_DOC_FREQ = text("SELECT term, docs FROM knowledge_passages_terms WHERE term = ANY(:terms)")
_MATCHES = (
    "SELECT pk, document_pk, scope, headings, line_start, line_end, content, search_vector "
    "FROM knowledge_passages "
    "WHERE scope = ANY(:scopes) AND search_vector @@ to_tsquery('simple', :tsquery)"
)
# Materialized: the matches come from the GIN index first, the join to documents after (left
# to itself, the planner may walk every passage of every document and test each vector).
_RANKED = (
    f"WITH p AS MATERIALIZED ({{matches}}) SELECT {HIT_COLUMNS} FROM p "
    "JOIN knowledge_documents AS d ON d.pk = p.document_pk "
    "ORDER BY ts_rank(p.search_vector, to_tsquery('simple', :tsquery)) DESC, p.pk "
    "LIMIT :top_k"
)
_SEARCH = text(_RANKED.format(matches=_MATCHES))
# "pk + 0": the newest matches found through the GIN index, then sorted; ordering by the
# primary key itself lets the planner walk it backwards testing every vector on the way.
_SEARCH_NEWEST = text(_RANKED.format(matches=f"{_MATCHES} ORDER BY pk + 0 DESC LIMIT :window"))


class PostgresKnowledgeIndex(KnowledgeIndex):
    def _search_ddl(self) -> Sequence[str]:
        return _DDL

    async def _search(
        self, conn: AsyncConnection, scopes: Sequence[str], terms: list[str], top_k: int
    ) -> list[PassageHit]:
        doc_freq = {r.term: r.docs for r in await conn.execute(_DOC_FREQ, {"terms": terms})}
        chosen = choose_terms(terms, doc_freq, POSTINGS_BUDGET)
        common = sum(doc_freq.get(t, 0) for t in chosen) > POSTINGS_BUDGET
        params = {
            "tsquery": ts_query(chosen),
            "scopes": list(scopes),
            "window": POSTINGS_BUDGET,
            "top_k": top_k,
        }
        rows = await conn.execute(_SEARCH_NEWEST if common else _SEARCH, params)
        return [row_to_hit(r) for r in rows]
