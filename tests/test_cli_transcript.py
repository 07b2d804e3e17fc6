"""Printing a stored ledger: messages, attachments and compaction boundaries."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from youyou.cli.transcript import print_transcript
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import CompactionMode, CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    LedgerEvent,
    Metadata,
    SessionEventPayload,
    UserMessage,
)


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
