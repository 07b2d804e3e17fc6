"""Results the kernel records for tool calls whose tool gave no answer of its own.

Providers refuse a tool call without a result, so a call that was never run (cancelled, blocked
or stopped by a plugin, over the per-turn limit, denied by a person) or whose process stopped
first still gets one: an error result the model reads as text, with ``metadata`` saying why for
the ledger's readers (see docs/architecture.md, 'Tool dispatch').
"""

from __future__ import annotations

from enum import StrEnum

from youyou.domain.ledger import ToolOutput


class SyntheticReason(StrEnum):
    CANCELLED_BEFORE_EXECUTION = "cancelled_before_execution"
    BEFORE_TOOL_USE_ABORT = "before_tool_use_abort"  # a plugin blocked this call
    AFTER_TOOL_USE_ABORT = "after_tool_use_abort"  # a plugin stopped the tool loop
    MAX_TOOL_CALLS_PER_TURN = "max_tool_calls_per_turn"
    INTERRUPTED_BEFORE_RESULT = "interrupted_before_result"  # the process stopped mid-batch
    APPROVAL_DENIED = "approval_denied"  # a person (or the approval timeout) said no


# Calls the turn passed over without asking a plugin or a handler (``metadata.skipped``).
_SKIPPED = frozenset(
    {
        SyntheticReason.CANCELLED_BEFORE_EXECUTION,
        SyntheticReason.AFTER_TOOL_USE_ABORT,
        SyntheticReason.MAX_TOOL_CALLS_PER_TURN,
    }
)


def synthetic_output(reason: SyntheticReason, content: str) -> ToolOutput:
    """The error result recorded for a call whose tool did not answer, for ``reason``."""
    skipped = {"skipped": True} if reason in _SKIPPED else {}
    return ToolOutput(
        content=content,
        is_error=True,
        metadata={"synthetic": True, **skipped, "reason": reason.value},
    )
