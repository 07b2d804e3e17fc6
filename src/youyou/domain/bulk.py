"""Building many objects at once: loading a session's ledger and projecting it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while acyclic objects are built in bulk.

    Each collection walks the whole growing heap: resuming a 100 000-event session spent more
    time in its passes than in decoding and projecting the events.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
