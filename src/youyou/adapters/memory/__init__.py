"""Long-term memory stores (see docs/memory.md): in-process, SQLite FTS5 and PostgreSQL."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
    from youyou.adapters.memory.postgres import PostgresMemoryStorage
    from youyou.adapters.memory.sql_base import SqlMemoryStorage
    from youyou.adapters.memory.sqlite_fts import SqliteMemoryStorage

__all__ = [
    "InMemoryMemoryStorage",
    "PostgresMemoryStorage",
    "SqlMemoryStorage",
    "SqliteMemoryStorage",
    "open_memory_storage",
]

# The stores are imported on first use: importing one module of this package (the kernel's
# ``in_memory``) must not import SQLAlchemy, the SQL stores' tables or their dialects.
_HOME_OF = {
    "InMemoryMemoryStorage": "youyou.adapters.memory.in_memory",
    "PostgresMemoryStorage": "youyou.adapters.memory.postgres",
    "SqlMemoryStorage": "youyou.adapters.memory.sql_base",
    "SqliteMemoryStorage": "youyou.adapters.memory.sqlite_fts",
}


def __getattr__(name: str) -> object:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


async def open_memory_storage(url: str) -> SqlMemoryStorage:
    """The SQL store for a SQLAlchemy async URL, with its schema ensured."""
    from youyou.adapters.storage.engine import normalize_url

    sqlite = normalize_url(url).get_backend_name() == "sqlite"  # INVALID_CONFIG if unsupported
    storage: SqlMemoryStorage
    if sqlite:
        from youyou.adapters.memory.sqlite_fts import SqliteMemoryStorage

        storage = SqliteMemoryStorage.from_url(url)
    else:
        from youyou.adapters.memory.postgres import PostgresMemoryStorage

        storage = PostgresMemoryStorage.from_url(url)
    await storage.ensure_schema()
    return storage
