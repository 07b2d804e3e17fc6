"""Long-term memory storage port (see docs/memory.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from youyou.domain.memory import Memory


@runtime_checkable
class MemoryStorage(Protocol):
    """search: relevance desc; list_recent: updated_at desc; upsert keeps created_at."""

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]: ...

    async def list_recent(self, namespace: str, limit: int) -> Sequence[Memory]: ...

    async def list_all(self, namespace: str) -> Sequence[Memory]: ...

    async def upsert(self, memory: Memory) -> None: ...

    async def delete(self, namespace: str, id: str) -> None: ...
