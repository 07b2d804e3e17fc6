"""Cooperative cancellation shared by turns, providers and tools."""

from __future__ import annotations

import asyncio


class CancellationToken:
    """A one-way flag; a child token is cancelled whenever its parent is."""

    __slots__ = ("_children", "_event")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._children: list[CancellationToken] = []

    def cancel(self) -> None:
        if self._event.is_set():
            return
        self._event.set()
        for child in self._children:
            child.cancel()

    @property
    def is_cancelled(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    def child(self) -> CancellationToken:
        token = CancellationToken()
        if self.is_cancelled:
            token.cancel()
        else:
            self._children.append(token)
        return token
