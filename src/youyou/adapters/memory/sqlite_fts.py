"""SQLite memory store: FTS5 with BM25 ranking over language-aware terms.

The FTS5 table is an external-content index of ``memories.search_text`` kept in sync by
triggers, tokenized by ``porter unicode61`` (English stemming). Chinese is made searchable by
the CJK bigrams of ``text_index`` rather than the ``trigram`` tokenizer: trigrams cannot match
the many two-character Chinese words through the index (they would need a full-scan LIKE).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import event, text
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from youyou.adapters.memory.sql_base import MEMORY_COLUMNS, SqlMemoryStorage, row_to_memory
from youyou.adapters.memory.text_index import query_terms
from youyou.domain.memory import Memory

_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5("
    "search_text, content='memories', content_rowid='pk', "
    "tokenize='porter unicode61 remove_diacritics 2')",
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

_COLUMNS = ", ".join(f"m.{c.name}" for c in MEMORY_COLUMNS)
_SEARCH = text(
    f"SELECT {_COLUMNS} FROM memories_fts JOIN memories AS m ON m.pk = memories_fts.rowid "
    "WHERE memories_fts MATCH :match AND m.namespace = :namespace "
    "ORDER BY memories_fts.rank, m.updated_at DESC LIMIT :top_k"
)


def fts_match(terms: Sequence[str]) -> str:
    """An FTS5 OR query of quoted terms (quoting disables the query syntax in user text)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _sqlite_pragmas(dbapi_conn: DBAPIConnection, _: ConnectionPoolEntry) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


class SqliteMemoryStorage(SqlMemoryStorage):
    """``search`` ranks by BM25 (FTS5 ``rank``), newest first among equal scores."""

    @classmethod
    def from_url(cls, url: str) -> SqliteMemoryStorage:
        engine = create_async_engine(url)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return cls(engine)

    def _search_ddl(self) -> Sequence[str]:
        return _DDL

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]:
        terms = query_terms(query)
        if not terms or top_k <= 0:
            return []
        params = {"match": fts_match(terms), "namespace": namespace, "top_k": top_k}
        async with self._connect() as conn:
            return [row_to_memory(r) for r in await conn.execute(_SEARCH, params)]
