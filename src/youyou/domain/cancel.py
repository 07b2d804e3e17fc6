"""Cooperative cancellation shared by turns, providers and tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


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


async def unless_cancelled(work: Awaitable[T], cancel: CancellationToken) -> T | None:
    """``work``'s result, or None when ``cancel`` fires first: ``work`` is then cancelled, so
    a provider that does not watch its token is stopped all the same. A cancel of the caller
    itself still raises."""
    task = asyncio.ensure_future(work)
    unsubscribe = cancel.on_cancel(task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if not cancel.is_cancelled or (current is not None and current.cancelling()):
            raise
        return None
    finally:
        unsubscribe()
