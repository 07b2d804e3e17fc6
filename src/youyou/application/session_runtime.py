"""Volatile state of one active session; the ledger is its durable state."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from youyou.application.context_manager import ContextManager
from youyou.application.request_builder import ChatRequestBuilder
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import CompactionPolicy, ResolvedSessionConfig
from youyou.domain.ledger import LedgerEvent
from youyou.domain.memory import SessionMemoryState
from youyou.domain.model import ModelInfo
from youyou.domain.session import SessionSummary


class TurnState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(eq=False)
class SessionRuntime:
    session_id: str
    resolved: ResolvedSessionConfig
    model: ModelInfo
    context: ContextManager
    compaction: CompactionPolicy
    summary: SessionSummary | None = None
    last_seq: int = 0
    # The loaded ledger: every event on a new session, the needed suffix after a resume.
    events: list[LedgerEvent] = field(default_factory=list)
    memory_state: SessionMemoryState = field(default_factory=SessionMemoryState)
    turn_state: TurnState = TurnState.IDLE
    turn_index: int = 0
    last_memory_checkpoint_seq: int = 0
    cancel: CancellationToken = field(default_factory=CancellationToken)
    requests: ChatRequestBuilder = field(default_factory=ChatRequestBuilder)
    running_turn: Any = None
    background: set[asyncio.Task[None]] = field(default_factory=set)
    # Serializes ledger writes: a background memory checkpoint may write while a turn runs.
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def is_running(self) -> bool:
        return self.turn_state is TurnState.RUNNING
