"""``recall_history``: the kernel's read-only tool over a session's compacted history.

See docs/architecture.md, 'Compaction'. Offered on every request of a session that has a
compaction boundary, to a model with tool use; the search and the budget live in
``domain/recall.py``. The events behind the boundary come from memory while the session still
holds them all, otherwise from the session storage: they may have been released from memory
after the compaction (or never loaded, on a resume), but the ledger keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from youyou.application.session_runtime import SessionRuntime
from youyou.domain.cancel import CancellationToken
from youyou.domain.ledger import LedgerEvent, ToolOutput
from youyou.domain.model import ProviderCapability
from youyou.domain.recall import (
    RECALL_DESCRIPTOR,
    RECALL_TOOL_NAME,
    recall,
    recall_entries,
    recall_request,
)
from youyou.domain.tool import ToolDescriptor, ToolInput
from youyou.ports.session_storage import SessionStorage
from youyou.ports.tool import ToolHandler


class RecallHistoryTool:
    """Closed over one session: it can read nothing but that session's own ledger."""

    def __init__(self, runtime: SessionRuntime, storage: SessionStorage | None) -> None:
        self._runtime = runtime
        self._storage = storage

    @property
    def descriptor(self) -> ToolDescriptor:
        return RECALL_DESCRIPTOR

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        runtime = self._runtime
        compaction = runtime.context.state.latest_compaction
        if compaction is None:  # offered only after a compaction; kept honest all the same
            return ToolOutput(content="Nothing in this conversation has been compacted yet.")
        request = recall_request(tool_input.arguments, runtime.model.context_window)
        if isinstance(request, str):
            return ToolOutput(content=request, is_error=True)
        through = compaction.replaces_through_seq
        entries = recall_entries(await self._events(), through)
        answer = recall(
            entries,
            request,
            through_seq=through,
            count=runtime.context.estimator.uncached_text_tokens,
        )
        return ToolOutput(content=answer)

    async def _events(self) -> Sequence[LedgerEvent]:
        events = self._runtime.events
        if (events and events[0].seq == 1) or self._storage is None:
            return list(events)  # a copy: the session may append while this reads
        return await self._storage.load_events(self._runtime.session_id)


def with_recall(
    tools: Mapping[str, ToolHandler], runtime: SessionRuntime, storage: SessionStorage | None
) -> Mapping[str, ToolHandler]:
    """``tools`` plus ``recall_history`` once the session has a compaction boundary and its model
    uses tools; a tool of that name given by the application is left in place."""
    if (
        RECALL_TOOL_NAME in tools
        or runtime.context.state.latest_compaction is None
        or ProviderCapability.TOOL_USE not in runtime.model.capabilities
    ):
        return tools
    return {**tools, RECALL_TOOL_NAME: RecallHistoryTool(runtime, storage)}
