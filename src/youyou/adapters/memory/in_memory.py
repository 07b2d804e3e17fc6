"""Process-local memory store for tests and embedders without a database.

Search scores a memory by the inverse document frequency of the query terms it contains
(the same language-aware terms as the SQL stores), newest first among equal scores.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

from youyou.adapters.memory.text_index import index_text, query_terms
from youyou.domain.memory import Memory


class InMemoryMemoryStorage:
    def __init__(self) -> None:
        self._namespaces: dict[str, dict[str, Memory]] = {}
        self._terms: dict[tuple[str, str], frozenset[str]] = {}
        self._lock = asyncio.Lock()

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]:
        terms = query_terms(query)
        if not terms or top_k <= 0:
            return []
        async with self._lock:
            items = list(self._namespaces.get(namespace, {}).values())
            indexed = [(m, self._terms[(namespace, m.id)]) for m in items]
        total = len(indexed)
        idf = {
            t: math.log(1 + total / (1 + sum(t in words for _, words in indexed))) for t in terms
        }
        scored = [(sum(idf[t] for t in terms if t in words), memory) for memory, words in indexed]
        hits = [(score, memory) for score, memory in scored if score > 0]
        hits.sort(key=lambda hit: (hit[0], hit[1].updated_at), reverse=True)
        return [memory for _, memory in hits[:top_k]]

    async def list_recent(self, namespace: str, limit: int) -> Sequence[Memory]:
        async with self._lock:
            items = list(self._namespaces.get(namespace, {}).values())
        items.sort(key=lambda m: m.updated_at, reverse=True)
        return items[: max(limit, 0)]

    async def list_all(self, namespace: str) -> Sequence[Memory]:
        async with self._lock:
            return list(self._namespaces.get(namespace, {}).values())

    async def upsert(self, memory: Memory) -> None:
        """Same content: only ``updated_at`` moves; new content: content, provenance, time."""
        async with self._lock:
            space = self._namespaces.setdefault(memory.namespace, {})
            old = space.get(memory.id)
            if old is None:
                stored = memory
            elif old.content == memory.content:
                stored = old.model_copy(update={"updated_at": memory.updated_at})
            else:
                stored = memory.model_copy(update={"created_at": old.created_at})
            space[memory.id] = stored
            self._terms[(memory.namespace, memory.id)] = frozenset(
                index_text(stored.content).split()
            )

    async def delete(self, namespace: str, id: str) -> None:
        async with self._lock:
            self._namespaces.get(namespace, {}).pop(id, None)
            self._terms.pop((namespace, id), None)
