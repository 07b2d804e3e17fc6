"""Model-visible context of one session: projection, estimates, request context.

It never changes the ledger; compaction decisions live in ``compaction.py``. A tool result too
large for its share of the window is shown as a head and a tail (``domain/tool_result_view.py``)
in both the live path and ``rebuild``, so the estimates and the requests agree with a resume.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from youyou.domain.context import (
    ENGLISH_MARKER,
    CompactionRecord,
    ContextState,
    TurnCounter,
    VisibleMessage,
    project_event,
    project_ledger,
)
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import LedgerEvent, ToolResult
from youyou.domain.tool_result_view import fit_tool_result, tool_result_token_limit
from youyou.domain.turn import RequestContext, TurnAugmentation


class TokenEstimator(Protocol):
    generation: int
    """Changes when counts returned before are stale (the estimator turned exact)."""

    def message_tokens(self, vm: VisibleMessage) -> int: ...

    def messages_tokens(self, vms: Sequence[VisibleMessage]) -> int: ...

    def text_tokens(self, text: str) -> int: ...

    def uncached_text_tokens(self, text: str) -> int: ...


class ContextManager:
    def __init__(
        self, estimator: TokenEstimator, context_window: int, *, cancel_marker: str = ENGLISH_MARKER
    ) -> None:
        """``cancel_marker`` follows an assistant message cut short by a cancel."""
        self.estimator = estimator
        self._marker = cancel_marker
        self.state = ContextState()
        self.turns = TurnCounter()
        self.ledger_messages = 0
        self._result_limit = tool_result_token_limit(context_window)
        self._visible_calls: set[str] = set()
        self._generation = estimator.generation

    def rebuild(self, events: Iterable[LedgerEvent], compaction: CompactionRecord | None) -> None:
        """Replace the state from the ledger through the one shared projection."""
        projection = project_ledger(events, compaction, self._marker)
        visible = projection.visible
        for index, vm in enumerate(visible):
            if type(vm.message) is ToolResult:
                visible[index] = self._fit(vm)
        self.state.latest_compaction = compaction
        self.state.visible_messages = visible
        self._visible_calls = projection.calls
        self._recount()
        self.ledger_messages = projection.ledger_messages
        self.turns = projection.turns

    def append(self, event: LedgerEvent) -> None:
        """Live path: the same per-event projection ``rebuild`` uses."""
        projected: list[VisibleMessage] = []
        if not project_event(event, self._visible_calls, projected, self._marker):
            return
        for vm in map(self._fit, projected):
            self.state.visible_messages.append(vm)
            self.state.history_estimated_tokens += self.estimator.message_tokens(vm)
        self.turns.feed(event.payload)
        self.ledger_messages += 1

    def _fit(self, vm: VisibleMessage) -> VisibleMessage:
        """The model's view of a tool result: whole, or head and tail if over its share."""
        message = vm.message
        if type(message) is not ToolResult:
            return vm
        output = message.result.output
        content = fit_tool_result(
            output.content, self._result_limit, self.estimator.uncached_text_tokens
        )
        if content is output.content:
            return vm
        result = message.result.model_copy(
            update={"output": output.model_copy(update={"content": content})}
        )
        return VisibleMessage(vm.source_seq, message.model_copy(update={"result": result}))

    @property
    def can_compact(self) -> bool:
        return self.ledger_messages > 0

    @property
    def history_tokens(self) -> int:
        if self._generation != self.estimator.generation:
            self._recount()
        return self.state.history_estimated_tokens

    def _recount(self) -> None:
        self.state.history_estimated_tokens = self.estimator.messages_tokens(
            self.state.visible_messages
        )
        self._generation = self.estimator.generation

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
