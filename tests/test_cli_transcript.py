"""Printing a stored ledger: messages, attachments and compaction boundaries."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from youyou.cli.transcript import print_transcript
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVAL_REQUESTED,
    ApprovalDecision,
    PendingApproval,
)
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import CompactionMode, CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    LedgerEvent,
    Metadata,
    SessionEventPayload,
    UserMessage,
)
from youyou.domain.ledger_metadata import metadata_event


def _printed(*payloads: SessionEventPayload) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=100, color_system=None)
    print_transcript(
        console,
        [
            LedgerEvent(seq=n, timestamp=datetime(2026, 1, 1, tzinfo=UTC), payload=p)
            for n, p in enumerate(payloads, 1)
        ],
    )
    return out.getvalue()


def test_a_compaction_boundary_shows_where_it_ends_and_its_summary() -> None:
    record = CompactionRecord(
        mode=CompactionMode.SUMMARY, replaces_through_seq=1, summary_body="The user said hi.\nx"
    )
    truncated = CompactionRecord(mode=CompactionMode.TRUNCATION_FALLBACK, replaces_through_seq=2)
    text = _printed(
        UserMessage(
            content=(
                TextBlock(text="hi"),
                FileContentBlock(file_name="a.txt", text="abc"),
                ImageBlock(mime_type="image/png", data_base64=""),
            )
        ),
        Metadata(key=META_CONTEXT_COMPACTION, value=record.model_dump(mode="json")),
        Metadata(key=META_CONTEXT_COMPACTION, value=truncated.model_dump(mode="json")),
    )
    assert "you #1" in text
    assert "[file a.txt: 3 chars]" in text and "[image image/png]" in text
    assert "⟳ compacted through #1: The user said hi. …" in text
    assert "⟳ compacted through #2: \n" in text


def test_approvals_show_who_decided_what_and_when() -> None:
    moment = datetime(2026, 1, 1, 9, 30, tzinfo=UTC)
    request = PendingApproval(
        call_id="c1",
        tool_name="tickets__close_ticket",
        arguments={"id": 42},
        reason="this tool may change something",
        requested_at=moment,
    )
    approved = ApprovalDecision(
        call_id="c1",
        tool_name="tickets__close_ticket",
        decision="approve",
        decided_by="alice",
        decided_at=moment,
        remember="session",
    )
    denied = approved.model_copy(
        update={"decision": "deny", "decided_by": "bob", "reason": "not now", "remember": None}
    )
    text = _printed(
        metadata_event(META_APPROVAL_REQUESTED, request),
        metadata_event(META_APPROVAL_DECIDED, approved),
        metadata_event(META_APPROVAL_DECIDED, denied),
    )
    local = moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    assert "⏸ asked for approval: this tool may change something" in text
    assert f"✓ approved by alice at {local} (for the rest of the session)" in text
    assert f"✗ denied by bob at {local}: not now" in text
