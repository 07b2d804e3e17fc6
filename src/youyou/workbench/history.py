"""The full history of a chat, compacted messages included, as the API shows it.

Tool calls and their results hang on the assistant message of the same turn that asked for
them (the one just before the calls, else the answer after them); a batch cut off before any
assistant text gets an empty incomplete assistant message to hang on. A call that asked for
approval carries who decided what, when and why (the audit of approvals). A call's duration
comes from the workbench's own record (``durations``, by turn and call id): the ledger has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from youyou.adapters.tools.load_skill import DISPLAY_KEY
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVAL_REQUESTED,
    ApprovalDecision,
    PendingApproval,
)
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.ledger_metadata import read_metadata
from youyou.workbench.schemas import CallApprovalOut, MessageOut, ToolCallOut, UsageOut

Role = Literal["user", "assistant", "system"]
Status = Literal["complete", "incomplete"]


def block_payload(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "image", "mimeType": block.mime_type, "dataBase64": block.data_base64}
    assert isinstance(block, FileContentBlock)
    return {
        "type": "file",
        "fileName": block.file_name,
        "mediaType": block.media_type,
        "text": block.text,
    }


def _boundary(events: Sequence[LedgerEvent]) -> int:
    boundary = 0
    for event in events:
        payload = event.payload
        if isinstance(payload, Metadata) and payload.key == META_CONTEXT_COMPACTION:
            record = read_metadata(event, CompactionRecord)
            boundary = record.replaces_through_seq if record else boundary
    return boundary


@dataclass(slots=True)
class _Call:
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    output: str | None = None
    is_error: bool | None = None
    duration_ms: int | None = None
    requested: PendingApproval | None = None
    decided: ApprovalDecision | None = None

    def approval(self) -> CallApprovalOut | None:
        asked, decided = self.requested, self.decided
        if asked is None:
            return None
        return CallApprovalOut(
            requested_at=asked.requested_at,
            reason=asked.reason,
            decision=decided.decision if decided else None,
            decided_by=decided.decided_by if decided else None,
            decided_at=decided.decided_at if decided else None,
            decision_reason=decided.reason if decided else None,
        )


@dataclass(slots=True)
class _Message:
    event: LedgerEvent
    role: Role
    content: list[dict[str, Any]]
    status: Status = "complete"
    calls: list[_Call] = field(default_factory=list)

    def out(self, boundary: int) -> MessageOut:
        return MessageOut(
            seq=self.event.seq,
            id=str(self.event.seq),
            role=self.role,
            content=self.content,
            status=self.status,
            tool_calls=[
                ToolCallOut(
                    call_id=c.call_id,
                    tool_name=c.tool_name,
                    arguments=c.arguments,
                    output=c.output,
                    is_error=c.is_error,
                    approval=c.approval(),
                    duration_ms=c.duration_ms,
                )
                for c in self.calls
            ],
            created_at=self.event.timestamp,
            compacted=self.event.seq <= boundary,
        )


def history(
    events: Sequence[LedgerEvent],
    durations: Mapping[tuple[int, str], int] | None = None,
    *,
    usage: Mapping[int, UsageOut] | None = None,
    full_output: bool = False,
) -> list[MessageOut]:
    """``durations``: ``(seq of the turn's user message, call id) → ms``; ``usage`` (by the seq
    of a turn's user message) goes on the turn's last answer. A tool's output is what its card
    shows (``load_skill``: the first line), or all of it with ``full_output``."""
    durations = durations or {}
    turn_seq = 0
    messages: list[_Message] = []
    calls: dict[str, _Call] = {}
    pending: list[_Call] = []  # calls of this turn not yet on a message
    holder: _Message | None = None  # the assistant message of this turn calls hang on
    for event in events:
        payload = event.payload
        if pending and isinstance(payload, UserMessage | SystemMessage):
            # calls of a turn that ended before any assistant text hang on a message of their own
            messages.append(_Message(event, "assistant", [], "incomplete", pending))
            pending = []
        if isinstance(payload, UserMessage):
            holder = None
            turn_seq = event.seq
            messages.append(_Message(event, "user", [block_payload(b) for b in payload.content]))
        elif isinstance(payload, AssistantMessage):
            content = [block_payload(b) for b in payload.content]
            status: Status = (
                "incomplete" if payload.status is MessageStatus.INCOMPLETE else "complete"
            )
            holder = _Message(event, "assistant", content, status, pending)
            pending = []
            messages.append(holder)
        elif isinstance(payload, SystemMessage):
            messages.append(_Message(event, "system", [{"type": "text", "text": payload.content}]))
        elif isinstance(payload, ToolCall):
            call_id = payload.call.call_id
            call = _Call(
                call_id,
                payload.call.tool_name,
                payload.call.effective_arguments,
                duration_ms=durations.get((turn_seq, call_id)),
            )
            calls[call.call_id] = call
            (holder.calls if holder is not None else pending).append(call)
        elif isinstance(payload, Metadata) and payload.key == META_APPROVAL_REQUESTED:
            asked = read_metadata(event, PendingApproval)
            if asked is not None and asked.call_id in calls:
                calls[asked.call_id].requested = asked
        elif isinstance(payload, Metadata) and payload.key == META_APPROVAL_DECIDED:
            decided = read_metadata(event, ApprovalDecision)
            if decided is not None and decided.call_id in calls:
                calls[decided.call_id].decided = decided
        elif isinstance(payload, ToolResult) and payload.result.call_id in calls:
            output = payload.result.output
            shown = (output.metadata or {}).get(DISPLAY_KEY)
            found = calls[payload.result.call_id]
            found.output = shown if isinstance(shown, str) and not full_output else output.content
            found.is_error = output.is_error
    if pending:
        messages.append(_Message(events[-1], "assistant", [], "incomplete", pending))
    boundary = _boundary(events)
    out = [m.out(boundary) for m in messages]
    return _with_usage(out, usage) if usage else out


def _with_usage(messages: list[MessageOut], usage: Mapping[int, UsageOut]) -> list[MessageOut]:
    """Each turn's usage on the last assistant message before the next user message."""
    last_answer: dict[int, int] = {}  # turn seq → index of its last assistant message
    turn: int | None = None
    for index, message in enumerate(messages):
        if message.role == "user":
            turn = message.seq
        elif message.role == "assistant" and turn is not None:
            last_answer[turn] = index
    for turn_seq, index in last_answer.items():
        if turn_seq in usage:
            messages[index] = messages[index].model_copy(update={"usage": usage[turn_seq]})
    return messages
