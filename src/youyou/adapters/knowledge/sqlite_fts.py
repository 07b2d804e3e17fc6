"""SQLite knowledge search: FTS5 ranked by BM25, the memory store's design on passages.

A contentless FTS5 table over ``knowledge_passages.search_text`` kept in sync by triggers; the
rarest query terms are chosen within the postings budget from the ``fts5vocab`` statistics
(``choose_terms``), so a query full of common words ("restart the service") stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.knowledge.index import (
    HIT_COLUMNS,
    POSTINGS_BUDGET,
    KnowledgeIndex,
    PassageHit,
    row_to_hit,
)
from youyou.adapters.memory.sqlite_fts import fts_phrase
from youyou.adapters.memory.text_index import choose_terms

_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5("
    "search_text, content='', tokenize='unicode61 remove_diacritics 0')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts_vocab USING fts5vocab(knowledge_fts, 'row')",
    "CREATE TRIGGER IF NOT EXISTS knowledge_fts_ai AFTER INSERT ON knowledge_passages BEGIN "
    "INSERT INTO knowledge_fts(rowid, search_text) VALUES (new.pk, new.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS knowledge_fts_ad AFTER DELETE ON knowledge_passages BEGIN "
    "INSERT INTO knowledge_fts(knowledge_fts, rowid, search_text) "
    "VALUES ('delete', old.pk, old.search_text); END",
)

_DOC_FREQ = text("SELECT term, doc FROM knowledge_fts_vocab WHERE term IN :terms").bindparams(
    bindparam("terms", expanding=True)
)
# CROSS JOIN keeps FTS5 as the outer loop; only the window gets a BM25 score.
_SEARCH = text(
    f"SELECT {HIT_COLUMNS} FROM (SELECT p.pk, bm25(knowledge_fts) AS score "
    "FROM knowledge_fts CROSS JOIN knowledge_passages AS p ON p.pk = knowledge_fts.rowid "
    "WHERE knowledge_fts MATCH :match AND p.scope IN :scopes "
    "ORDER BY knowledge_fts.rowid DESC LIMIT :window) AS hit "
    "JOIN knowledge_passages AS p ON p.pk = hit.pk "
    "JOIN knowledge_documents AS d ON d.pk = p.document_pk "
    "ORDER BY hit.score, p.pk LIMIT :top_k"
).bindparams(bindparam("scopes", expanding=True))


class SqliteKnowledgeIndex(KnowledgeIndex):
    def _search_ddl(self) -> Sequence[str]:
        return _DDL

    async def _search(
        self, conn: AsyncConnection, scopes: Sequence[str], terms: list[str], top_k: int
    ) -> list[PassageHit]:
        doc_freq = {r.term: r.doc for r in await conn.execute(_DOC_FREQ, {"terms": terms})}
        chosen = choose_terms(terms, doc_freq, POSTINGS_BUDGET)
        params = {
            "match": " OR ".join(fts_phrase(t) for t in chosen),
            "scopes": list(scopes),
            "window": POSTINGS_BUDGET,
            "top_k": top_k,
        }
        return [row_to_hit(r) for r in await conn.execute(_SEARCH, params)]
