"""Long-term memory read and write paths (see docs/architecture.md, 'Long-term memory').

Reads never fail a turn: storage errors become warnings and an empty result. The write path
(extraction) asks the memory model once for Create / Update / Delete / Skip mutations and applies
them; the caller records the ``memory_checkpoint`` metadata afterwards.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from youyou.domain.content import ContentBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import LedgerEvent
from youyou.domain.memory import (
    CreateMemory,
    DeleteMemory,
    Memory,
    MemoryMutation,
    SessionMemoryState,
    UpdateMemory,
)
from youyou.domain.memory_extraction import (
    MEMORY_EXTRACTION_PROMPT,
    MutationContext,
    has_conversation,
    merge_memories,
    parse_mutations,
    render_extraction_input,
)
from youyou.domain.model import ChatRequest, ModelMessage, ModelMessageRole
from youyou.domain.skill_triggers import strip_skill_triggers
from youyou.domain.templates import (
    MEMORIES_SUBHEADER,
    MEMORY_SECTION_HEADER,
    MEMORY_USAGE_INSTRUCTIONS,
)
from youyou.ports.memory_storage import MemoryStorage

logger = logging.getLogger(__name__)

T = TypeVar("T")

Complete = Callable[[ChatRequest], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """Mutations written to storage (skips included) and why other items were dropped."""

    mutations: tuple[MemoryMutation, ...] = ()
    warnings: tuple[str, ...] = ()


def render_memory_section(memories: Sequence[Memory]) -> str | None:
    """The prompt's memory section; ``None`` when there is nothing to inject (never empty)."""
    if not memories:
        return None
    lines = [
        f"- [{m.updated_at.date().isoformat()}] " + "\n  ".join(m.content.splitlines())
        for m in memories
    ]
    return (
        f"{MEMORY_SECTION_HEADER}\n\n{MEMORY_USAGE_INSTRUCTIONS}\n\n"
        f"{MEMORIES_SUBHEADER}\n" + "\n".join(lines)
    )


class MemoryManager:
    def __init__(self, storage: MemoryStorage | None, complete: Complete) -> None:
        self._storage = storage
        self._complete = complete

    @property
    def enabled(self) -> bool:
        return self._storage is not None

    async def load_bootstrap_memories(self, namespace: str, limit: int) -> list[Memory]:
        """``list_recent`` as the storage ordered it (no second sort: the store decides)."""
        if self._storage is None:
            return []
        try:
            return list(await self._storage.list_recent(namespace, limit))
        except Exception as exc:
            logger.warning("memory bootstrap failed for namespace %r: %s", namespace, exc)
            return []

    async def prepare_turn_memories(
        self,
        blocks: Sequence[ContentBlock],
        state: SessionMemoryState,
        namespace: str,
        max_items: int,
    ) -> list[Memory]:
        """Search with the turn's own text, then merge with the bootstrap set."""
        state.last_turn_memories = await self._search_turn(blocks, namespace, max_items)
        return merge_memories(state.bootstrap_memories, state.last_turn_memories, max_items)

    async def _search_turn(
        self, blocks: Sequence[ContentBlock], namespace: str, top_k: int
    ) -> list[Memory]:
        if self._storage is None or top_k <= 0:
            return []
        query = turn_query(blocks)
        if not query:
            return []
        try:
            return list(await self._storage.search(namespace, query, top_k))
        except Exception as exc:
            logger.warning("memory search failed for namespace %r: %s", namespace, exc)
            return []

    async def run_extraction(
        self,
        *,
        session_id: str,
        events: Sequence[LedgerEvent],
        namespace: str,
        model_id: str,
    ) -> ExtractionResult:
        """One memory-model call over the ledger window; model errors propagate as AgentError."""
        storage = self._storage
        if storage is None or not has_conversation(events):
            return ExtractionResult()
        existing = await _storage_call(storage.list_all(namespace))
        window = render_extraction_input(session_id, events, existing)
        request = ChatRequest(
            model_id=model_id,
            system_prompt=MEMORY_EXTRACTION_PROMPT,
            messages=(ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text=window),)),),
        )
        output = await self._complete(request)
        context = MutationContext(
            namespace=namespace,
            now=datetime.now(UTC),
            session_id=session_id,
            seq_start=events[0].seq,
            seq_end=events[-1].seq,
            new_id=lambda: uuid.uuid4().hex,
        )
        parsed = parse_mutations(output, existing, context)
        for warning in parsed.warnings:
            logger.warning("memory extraction for session %s: %s", session_id, warning)
        for mutation in parsed.mutations:
            if isinstance(mutation, CreateMemory | UpdateMemory):
                await _storage_call(storage.upsert(mutation.memory))
            elif isinstance(mutation, DeleteMemory):
                await _storage_call(storage.delete(namespace, mutation.id))
        return ExtractionResult(parsed.mutations, parsed.warnings)


def turn_query(blocks: Sequence[ContentBlock]) -> str:
    """Search text of a turn: top-level text blocks only, explicit ``/skill`` triggers removed.

    File and image blocks never drive the search.
    """
    return strip_skill_triggers("\n".join(b.text for b in blocks if isinstance(b, TextBlock)))


async def _storage_call(call: Awaitable[T]) -> T:
    """Storage failures on the write path are STORAGE_ERROR, whatever the adapter raised."""
    try:
        return await call
    except AgentError:
        raise
    except Exception as exc:
        raise AgentError(
            ErrorCode.STORAGE_ERROR,
            f"memory storage failed: {exc}",
            retryable=True,
            source=ErrorSource.MEMORY_MANAGER,
        ) from exc
