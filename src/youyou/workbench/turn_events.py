"""The events that end a turn's stream: the last frame of a turn, here and in the frames
copied for a client of another process (``relay.py``)."""

from __future__ import annotations

TURN_END_EVENTS = frozenset({"turn_complete", "turn_cancelled", "error"})
