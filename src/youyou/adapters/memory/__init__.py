"""Long-term memory stores (see docs/memory.md): in-process, SQLite FTS5 and PostgreSQL."""

from __future__ import annotations

from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.memory.postgres import PostgresMemoryStorage
from youyou.adapters.memory.sql_base import SqlMemoryStorage
from youyou.adapters.memory.sqlite_fts import SqliteMemoryStorage
from youyou.adapters.storage.engine import normalize_url

__all__ = [
    "InMemoryMemoryStorage",
    "PostgresMemoryStorage",
    "SqlMemoryStorage",
    "SqliteMemoryStorage",
    "open_memory_storage",
]


async def open_memory_storage(url: str) -> SqlMemoryStorage:
    """The SQL store for a SQLAlchemy async URL, with its schema ensured."""
    sqlite = normalize_url(url).get_backend_name() == "sqlite"  # INVALID_CONFIG if unsupported
    storage = (SqliteMemoryStorage if sqlite else PostgresMemoryStorage).from_url(url)
    await storage.ensure_schema()
    return storage
