"""Waiting in tests for something that happens in the background, with a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def eventually(predicate: Callable[[], bool], *, what: str, within_s: float = 10.0) -> None:
    """Poll until ``predicate()`` holds; fail after ``within_s`` seconds, never wait longer."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not predicate():
        if loop.time() >= deadline:
            raise AssertionError(f"still waiting for {what} after {within_s:g} s")
        await asyncio.sleep(0.005)
