"""Volatile state of one active session; the ledger is its durable state."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from youyou.application.approval_gate import ApprovalWaits
from youyou.application.context_manager import ContextManager
from youyou.application.request_builder import ChatRequestBuilder
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import CompactionPolicy, ResolvedSessionConfig
from youyou.domain.ledger import LedgerEvent
from youyou.domain.ledger_metadata import MemoryCheckpoint
from youyou.domain.memory import SessionMemoryState
from youyou.domain.model import ModelInfo
from youyou.domain.session import SessionSummary


class TurnState(StrEnum):
    """What holds the session: nothing, a turn, a manual compaction, or its close."""

    IDLE = "idle"
    RUNNING = "running"
    COMPACTING = "compacting"
    CLOSING = "closing"
    CLOSED = "closed"


class Operation(Protocol):
    """The one thing running in a session (a turn or a manual compaction): close, shutdown and
    ``SessionHandle.cancel()`` cancel it and wait for its end."""

    def cancel(self) -> None: ...

    async def join(self) -> object: ...


class ManualCompaction:
    """A manual compaction or memory-mode change: its cancel token and its end."""

    __slots__ = ("_done", "cancel_token")

    def __init__(self) -> None:
        self.cancel_token = CancellationToken()
        self._done = asyncio.Event()

    def cancel(self) -> None:
        self.cancel_token.cancel()

    def finish(self) -> None:
        self._done.set()

    async def join(self) -> None:
        await self._done.wait()


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
    # Times the ledger was reloaded because another process had appended to it.
    reloads: int = 0
    # The latest turn's rendered system prompt; a manual compaction estimates with it.
    system_prompt: str | None = None
    last_memory_checkpoint_seq: int = 0
    # Extracted in the background, written before the session's next event (never alone).
    pending_checkpoint: MemoryCheckpoint | None = None
    cancel: CancellationToken = field(default_factory=CancellationToken)
    requests: ChatRequestBuilder = field(default_factory=ChatRequestBuilder)
    # Set by the turn engine (a turn) or by a manual compaction; at most one at a time.
    running_turn: Operation | None = None
    running_compaction: ManualCompaction | None = None
    background: set[asyncio.Task[None]] = field(default_factory=set)
    # Tools a person approved for the rest of the session (derived from the ledger on load).
    approved_tools: set[str] = field(default_factory=set)
    # Calls the running turn waits for in this process, and decisions being recorded while
    # no turn runs (a second decision for the same call is refused meanwhile).
    approval_waits: ApprovalWaits = field(default_factory=ApprovalWaits)
    deciding: set[str] = field(default_factory=set)
    # Serializes ledger writes: a background memory checkpoint may write while a turn runs.
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Serializes closes: a second close (or shutdown's) waits for the first one's result.
    close_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def is_running(self) -> bool:
        """A turn or a manual compaction holds the session: the other one is TURN_BUSY."""
        return self.turn_state in (TurnState.RUNNING, TurnState.COMPACTING)

    @property
    def operations(self) -> list[Operation]:
        return [op for op in (self.running_turn, self.running_compaction) if op is not None]
