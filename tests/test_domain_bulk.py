"""Bulk building: the collector pause and ``built``, the cheap constructor of converted messages."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from pydantic import BaseModel

from youyou.domain.bulk import built, collector_paused
from youyou.domain.content import TextBlock
from youyou.domain.model import ModelMessage, ModelMessageRole, ModelToolCall

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


def _collections_during(allocations: int) -> list[int]:
    """The generations the collector collected while ``collector_paused`` ended a build of
    ``allocations`` tracked objects."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(record)
    try:
        with collector_paused():
            kept = [[] for _ in range(allocations)]
        assert len(kept) == allocations
    finally:
        gc.callbacks.remove(record)
    return seen


def test_a_large_build_ends_with_one_collection_of_young_and_middle_generations() -> None:
    young, middle, _ = gc.get_threshold()
    assert _collections_during(young * middle * 2) == [1]


def test_a_small_build_leaves_collections_to_the_collector() -> None:
    young, _, _ = gc.get_threshold()
    assert _collections_during(young // 2) == []
