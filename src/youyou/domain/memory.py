"""Long-term memory records and mutations (see docs/memory.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict


class Memory(BaseModel):
    """``source_seq_*`` record which ledger window a memory was extracted from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    namespace: str
    content: str
    created_at: datetime
    updated_at: datetime
    source_session_id: str | None = None
    source_seq_start: int | None = None
    source_seq_end: int | None = None


@dataclass(frozen=True, slots=True)
class CreateMemory:
    memory: Memory


@dataclass(frozen=True, slots=True)
class UpdateMemory:
    memory: Memory


@dataclass(frozen=True, slots=True)
class DeleteMemory:
    id: str


@dataclass(frozen=True, slots=True)
class SkipMemory:
    reason: str | None = None


MemoryMutation = CreateMemory | UpdateMemory | DeleteMemory | SkipMemory


@dataclass(slots=True)
class SessionMemoryState:
    bootstrap_memories: list[Memory] = field(default_factory=list)
    last_turn_memories: list[Memory] = field(default_factory=list)
