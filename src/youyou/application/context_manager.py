"""Model-visible context of one session: projection, estimates, request context.

It never changes the ledger; compaction decisions live in ``compaction.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from youyou.domain.context import (
    CompactionRecord,
    ContextState,
    TurnCounter,
    VisibleMessage,
    project_event,
    rebuild_visible_messages,
)
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import LedgerEvent
from youyou.domain.turn import RequestContext, TurnAugmentation


class TokenEstimator(Protocol):
    def message_tokens(self, vm: VisibleMessage) -> int: ...

    def messages_tokens(self, vms: Sequence[VisibleMessage]) -> int: ...

    def text_tokens(self, text: str) -> int: ...


class ContextManager:
    def __init__(self, estimator: TokenEstimator) -> None:
        self.estimator = estimator
        self.state = ContextState()
        self.turns = TurnCounter()
        self.ledger_messages = 0

    def rebuild(self, events: Iterable[LedgerEvent], compaction: CompactionRecord | None) -> None:
        """Replace the state from the ledger through the one shared projection."""
        after = [e for e in events if compaction is None or e.seq > compaction.replaces_through_seq]
        self.state.latest_compaction = compaction
        self.state.visible_messages = rebuild_visible_messages(after, compaction)
        self.state.history_estimated_tokens = self.estimator.messages_tokens(
            self.state.visible_messages
        )
        self.ledger_messages = sum(1 for vm in self.state.visible_messages if vm.source_seq)
        self.turns = TurnCounter()
        for event in after:
            self.turns.feed(event.payload)

    def append(self, event: LedgerEvent) -> None:
        """Live path: the same per-event projection ``rebuild`` uses."""
        projected = project_event(event)
        if not projected:
            return
        self.state.visible_messages.extend(projected)
        for vm in projected:
            self.state.history_estimated_tokens += self.estimator.message_tokens(vm)
        self.turns.feed(event.payload)
        self.ledger_messages += 1

    @property
    def can_compact(self) -> bool:
        return self.ledger_messages > 0

    @property
    def history_tokens(self) -> int:
        return self.state.history_estimated_tokens

    def compactable(self, before_seq: int | None) -> list[VisibleMessage]:
        """Ledger messages that may be compacted: all, or only those before the anchor."""
        return [
            vm
            for vm in self.state.visible_messages
            if vm.source_seq is not None and (before_seq is None or vm.source_seq < before_seq)
        ]

    def build_request_context(self, augmentation: TurnAugmentation) -> RequestContext:
        visible = self.state.visible_messages
        index = _anchor_index(visible, augmentation.origin_user_seq)
        return RequestContext(
            visible=visible,
            anchor_index=index,
            post_anchor_augmentations=tuple(i.rendered_xml for i in augmentation.skill_injections),
        )


def _anchor_index(visible: Sequence[VisibleMessage], origin_seq: int) -> int:
    # The anchor is almost always near the end: search backwards.
    for index in range(len(visible) - 1, -1, -1):
        if visible[index].source_seq == origin_seq:
            return index
    raise AgentError(
        ErrorCode.COMPACT_ERROR,
        f"current turn anchor (seq {origin_seq}) is missing from the visible context",
        source=ErrorSource.CONTEXT_MANAGER,
    )
