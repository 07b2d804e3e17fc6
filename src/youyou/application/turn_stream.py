"""The event channel of one running turn: ordered envelopes, cancel token, outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import datetime

from youyou.bulk import built
from youyou.domain.cancel import CancellationToken
from youyou.domain.events import AgentEvent, AgentEventPayload
from youyou.domain.turn import TurnOutcome


class TurnChannel:
    """``sequence`` starts at 1 for every turn; the stream ends after the outcome is set."""

    def __init__(self, session_id: str, turn_id: str, clock: Callable[[], datetime]) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.cancel_token = CancellationToken()
        self._clock = clock
        self._sequence = 0
        self._queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self._outcome: asyncio.Future[TurnOutcome] = asyncio.get_running_loop().create_future()

    def emit(self, payload: AgentEventPayload) -> None:
        self._sequence += 1
        self._queue.put_nowait(
            built(
                AgentEvent,
                {
                    "session_id": self.session_id,
                    "turn_id": self.turn_id,
                    "timestamp": self._clock(),
                    "sequence": self._sequence,
                    "payload": payload,
                },
            )
        )

    def finish(self, outcome: TurnOutcome) -> None:
        if not self._outcome.done():
            self._outcome.set_result(outcome)
            self._queue.put_nowait(None)

    def cancel(self) -> None:
        """Idempotent; after the outcome is decided it changes nothing."""
        if not self._outcome.done():
            self.cancel_token.cancel()

    async def join(self) -> TurnOutcome:
        return await asyncio.shield(self._outcome)

    async def events(self) -> AsyncIterator[AgentEvent]:
        while True:
            event = await self._queue.get()
            if event is None:
                self._queue.put_nowait(None)  # later iterators end too
                return
            yield event
