"""SqlSessionLeases (one writer per session) on a real SQLite file and a real PostgreSQL DB."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from youyou.adapters.storage import LeaseState, SqlSessionLeases
from youyou.adapters.storage.engine import create_engine
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import session_leases
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.ports.session_lease import SessionLeases

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TTL = 30.0


class Clock:
    """A hand-moved clock, so expiry needs no sleeping."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def leases(storage: SqlSessionStorage, clock: Clock) -> SqlSessionLeases:
    return SqlSessionLeases(storage.engine, clock=clock)


async def lease_row(storage: SqlSessionStorage, session_id: str) -> Any:
    async with storage.engine.connect() as conn:
        query = select(session_leases).where(session_leases.c.session_id == session_id)
        return (await conn.execute(query)).one_or_none()


async def test_a_live_lease_is_refused_and_an_expired_one_taken_over(
    leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.holder("s") is None
    assert await leases.acquire("s", "a", TTL) is None
    assert await leases.acquire("s", "b", TTL) == "a"
    assert await leases.holder("s") == "a"
    clock.advance(TTL - 1)
    assert await leases.acquire("s", "b", TTL) == "a"

    clock.advance(1)  # expires_at is now
    assert await leases.holder("s") is None
    assert await leases.acquire("s", "b", TTL) is None
    assert await leases.holder("s") == "b"
    assert await leases.renew("s", "a", TTL) is LeaseState.LOST
    assert await leases.acquire("s", "a", TTL) == "b"


async def test_leases_of_different_sessions_are_independent(leases: SqlSessionLeases) -> None:
    assert await leases.acquire("s-1", "a", TTL) is None
    assert await leases.acquire("s-2", "b", TTL) is None
    assert (await leases.holder("s-1"), await leases.holder("s-2")) == ("a", "b")


async def test_the_same_holder_refreshes_its_lease_and_clears_a_cancel_request(
    storage: SqlSessionStorage, leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.acquire("s", "a", TTL) is None
    assert await leases.request_cancel("s") is True
    clock.advance(TTL - 1)
    assert await leases.acquire("s", "a", TTL) is None

    row = await lease_row(storage, "s")
    assert (row.holder, row.acquired_at, row.cancel_requested) == ("a", T0, False)
    assert row.expires_at == clock.now + timedelta(seconds=TTL)
    clock.advance(TTL - 1)  # past the first expiry, within the refreshed one
    assert await leases.acquire("s", "b", TTL) == "a"
    assert await leases.renew("s", "a", TTL) is LeaseState.HELD


async def test_renew_extends_the_lease_and_reports_a_cancel_request(
    storage: SqlSessionStorage, leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.acquire("s", "a", TTL) is None
    clock.advance(TTL - 1)
    assert await leases.renew("s", "a", TTL) is LeaseState.HELD
    assert (await lease_row(storage, "s")).expires_at == clock.now + timedelta(seconds=TTL)
    clock.advance(TTL - 1)
    assert await leases.holder("s") == "a"

    assert await leases.request_cancel("s") is True
    assert await leases.renew("s", "a", TTL) is LeaseState.CANCEL_REQUESTED
    assert await leases.renew("s", "a", TTL) is LeaseState.CANCEL_REQUESTED  # until re-acquired
    assert await leases.renew("s", "b", TTL) is LeaseState.LOST
    assert await leases.renew("unknown", "a", TTL) is LeaseState.LOST


async def test_renew_all_extends_every_lease_of_a_holder_in_one_call(
    storage: SqlSessionStorage, leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.renew_all("a", TTL) == {}
    for session_id in ("s-1", "s-2", "s-3"):
        assert await leases.acquire(session_id, "a", TTL) is None
    assert await leases.acquire("other", "b", TTL) is None
    await leases.release("s-3", "a")
    assert await leases.request_cancel("s-2") is True
    clock.advance(TTL * 2)  # expired, but nobody took them over: still ours

    renewed = await leases.renew_all("a", TTL)

    assert renewed == {"s-1": LeaseState.HELD, "s-2": LeaseState.CANCEL_REQUESTED}
    for session_id in ("s-1", "s-2"):
        row = await lease_row(storage, session_id)
        assert row.expires_at == clock.now + timedelta(seconds=TTL)
    assert await leases.holder("other") is None  # b's lease was not touched
    assert await leases.acquire("s-1", "b", TTL) == "a"


async def test_an_expired_lease_nobody_took_over_is_still_renewed(
    leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.acquire("s", "a", TTL) is None
    clock.advance(TTL * 3)
    assert await leases.holder("s") is None
    assert await leases.renew("s", "a", TTL) is LeaseState.HELD
    assert await leases.holder("s") == "a"


async def test_cancel_can_only_be_requested_on_a_live_lease(
    storage: SqlSessionStorage, leases: SqlSessionLeases, clock: Clock
) -> None:
    assert await leases.request_cancel("s") is False
    assert await leases.acquire("s", "a", TTL) is None
    clock.advance(TTL)
    assert await leases.request_cancel("s") is False
    assert (await lease_row(storage, "s")).cancel_requested is False


async def test_only_the_holder_releases_its_lease(
    storage: SqlSessionStorage, leases: SqlSessionLeases
) -> None:
    assert await leases.acquire("s", "a", TTL) is None
    await leases.release("s", "b")
    assert await leases.holder("s") == "a"
    await leases.release("s", "a")
    assert await lease_row(storage, "s") is None
    assert await leases.renew("s", "a", TTL) is LeaseState.LOST
    await leases.release("s", "a")  # nothing left to release
    assert await leases.acquire("s", "b", TTL) is None


async def test_the_storage_hands_out_leases_over_its_own_engine(
    storage: SqlSessionStorage,
) -> None:
    leases: SessionLeases = storage.leases()
    assert await leases.acquire("s", "a", TTL) is None
    assert await SqlSessionLeases(storage.engine).holder("s") == "a"


async def test_exactly_one_of_two_processes_wins_each_race(db_url: str) -> None:
    first, second = await SqlSessionStorage.open(db_url), await SqlSessionStorage.open(db_url)
    try:
        contenders = {"first": first.leases(), "second": second.leases()}
        for n in range(20):
            session_id = f"race-{n}"
            results = await asyncio.gather(
                *(leases.acquire(session_id, name, TTL) for name, leases in contenders.items())
            )
            winners = [name for name, r in zip(contenders, results, strict=True) if r is None]
            assert len(winners) == 1, results
            (winner,) = winners
            assert [r for r in results if r is not None] == [winner]
            assert await first.leases().holder(session_id) == winner
    finally:
        await first.close()
        await second.close()


async def test_database_failures_are_storage_errors(db_url: str) -> None:
    engine = create_engine(db_url)  # never migrated: there is no session_leases table
    try:
        with pytest.raises(AgentError) as caught:
            await SqlSessionLeases(engine).acquire("s", "a", TTL)
    finally:
        await engine.dispose()
    assert caught.value.code is ErrorCode.STORAGE_ERROR
    assert caught.value.source is ErrorSource.STORAGE
    assert "acquiring the lease of session 's'" in caught.value.message
