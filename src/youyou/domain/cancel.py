"""Cooperative cancellation shared by turns, providers and tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class CancellationToken:
    """A one-way flag; callbacks fire once when it is cancelled."""

    __slots__ = ("_callbacks", "_event")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._callbacks: list[Callable[[], object]] = []

    def cancel(self) -> None:
        if self._event.is_set():
            return
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    @property
    def is_cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` on cancel (now if already cancelled); returns an unsubscribe."""
        if self.is_cancelled:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove
