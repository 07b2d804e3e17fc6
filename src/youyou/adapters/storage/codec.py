"""Versioned JSON encoding of ledger events, shared by every session storage adapter.

Rows keep the exact text of ``LedgerEvent.model_dump_json()``; a row written by an older
``schema_version`` is lifted step by step through ``_UPGRADES`` before validation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter, ValidationError

from youyou.adapters.storage.errors import storage_error
from youyou.bulk import collector_paused
from youyou.domain.ledger import (
    LEDGER_SCHEMA_VERSION,
    META_CONTEXT_COMPACTION,
    META_MEMORY_CHECKPOINT,
    META_MEMORY_MODE,
    META_SESSION_PROFILE,
    LedgerEvent,
    Metadata,
)

_EVENT: TypeAdapter[LedgerEvent] = TypeAdapter(LedgerEvent)
_EVENTS: TypeAdapter[list[LedgerEvent]] = TypeAdapter(list[LedgerEvent])

# Version N -> N+1 document rewrites. v1 is the first version, so there is none yet; a v2
# schema registers ``_UPGRADES[1]`` here and old rows keep loading unchanged.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


class HeadSlot(StrEnum):
    """Metadata events the session head points at, so resume reads them without a scan."""

    PROFILE = META_SESSION_PROFILE
    COMPACTION = META_CONTEXT_COMPACTION
    CHECKPOINT = META_MEMORY_CHECKPOINT
    MEMORY_MODE = META_MEMORY_MODE


def encode_event(event: LedgerEvent) -> str:
    try:
        return event.model_dump_json()
    except ValueError as exc:  # a metadata value that is not JSON
        raise storage_error(f"encoding event {event.seq}", exc) from exc


def decode_event(document: str, schema_version: int) -> LedgerEvent:
    try:
        if schema_version == LEDGER_SCHEMA_VERSION:
            return _EVENT.validate_json(document)
        return _EVENT.validate_python(_upgrade(json.loads(document), schema_version))
    except (ValidationError, ValueError) as exc:
        raise storage_error("decoding a stored event", exc) from exc


def decode_events(rows: Sequence[tuple[str, int]]) -> list[LedgerEvent]:
    """Decode ``(document, schema_version)`` rows in order, as ``decode_event`` would one by one.

    Rows of the current version (all of them, unless an old kernel wrote some) are joined into
    one JSON array and validated in one call, with the cyclic garbage collector paused (at
    100 000 events its passes cost more than the decoding itself: 1.4 s against 0.4 s).
    """
    if not rows:
        return []
    documents, versions = zip(*rows, strict=True)  # two C-level passes instead of generators
    if set(versions) != {LEDGER_SCHEMA_VERSION}:
        return [decode_event(document, version) for document, version in rows]
    try:
        with collector_paused():
            events = _EVENTS.validate_json("[" + ",".join(documents) + "]")
    except (ValidationError, ValueError) as exc:
        raise storage_error("decoding a stored event", exc) from exc
    if len(events) != len(rows):  # a document that is not one JSON object
        raise storage_error(f"decoding stored events: {len(rows)} rows gave {len(events)} events")
    return events


def _upgrade(data: dict[str, Any], version: int) -> dict[str, Any]:
    if version > LEDGER_SCHEMA_VERSION:
        raise ValueError(f"event schema v{version} is newer than v{LEDGER_SCHEMA_VERSION}")
    while version < LEDGER_SCHEMA_VERSION:
        data = _UPGRADES[version](data)
        version += 1
        data["schema_version"] = version
    return data


def metadata_key(event: LedgerEvent) -> str | None:
    return event.payload.key if isinstance(event.payload, Metadata) else None


_SLOTS = {slot.value: slot for slot in HeadSlot}


def head_slot(event: LedgerEvent) -> HeadSlot | None:
    key = metadata_key(event)
    return None if key is None else _SLOTS.get(key)
