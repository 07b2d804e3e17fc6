"""What a turn's events do beside being streamed: metrics, the usage book, and, at the turn's
end, the session's projection, the calls' durations and the message index (one transaction).

The turn is in the ledger whatever happens here: a projection that cannot be stored is logged,
and the client still gets the turn's last frame.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from youyou.api.session import SessionHandle
from youyou.domain.errors import AgentError
from youyou.domain.events import (
    AgentEventPayload,
    ContextCompacted,
    ContextUsage,
    ErrorEvent,
    ToolCallEnd,
    TurnComplete,
    TurnStarted,
)
from youyou.workbench.errors import ApiError
from youyou.workbench.message_index import TurnRecorder, turn_texts
from youyou.workbench.metrics import Metrics
from youyou.workbench.projection import memory_out, project_chat
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore
from youyou.workbench.store.turn_end import TurnEnd
from youyou.workbench.store.usage import TurnUsageRecord
from youyou.workbench.turn_events import TURN_END_EVENTS
from youyou.workbench.usage import UsageBook

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Books:
    """Where every turn of the process is accounted for."""

    store: WorkbenchStore
    metrics: Metrics
    usage: UsageBook
    recorder: TurnRecorder


@dataclass(slots=True)
class TurnBook:
    """One turn's accounts, fed the events its stream shows; ``chat`` is the session as last
    projected."""

    books: Books
    chat: ChatSessionRecord
    handle: SessionHandle
    started: float = field(default_factory=time.perf_counter)
    first: bool = True
    compacted: bool = False
    turn_seq: int = 0  # the ledger seq of the turn's user message, once it started
    durations: dict[str, int] = field(default_factory=dict)  # of its tool calls

    def saw(self, payload: AgentEventPayload) -> None:
        """Every event, also those the stream does not show."""
        if isinstance(payload, ToolCallEnd):
            self.durations[payload.call_id] = payload.duration_ms

    async def shown(self, payload: AgentEventPayload, data: dict[str, Any]) -> None:
        """An event the stream shows; ``data`` (its frame) gets the cost and the memory
        projection of a completed turn."""
        metrics = self.books.metrics
        if self.first:
            metrics.time_to_first_event.observe(time.perf_counter() - self.started)
            self.first = False
        if isinstance(payload, ContextCompacted):
            self.compacted = True
            metrics.compactions.labels(trigger="auto").inc()
        if isinstance(payload, ErrorEvent) and payload.code == "PROVIDER_ERROR":
            metrics.provider_errors.inc()
        if isinstance(payload, TurnStarted):
            self.turn_seq = payload.user_message_seq
        if payload.type not in TURN_END_EVENTS:
            return
        if isinstance(payload, TurnComplete):
            model_id = self.handle.model.model_id
            used = self.books.usage.priced(self.chat, model_id, self.turn_seq, payload.usage)
            data["usage"]["cost"] = used.cost
            await self._end(payload.context, used)
            data["memory"] = memory_out(self.chat).model_dump(mode="json", by_alias=True)
            metrics.provider_latency.observe(time.perf_counter() - self.started)
        else:
            await self._end(None, None)

    async def _end(self, usage: ContextUsage | None, used: TurnUsageRecord | None) -> None:
        """The projection, a completed turn's usage row, the calls' durations and the
        message index, in one transaction (``TurnEnd``)."""
        projected = project_chat(self.chat, self.handle, usage, compacted=self.compacted)
        end = TurnEnd(
            chat_session_id=projected.id,
            projection=projected.projection,
            usage=used,
            turn_seq=self.turn_seq,
            durations=self.durations,
            texts=turn_texts(self.turn_seq, self.handle.events),
        )
        try:
            indexed = await self.books.store.record_turn_end(end)
        except (AgentError, ApiError):
            logger.warning(
                "storing the end of the turn of session %s failed", self.chat.id, exc_info=True
            )
            indexed = False
        else:
            self.chat = projected
        if not indexed:
            await self.books.recorder.caught_up(self.chat)
