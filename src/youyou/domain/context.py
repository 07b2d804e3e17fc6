"""Model-visible context and its one shared projection from the ledger.

See docs/architecture.md, 'The ledger' and 'Compaction'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.templates import COMPACT_SUMMARY_PREFIX, PHRASES, Language

ENGLISH_MARKER = PHRASES[Language.EN].incomplete_assistant_marker

VisiblePayload = UserMessage | AssistantMessage | ToolCall | ToolResult | SystemMessage


class CompactionMode(StrEnum):
    SUMMARY = "summary"
    TRUNCATION_FALLBACK = "truncation_fallback"


class CompactionRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: CompactionMode
    replaces_through_seq: int
    summary_body: str | None = None
    # Projection for UIs: user/assistant/system messages behind the boundary so far.
    compacted_message_count: int = 0


@dataclass(frozen=True, slots=True)
class VisibleMessage:
    """``source_seq`` is None for synthetic messages (summary, cancel markers)."""

    source_seq: int | None
    message: VisiblePayload


@dataclass(slots=True)
class ContextState:
    latest_compaction: CompactionRecord | None = None
    visible_messages: list[VisibleMessage] = field(default_factory=list)
    history_estimated_tokens: int = 0


def render_compaction_summary(summary_body: str) -> str:
    """The only way a summary is shown to a model, live or after resume."""
    return f"{COMPACT_SUMMARY_PREFIX}\n\n{summary_body}"


def project_event(
    event: LedgerEvent,
    visible_calls: set[str],
    into: list[VisibleMessage],
    marker: str = ENGLISH_MARKER,
) -> bool:
    """Append to ``into`` the visible messages one ledger event contributes (metadata
    contributes none); whether it contributed any. ``marker`` follows an assistant message
    cut short by a cancel (``Phrases.incomplete_assistant_marker`` of the configured language).

    ``visible_calls`` holds the call ids already visible and is updated here. A tool result
    whose call is not visible (left behind a compaction boundary by an older kernel) contributes
    none: every provider rejects a tool result without its call, and dropping it lets such a
    session go on. Appending in place, not returning a list, saves a list per event at resume.
    """
    payload = event.payload
    if type(payload) is UserMessage:  # the most common event first
        into.append(VisibleMessage(event.seq, payload))
        return True
    if type(payload) is AssistantMessage:
        into.append(VisibleMessage(event.seq, payload))
        if payload.status is MessageStatus.INCOMPLETE:
            into.append(VisibleMessage(None, SystemMessage(content=marker)))
        return True
    if type(payload) is ToolCall:
        visible_calls.add(payload.call.call_id)
    elif type(payload) is ToolResult:
        if payload.result.call_id not in visible_calls:
            return False
    elif type(payload) is not SystemMessage:  # metadata
        return False
    into.append(VisibleMessage(event.seq, payload))
    return True


@dataclass(slots=True)
class LedgerProjection:
    """What a ledger suffix shows the model, with what resume needs from the same pass."""

    visible: list[VisibleMessage]
    calls: set[str]
    """Ids of the visible tool calls (a later result is shown only with its call)."""
    turns: TurnCounter
    ledger_messages: int
    """Ledger events that contributed a visible message."""


def project_ledger(
    events: Iterable[LedgerEvent],
    compaction: CompactionRecord | None,
    marker: str = ENGLISH_MARKER,
) -> LedgerProjection:
    """The one projection of a ledger, shared by the live path (event by event, through
    ``project_event``), the provider retry path and resume; never fork it.

    One pass: resuming thousands of events paid as much for separate passes (filter, project,
    collect call ids, count turns) as for the projection itself.
    """
    visible: list[VisibleMessage] = []
    calls: set[str] = set()
    turns = TurnCounter()
    feed = turns.feed
    contributed = 0
    boundary = 0
    if compaction is not None:
        boundary = compaction.replaces_through_seq
        if compaction.mode is CompactionMode.SUMMARY and compaction.summary_body is not None:
            summary = render_compaction_summary(compaction.summary_body)
            visible.append(VisibleMessage(None, SystemMessage(content=summary)))
    for event in events:
        if event.seq <= boundary:
            continue
        feed(event.payload)
        if project_event(event, calls, visible, marker):
            contributed += 1
    return LedgerProjection(visible, calls, turns, contributed)


def rebuild_visible_messages(
    events: Iterable[LedgerEvent],
    compaction: CompactionRecord | None,
    marker: str = ENGLISH_MARKER,
) -> list[VisibleMessage]:
    return project_ledger(events, compaction, marker).visible


def first_safe_cut(messages: Sequence[VisibleMessage], start: int) -> int:
    """The first index at or after ``start`` where history may be cut, keeping ``messages[i:]``.

    A cut never falls inside one assistant message (its text and the tool calls right after
    it) and never separates a tool call from its result: the kept part holds every call whose
    result it holds. ``len(messages)`` (drop everything) is always safe.
    """
    answered_at = {
        vm.message.result.call_id: index
        for index, vm in enumerate(messages)
        if isinstance(vm.message, ToolResult)
    }
    reach = -1  # the last result a call before the cut still needs
    previous: VisiblePayload | None = None
    for index, vm in enumerate(messages):
        message = vm.message
        if index >= start and index > reach and _may_lead(message, previous):
            return index
        if isinstance(message, ToolCall):
            reach = max(reach, answered_at.get(message.call.call_id, -1))
        previous = message
    return len(messages)


def _may_lead(message: VisiblePayload, previous: VisiblePayload | None) -> bool:
    """Whether ``message`` may open the kept history after a cut right before it."""
    if isinstance(message, ToolResult):
        return False
    if isinstance(message, ToolCall):
        # Calls right after assistant text or another call belong to that assistant message.
        return not isinstance(previous, AssistantMessage | ToolCall)
    return True


class TurnCounter:
    """Completed turns since the boundary, as the ``every_n_turns`` trigger counts them.

    A turn is complete when its final assistant message is complete: an assistant message
    followed by tool calls is not final, and a cancelled (incomplete) one does not count.
    """

    __slots__ = ("_counted", "_pending")

    def __init__(self) -> None:
        self._counted = 0
        self._pending = False

    def feed(self, payload: object) -> None:
        if type(payload) is AssistantMessage:
            self._pending = payload.status is MessageStatus.COMPLETE
        elif type(payload) is ToolCall:
            self._pending = False
        elif type(payload) is UserMessage and self._pending:
            self._counted += 1
            self._pending = False

    @property
    def completed(self) -> int:
        return self._counted + (1 if self._pending else 0)
