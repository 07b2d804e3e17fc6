"""The cancellation token and ``unless_cancelled``, which stops work that ignores the token."""

from __future__ import annotations

import asyncio

import pytest

from youyou.domain.cancel import CancellationToken, unless_cancelled


async def test_callbacks_fire_once_and_a_late_one_fires_at_once() -> None:
    token = CancellationToken()
    fired: list[str] = []
    token.on_cancel(lambda: fired.append("early"))
    unsubscribe = token.on_cancel(lambda: fired.append("removed"))
    unsubscribe()
    token.cancel()
    token.cancel()
    token.on_cancel(lambda: fired.append("late"))
    assert fired == ["early", "late"]
    assert token.is_cancelled


async def test_work_that_ends_first_gives_its_result() -> None:
    assert await unless_cancelled(asyncio.sleep(0, "done"), CancellationToken()) == "done"


async def test_a_token_that_fires_first_stops_work_that_ignores_it() -> None:
    token = CancellationToken()
    stopped = asyncio.Event()

    async def deaf() -> str:
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()
        return "never"

    asyncio.get_running_loop().call_later(0.05, token.cancel)
    async with asyncio.timeout(5):
        assert await unless_cancelled(deaf(), token) is None
    assert stopped.is_set()


async def test_the_callers_own_cancel_still_raises_when_the_token_fired_too() -> None:
    token = CancellationToken()

    async def caller() -> str | None:
        return await unless_cancelled(asyncio.sleep(30, "never"), token)

    running = asyncio.create_task(caller())
    await asyncio.sleep(0.01)
    token.cancel()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
