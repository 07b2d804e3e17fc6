"""Versioned JSON encoding of ledger events and its upgrade hook."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from youyou.adapters.storage import codec
from youyou.adapters.storage.codec import (
    HeadSlot,
    decode_event,
    decode_events,
    encode_event,
    head_slot,
)
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import (
    LEDGER_SCHEMA_VERSION,
    LedgerEvent,
    Metadata,
    SystemMessage,
)

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _event(payload: Any) -> LedgerEvent:
    return LedgerEvent(seq=1, timestamp=AT, payload=payload)


def test_encoding_is_model_dump_json_with_the_schema_version() -> None:
    event = _event(SystemMessage(content="hi"))
    document = encode_event(event)
    assert document == event.model_dump_json()
    assert json.loads(document)["schema_version"] == LEDGER_SCHEMA_VERSION
    assert decode_event(document, LEDGER_SCHEMA_VERSION) == event


@pytest.fixture
def old_row(monkeypatch: pytest.MonkeyPatch) -> str:
    """A row of the previous schema version whose system message was called ``text``, with
    the upgrade step that lifts it to the current shape."""

    def rename_text(data: dict[str, Any]) -> dict[str, Any]:
        data["payload"]["content"] = data["payload"].pop("text")
        return data

    monkeypatch.setitem(codec._UPGRADES, LEDGER_SCHEMA_VERSION - 1, rename_text)
    return json.dumps(
        {
            "seq": 1,
            "timestamp": AT.isoformat(),
            "payload": {"kind": "system_message", "text": "hi"},
            "schema_version": LEDGER_SCHEMA_VERSION - 1,
        }
    )


def test_older_documents_go_through_the_upgrade_steps(old_row: str) -> None:
    decoded = decode_event(old_row, LEDGER_SCHEMA_VERSION - 1)
    assert decoded == _event(SystemMessage(content="hi"))


@pytest.mark.parametrize(
    ("document", "version"),
    [("{}", LEDGER_SCHEMA_VERSION), ("not json", LEDGER_SCHEMA_VERSION), ("{}", 99)],
)
def test_undecodable_rows_are_storage_errors(document: str, version: int) -> None:
    with pytest.raises(AgentError) as exc:
        decode_event(document, version)
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert not exc.value.retryable


def test_values_that_are_not_json_are_storage_errors() -> None:
    with pytest.raises(AgentError) as exc:
        encode_event(_event(Metadata(key="k", value=object())))
    assert exc.value.code is ErrorCode.STORAGE_ERROR


@pytest.mark.parametrize(
    ("key", "slot"),
    [
        ("session_profile", HeadSlot.PROFILE),
        ("context_compaction", HeadSlot.COMPACTION),
        ("memory_checkpoint", HeadSlot.CHECKPOINT),
        ("skill_invocations", None),
    ],
)
def test_head_slots_of_metadata_events(key: str, slot: HeadSlot | None) -> None:
    assert head_slot(_event(Metadata(key=key, value={}))) is slot
    assert head_slot(_event(SystemMessage(content=key))) is None


def test_a_batch_decodes_as_row_by_row() -> None:
    events = [
        LedgerEvent(seq=seq, timestamp=AT, payload=SystemMessage(content=f"m{seq}"))
        for seq in range(1, 6)
    ]
    rows = [(encode_event(e), LEDGER_SCHEMA_VERSION) for e in events]
    assert decode_events(rows) == events
    assert decode_events([]) == []


def test_a_batch_with_an_older_row_lifts_it(old_row: str) -> None:
    new = LedgerEvent(seq=2, timestamp=AT, payload=SystemMessage(content="there"))
    rows = [
        (old_row, LEDGER_SCHEMA_VERSION - 1),
        (encode_event(new), LEDGER_SCHEMA_VERSION),
    ]
    assert decode_events(rows) == [_event(SystemMessage(content="hi")), new]


def test_a_batch_row_that_is_not_one_event_is_a_storage_error() -> None:
    """Joining documents into one array must not let a damaged row become two events."""
    one = encode_event(_event(SystemMessage(content="hi")))
    with pytest.raises(AgentError) as exc:
        decode_events([(f"{one},{one}", LEDGER_SCHEMA_VERSION)])
    assert exc.value.code is ErrorCode.STORAGE_ERROR
