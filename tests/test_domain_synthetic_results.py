"""Synthetic tool results: one helper builds them all, with the metadata the ledger has always
stored (readers of old sessions depend on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from youyou.domain.synthetic_results import SyntheticReason, synthetic_output

SRC = Path(__file__).resolve().parent.parent / "src" / "youyou"


@pytest.mark.parametrize(
    ("reason", "metadata"),
    [
        (
            SyntheticReason.CANCELLED_BEFORE_EXECUTION,
            {"synthetic": True, "skipped": True, "reason": "cancelled_before_execution"},
        ),
        (
            SyntheticReason.AFTER_TOOL_USE_ABORT,
            {"synthetic": True, "skipped": True, "reason": "after_tool_use_abort"},
        ),
        (
            SyntheticReason.MAX_TOOL_CALLS_PER_TURN,
            {"synthetic": True, "skipped": True, "reason": "max_tool_calls_per_turn"},
        ),
        (
            SyntheticReason.BEFORE_TOOL_USE_ABORT,
            {"synthetic": True, "reason": "before_tool_use_abort"},
        ),
        (
            SyntheticReason.INTERRUPTED_BEFORE_RESULT,
            {"synthetic": True, "reason": "interrupted_before_result"},
        ),
    ],
)
def test_each_reason_keeps_its_stored_metadata(
    reason: SyntheticReason, metadata: dict[str, object]
) -> None:
    output = synthetic_output(reason, "[why]")
    assert (output.content, output.is_error, output.metadata) == ("[why]", True, metadata)


def test_no_other_module_builds_a_synthetic_result() -> None:
    helper = SRC / "domain" / "synthetic_results.py"
    copies = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path != helper and '"synthetic": True' in path.read_text(encoding="utf-8")
    ]
    assert copies == []
