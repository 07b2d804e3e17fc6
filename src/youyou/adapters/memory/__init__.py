"""Long-term memory stores (seed 001 §6.5): in-process, SQLite FTS5 and PostgreSQL."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.memory.postgres import PostgresMemoryStorage
from youyou.adapters.memory.sql_base import SqlMemoryStorage
from youyou.adapters.memory.sqlite_fts import SqliteMemoryStorage
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

__all__ = [
    "InMemoryMemoryStorage",
    "PostgresMemoryStorage",
    "SqlMemoryStorage",
    "SqliteMemoryStorage",
    "open_memory_storage",
]


async def open_memory_storage(url: str) -> SqlMemoryStorage:
    """The SQL store for a SQLAlchemy async URL, with its schema ensured."""
    backend = make_url(url).get_backend_name()
    storage: SqlMemoryStorage
    if backend == "sqlite":
        storage = SqliteMemoryStorage.from_url(url)
    elif backend == "postgresql":
        storage = PostgresMemoryStorage.from_url(url)
    else:
        raise AgentError(
            ErrorCode.INVALID_CONFIG,
            f"no memory storage for database backend {backend!r}",
            source=ErrorSource.STORAGE,
        )
    await storage.ensure_schema()
    return storage
