"""SQLite memory store: FTS5 ranked by BM25 over language-aware terms.

- Terms come from ``text_index`` (stemmed English words, CJK bigrams) and are indexed by a plain
  ``unicode61`` tokenizer. The ``trigram`` tokenizer was not used: it cannot match the many
  two-character Chinese words through the index (they would need a full-scan LIKE).
- The FTS5 table is contentless (the text lives in ``memories``) and kept in sync by triggers;
  the namespace filter is a join on the primary key.
- BM25 must score every matching row, so a query term found in very many memories ("coffee" in
  a third of them) would dominate search time while adding almost nothing to the ranking (its
  IDF is near zero). ``choose_terms`` keeps the rarest terms within a postings budget, read
  from the ``fts5vocab`` statistics. When even the rarest term is common, only its newest
  ``POSTINGS_BUDGET`` matches are ranked. Collections smaller than the budget are always ranked
  exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, text

from youyou.adapters.memory.sql_base import MEMORY_COLUMNS, SqlMemoryStorage, row_to_memory
from youyou.adapters.memory.text_index import POSTINGS_BUDGET, choose_terms, query_terms
from youyou.domain.memory import Memory

_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5("
    "search_text, content='', tokenize='unicode61 remove_diacritics 0')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts_vocab USING fts5vocab(memories_fts, 'row')",
    "CREATE TRIGGER IF NOT EXISTS memories_fts_ai AFTER INSERT ON memories BEGIN "
    "INSERT INTO memories_fts(rowid, search_text) VALUES (new.pk, new.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS memories_fts_ad AFTER DELETE ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, search_text) "
    "VALUES ('delete', old.pk, old.search_text); END",
    "CREATE TRIGGER IF NOT EXISTS memories_fts_au AFTER UPDATE OF search_text ON memories BEGIN "
    "INSERT INTO memories_fts(memories_fts, rowid, search_text) "
    "VALUES ('delete', old.pk, old.search_text); "
    "INSERT INTO memories_fts(rowid, search_text) VALUES (new.pk, new.search_text); END",
)

_DOC_FREQ = text("SELECT term, doc FROM memories_fts_vocab WHERE term IN :terms").bindparams(
    bindparam("terms", expanding=True)
)
_COLUMNS = ", ".join(f"m.{c.name}" for c in MEMORY_COLUMNS)
_COLUMN_NAMES = ", ".join(c.name for c in MEMORY_COLUMNS)
# CROSS JOIN keeps FTS5 as the outer loop, read newest first; only the window gets a BM25 score.
_SEARCH = text(
    f"SELECT {_COLUMN_NAMES} FROM (SELECT {_COLUMNS}, bm25(memories_fts) AS score "
    "FROM memories_fts CROSS JOIN memories AS m ON m.pk = memories_fts.rowid "
    "WHERE memories_fts MATCH :match AND m.namespace = :namespace "
    "ORDER BY memories_fts.rowid DESC LIMIT :window) ORDER BY score LIMIT :top_k"
)


def fts_phrase(term: str) -> str:
    """A quoted FTS5 string: user text never reaches the query syntax."""
    return '"' + term.replace('"', '""') + '"'


class SqliteMemoryStorage(SqlMemoryStorage):
    """``search`` ranks by BM25 (FTS5 ``rank``) within the namespace."""

    def _search_ddl(self) -> Sequence[str]:
        return _DDL

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]:
        terms = query_terms(query)
        if not terms or top_k <= 0:
            return []
        async with self._connect() as conn:
            doc_freq = {r.term: r.doc for r in await conn.execute(_DOC_FREQ, {"terms": terms})}
            chosen = choose_terms(terms, doc_freq, POSTINGS_BUDGET)
            match = " OR ".join(fts_phrase(t) for t in chosen)
            params = {
                "match": match,
                "namespace": namespace,
                "window": POSTINGS_BUDGET,
                "top_k": top_k,
            }
            return [row_to_memory(r) for r in await conn.execute(_SEARCH, params)]
