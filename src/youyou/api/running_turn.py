"""Handle of a running turn: its event stream, its controller and its outcome.

See docs/architecture.md, 'A turn'.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from youyou.application.turn_stream import TurnChannel
from youyou.domain.events import AgentEvent
from youyou.domain.turn import TurnOutcome


class TurnController:
    """Cloneable cancel handle; cancel is idempotent and never rewrites a decided outcome."""

    __slots__ = ("_channel",)

    def __init__(self, channel: TurnChannel) -> None:
        self._channel = channel

    def cancel(self) -> None:
        self._channel.cancel()

    @property
    def turn_id(self) -> str:
        return self._channel.turn_id


class RunningTurn:
    def __init__(self, channel: TurnChannel) -> None:
        self._channel = channel
        self._events = channel.events()

    @property
    def turn_id(self) -> str:
        return self._channel.turn_id

    @property
    def events(self) -> AsyncIterator[AgentEvent]:
        """Consuming the events is optional: ``join()`` works either way."""
        return self._events

    def controller(self) -> TurnController:
        return TurnController(self._channel)

    def cancel(self) -> None:
        self._channel.cancel()

    async def join(self) -> TurnOutcome:
        return await self._channel.join()

    async def collect(self) -> list[AgentEvent]:
        """All events until the turn ends (convenience for scripts and tests)."""
        return [event async for event in self._events]
