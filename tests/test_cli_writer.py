"""The terminal client's session lease: what a renewal does when the lease is no longer ours."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from waiting import eventually
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.cli import writer as writer_module
from youyou.cli.writer import SessionWriter


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


@pytest.fixture(autouse=True)
def quick_renewals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "LEASE_TTL_S", 0.3)  # a renewal every 0.1 s


async def test_a_lease_taken_over_by_another_process_stops_what_runs(
    storage: SqlSessionStorage,
) -> None:
    writer = SessionWriter(storage)
    leases = storage.leases()
    lost = asyncio.Event()
    async with writer.hold("s-1", lost.set):
        await asyncio.sleep(0.35)  # renewals keep it ours past its first expiry
        assert await leases.holder("s-1") == writer.holder and not lost.is_set()
        await leases.release("s-1", writer.holder)  # as if it had expired and was taken
        assert await leases.acquire("s-1", "youyou serve on other-host", 30) is None
        await eventually(lost.is_set, what="the lost lease noticed")
    assert await leases.holder("s-1") == "youyou serve on other-host"  # left to its holder


async def test_a_cancel_asked_on_the_lease_by_another_process_stops_what_runs(
    storage: SqlSessionStorage,
) -> None:
    writer = SessionWriter(storage)
    cancelled = asyncio.Event()
    async with writer.hold("s-2", cancelled.set):
        assert await storage.leases().request_cancel("s-2")
        await eventually(cancelled.is_set, what="the cancel noticed")
