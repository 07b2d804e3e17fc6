"""Metadata events carry typed values, written and read through one module."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from youyou.domain.config import MemoryMode
from youyou.domain.context import CompactionMode, CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    META_MEMORY_CHECKPOINT,
    META_MEMORY_MODE,
    META_SKILL_INVOCATIONS,
    LedgerEvent,
    Metadata,
    SystemMessage,
)
from youyou.domain.ledger_metadata import (
    MemoryCheckpoint,
    MemoryModeChange,
    SkillInvocation,
    SkillInvocations,
    metadata_event,
    read_metadata,
)

SRC = Path(__file__).resolve().parent.parent / "src" / "youyou"


def event(payload: Any, seq: int = 7) -> LedgerEvent:
    return LedgerEvent(seq=seq, timestamp=datetime(2026, 1, 1, tzinfo=UTC), payload=payload)


@pytest.mark.parametrize(
    ("key", "stored", "record"),
    [
        # the values ledgers written before the typed records already hold
        (
            META_MEMORY_CHECKPOINT,
            {"last_seq": 41, "turn_index": 10},
            MemoryCheckpoint(last_seq=41, turn_index=10),
        ),
        (META_MEMORY_MODE, {"mode": "manual"}, MemoryModeChange(mode=MemoryMode.MANUAL)),
        (
            META_SKILL_INVOCATIONS,
            [{"skill_name": "log-analysis"}],
            SkillInvocations((SkillInvocation(skill_name="log-analysis"),)),
        ),
        (
            META_CONTEXT_COMPACTION,
            {"mode": "summary", "replaces_through_seq": 12, "summary_body": "s"},
            CompactionRecord(
                mode=CompactionMode.SUMMARY, replaces_through_seq=12, summary_body="s"
            ),
        ),
    ],
)
def test_stored_values_read_back_as_their_records_and_are_written_the_same(
    key: str, stored: Any, record: BaseModel
) -> None:
    assert read_metadata(event(Metadata(key=key, value=stored)), type(record)) == record
    written = metadata_event(key, record)
    assert written.key == key
    assert read_metadata(event(written), type(record)) == record


def test_a_missing_event_is_none_and_a_malformed_value_fails_loudly() -> None:
    assert read_metadata(None, MemoryCheckpoint) is None
    with pytest.raises(ValidationError):
        read_metadata(
            event(Metadata(key=META_MEMORY_MODE, value={"mode": "sometimes"})), MemoryModeChange
        )
    with pytest.raises(ValidationError):
        read_metadata(
            event(Metadata(key=META_MEMORY_CHECKPOINT, value={"seq": 3})), MemoryCheckpoint
        )
    with pytest.raises(TypeError, match="event 7 is system_message"):
        read_metadata(event(SystemMessage(content="x")), MemoryCheckpoint)


def test_no_module_picks_values_out_of_metadata_payloads() -> None:
    """Metadata values are read through ``read_metadata`` only (the storage codec, which
    encodes whole events, never looks inside them)."""
    reading = re.compile(r"payload\.value\b|\.value\[|\.value\.get\(")
    offenders = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        if path.name != "ledger_metadata.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reading.search(line)
    ]
    assert offenders == []
