"""Streamed agent events: one envelope, typed payloads (see docs/architecture.md, 'A turn')."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from youyou.domain.approvals import ApprovalDecision, PendingApproval
from youyou.domain.context import CompactionMode
from youyou.domain.ledger import ToolOutput
from youyou.domain.model import Usage


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnStarted(_Payload):
    type: Literal["turn_started"] = "turn_started"
    user_message_seq: int


class TextDeltaEvent(_Payload):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDeltaEvent(_Payload):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ModelWaiting(_Payload):
    """A model request has not answered yet: seconds since it was sent, repeated every
    ``AgentConfig.model_wait_notice_ms`` until its first event (or its failure). Progress for
    a client to show and replace; it is not stored."""

    type: Literal["model_waiting"] = "model_waiting"
    elapsed_s: int


class ToolCallStart(_Payload):
    type: Literal["tool_call_start"] = "tool_call_start"
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ToolCallEnd(_Payload):
    type: Literal["tool_call_end"] = "tool_call_end"
    call_id: str
    tool_name: str
    output: ToolOutput
    duration_ms: int


class ToolApprovalRequested(PendingApproval):
    """A call waits for a person's decision (recorded before it is emitted)."""

    type: Literal["tool_approval_requested"] = "tool_approval_requested"


class ToolApprovalDecided(ApprovalDecision):
    """A person (or the timeout) decided a waiting call (recorded before it is emitted)."""

    type: Literal["tool_approval_decided"] = "tool_approval_decided"


class ContextCompacted(_Payload):
    type: Literal["context_compacted"] = "context_compacted"
    mode: CompactionMode
    replaces_through_seq: int


class ContextUsage(_Payload):
    """What the model will see next: tokens of prompt + visible history against the window."""

    tokens: int
    window: int
    percent: float
    can_compact: bool

    @classmethod
    def of(cls, tokens: int, window: int, can_compact: bool) -> ContextUsage:
        percent = min(100.0, round(tokens * 100 / window, 1)) if window > 0 else 100.0
        return cls(tokens=tokens, window=window, percent=percent, can_compact=can_compact)


class TurnComplete(_Payload):
    type: Literal["turn_complete"] = "turn_complete"
    usage: Usage
    context: ContextUsage | None = None


class TurnCancelled(_Payload):
    type: Literal["turn_cancelled"] = "turn_cancelled"


class ErrorEvent(_Payload):
    """``fatal`` is false for failures the turn survives (a tool error fed back to the model)."""

    type: Literal["error"] = "error"
    code: str
    message: str
    retryable: bool = False
    fatal: bool = True


AgentEventPayload = Annotated[
    TurnStarted
    | TextDeltaEvent
    | ReasoningDeltaEvent
    | ModelWaiting
    | ToolCallStart
    | ToolCallEnd
    | ToolApprovalRequested
    | ToolApprovalDecided
    | ContextCompacted
    | TurnComplete
    | TurnCancelled
    | ErrorEvent,
    Field(discriminator="type"),
]


class AgentEvent(BaseModel):
    """Envelope; order events across turns by (session_id, turn_id, sequence)."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    turn_id: str
    timestamp: datetime
    sequence: int
    payload: AgentEventPayload
