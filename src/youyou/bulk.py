"""Building objects in bulk: loading a session's ledger, projecting it, streaming a turn.

Not domain logic: it tunes the process's garbage collector and sets pydantic's internals
directly, so it sits outside the layers, for ``application`` and ``adapters`` alike."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)
_new = object.__new__
_set = object.__setattr__


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while acyclic objects are built in bulk.

    Each collection walks the whole growing heap: resuming a 100 000-event session spent more
    time in its passes than in decoding and projecting the events. What such a build makes
    lives as long as its session, so a pause that allocated more than a middle-generation
    collection would have seen ends by moving every young object straight to the oldest
    generation (``gc.freeze`` then ``gc.unfreeze``: two list splices) instead of walking them:
    left to itself the collector walks the new objects as young and again as middle-aged, and
    even one walk cost a resume of 2 000 messages 5-8 ms, a seventh of it. Cyclic garbage made
    just before the pause is then found by the next full collection instead of a young one.
    A program that froze objects itself (``gc.freeze`` before forking workers) keeps them
    frozen: then the pause ends with one collection of the young and middle generations.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            young, middle, _ = gc.get_threshold()
            if young and middle and gc.get_count()[0] > young * middle:
                _promote_young_objects()
            gc.enable()


def _promote_young_objects() -> None:
    if gc.get_freeze_count():  # unfreezing would thaw what the program froze
        gc.collect(1)
    else:
        gc.freeze()
        gc.unfreeze()


def built(model: type[Model], values: dict[str, Any]) -> Model:
    """``model.model_construct(**values)`` for values the kernel built itself, every field named.

    ``model_construct`` looks up aliases and defaults field by field; this costs a third of it,
    which counts when a resume converts thousands of messages, and in every turn, which builds
    an envelope per streamed event (a sixth of a streamed turn's instructions went to
    ``model_construct``). Only for plain models: no
    aliases, defaults left out, private attributes, post-init or extra fields (the tests check
    that the models built here stay so and that the result equals ``model_construct``'s).
    """
    instance = _new(model)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance
