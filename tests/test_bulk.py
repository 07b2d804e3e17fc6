"""Bulk building: the collector pause and ``built``, the cheap constructor of the objects the
kernel makes itself (converted messages, ledger events, stream events, requests)."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from youyou.bulk import built, collector_paused
from youyou.domain.content import TextBlock
from youyou.domain.events import AgentEvent, TextDeltaEvent
from youyou.domain.ledger import LEDGER_SCHEMA_VERSION, LedgerEvent, UserMessage
from youyou.domain.model import ChatRequest, ModelMessage, ModelMessageRole, ModelToolCall

T0 = datetime(2026, 1, 1, tzinfo=UTC)

CALL = {"call_id": "c1", "tool_name": "grep", "arguments": {"pattern": "x"}}
MESSAGE = {
    "role": ModelMessageRole.ASSISTANT,
    "content": (TextBlock(text="hi"),),
    "tool_call_id": None,
    "tool_calls": (ModelToolCall(**CALL),),
}
CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (ModelMessage, MESSAGE),
    (ModelToolCall, CALL),
    (TextBlock, {"type": "text", "text": "hi"}),
    (
        LedgerEvent,
        {
            "seq": 2,
            "timestamp": T0,
            "payload": UserMessage(content=(TextBlock(text="hi"),)),
            "schema_version": LEDGER_SCHEMA_VERSION,
        },
    ),
    (TextDeltaEvent, {"type": "text_delta", "text": "hi"}),
    (
        AgentEvent,
        {
            "session_id": "s1",
            "turn_id": "t1",
            "timestamp": T0,
            "sequence": 1,
            "payload": TextDeltaEvent(text="hi"),
        },
    ),
    (
        ChatRequest,
        {
            "model_id": "m",
            "system_prompt": "be brief",
            "messages": (ModelMessage(**MESSAGE),),
            "tools": (),
            "temperature": None,
            "max_tokens": None,
            "reasoning_effort": None,
        },
    ),
]


@pytest.mark.parametrize(("model", "values"), CASES)
def test_built_equals_model_construct_and_validation(
    model: type[BaseModel], values: dict[str, Any]
) -> None:
    fast = built(model, dict(values))
    assert fast == model.model_construct(**values) == model.model_validate(values)
    assert fast.model_fields_set == set(values)
    assert fast.model_dump() == model.model_validate(values).model_dump()
    copy = fast.model_copy(update={next(iter(values)): values[next(iter(values))]})
    assert copy == fast and copy.model_fields_set is not fast.model_fields_set


@pytest.mark.parametrize(("model", "values"), CASES)
def test_models_built_cheaply_stay_plain(model: type[BaseModel], values: dict[str, Any]) -> None:
    # What ``built`` skips must not exist on them: aliases, private attributes, post-init.
    assert set(values) == set(model.model_fields)
    assert all(f.alias is None and f.validation_alias is None for f in model.model_fields.values())
    assert not model.__private_attributes__ and model.__pydantic_post_init__ is None
    assert model.model_config.get("extra") != "allow"


def test_frozen_models_built_cheaply_stay_frozen() -> None:
    message = built(ModelMessage, dict(MESSAGE))
    with pytest.raises(ValueError, match="frozen"):
        message.role = ModelMessageRole.USER  # type: ignore[misc]


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_pause_restores_the_previous_state(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _build(allocations: int) -> tuple[list[list[int]], list[int]]:
    """``allocations`` tracked objects built under ``collector_paused``, and the generations
    the collector collected meanwhile."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(record)
    try:
        with collector_paused():
            kept: list[list[int]] = [[] for _ in range(allocations)]
    finally:
        gc.callbacks.remove(record)
    return kept, seen


def _in_generation(objects: list[list[int]], generation: int) -> bool:
    ids = {id(o) for o in gc.get_objects(generation)}
    return all(id(o) in ids for o in objects)


def test_a_large_build_moves_its_objects_to_the_oldest_generation_without_a_collection() -> None:
    young, middle, _ = gc.get_threshold()
    kept, collections = _build(young * middle * 2)
    assert collections == []
    assert _in_generation(kept, 2)
    assert gc.get_count()[0] < young  # the next allocation does not start a collection
    assert gc.get_freeze_count() == 0


def test_a_small_build_leaves_collections_to_the_collector() -> None:
    young, _, _ = gc.get_threshold()
    kept, collections = _build(young // 2)
    assert collections == []
    assert _in_generation(kept, 0)


def test_cyclic_garbage_moved_along_is_still_collected_by_a_full_collection() -> None:
    young, middle, _ = gc.get_threshold()
    collected: list[int] = []

    class Node:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            collected.append(1)

    gc.collect()
    Node()  # garbage only the collector can free, young when the pause starts
    with collector_paused():
        kept: list[list[object]] = [[] for _ in range(young * middle * 2)]
    assert len(kept) == young * middle * 2
    assert collected == []  # not walked: moved to the oldest generation
    gc.collect()
    assert collected == [1]


def test_objects_the_program_froze_stay_frozen() -> None:
    young, middle, _ = gc.get_threshold()
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        kept, collections = _build(young * middle * 2)
        assert gc.get_freeze_count() == frozen
        assert collections == [1]  # one walk of the young and middle generations instead
        assert _in_generation(kept, 2)
    finally:
        gc.unfreeze()
