"""The sessions a server process holds open: claims, resume on demand, reopening after another
process wrote, closing when idle. Real agents over a real SQLite ledger; the same behaviour
through two real server processes is in test_workbench_processes.py."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from kernel_kit import build_agent, text
from waiting import eventually
from youyou import Agent, AgentConfig
from youyou.adapters.storage import LeaseState
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.open_sessions import LeaseTaker, OpenSessions

HOLDER = "test-process"
OWNER = "user-1"


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(sqlite_url)
    yield opened
    await opened.close()


async def agent_on(storage: SqlSessionStorage, *answers: str) -> Agent:
    agent, _ = await build_agent(
        [text(answer) for answer in answers],
        config=AgentConfig(default_model="m1", max_active_sessions=10),
        configure=lambda builder: builder.register_session_storage(storage),
    )
    return agent


def open_sessions(agent: Agent, storage: SqlSessionStorage, idle_s: float = 60.0) -> OpenSessions:
    lease = LeaseTaker(storage.leases(), HOLDER, ttl_s=30.0)
    return OpenSessions(
        agent, storage, lease, idle_s=idle_s, close_timeout_s=5.0, user_open_sessions=100
    )


async def say(agent: Agent, session_id: str, message: str) -> None:
    """One turn through a session resumed and closed by ``agent``, as another process would."""
    handle = await agent.resume_session(session_id)
    await (await handle.send_message(message)).join()
    await handle.close(extract_memories=False)


async def lease_released(storage: SqlSessionStorage, session_id: str) -> None:
    """Closing releases the lease it took, right after the session is closed."""
    for _ in range(250):
        if await storage.leases().holder(session_id) is None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the lease of {session_id} is still held")


@asynccontextmanager
async def reaping(sessions: OpenSessions) -> AsyncIterator[None]:
    reaper = asyncio.create_task(sessions.reap_idle())
    try:
        yield
    finally:
        reaper.cancel()
        await asyncio.gather(reaper, return_exceptions=True)


async def test_a_claimed_session_is_busy_until_it_is_released(storage: SqlSessionStorage) -> None:
    sessions = open_sessions(await agent_on(storage), storage)
    await sessions.claim("ledger-1")
    assert sessions.any_claimed
    with pytest.raises(ApiError) as refused:
        await sessions.claim("ledger-1")
    assert refused.value.code is ApiCode.TURN_BUSY
    await sessions.claim("ledger-2")  # another session is not affected
    sessions.unclaim("ledger-1")
    await sessions.claim("ledger-1")


async def test_a_session_is_resumed_on_demand_and_reopened_after_another_writer(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage, "first answer")
    created = await agent.new_session()
    await (await created.send_message("hello")).join()
    await created.close(extract_memories=False)
    sessions = open_sessions(agent, storage)

    handle = await sessions.handle(created.session_id, OWNER)
    assert len(sessions) == 1
    assert handle.last_seq == created.last_seq
    assert await sessions.handle(created.session_id, OWNER) is handle  # kept open

    other_process = await agent_on(storage, "second answer")
    await say(other_process, created.session_id, "again")
    reopened = await sessions.handle(created.session_id, OWNER)
    assert reopened is not handle
    assert reopened.last_seq == await storage.last_seq(created.session_id) > handle.last_seq
    assert len(sessions) == 1


async def test_idle_sessions_are_closed_but_a_claimed_one_stays_open(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    sessions = open_sessions(agent, storage, idle_s=0.05)
    idle, busy = await agent.new_session(), await agent.new_session()
    sessions.add(idle, OWNER)
    sessions.add(busy, OWNER)
    await sessions.claim(busy.session_id)
    async with reaping(sessions):
        await eventually(lambda: idle.is_closed, what="the idle session closed")
        assert len(sessions) == 1
        assert not busy.is_closed
        assert await sessions.handle(busy.session_id, OWNER) is busy
        await lease_released(storage, idle.session_id)


async def test_the_reaper_keeps_a_session_whose_lease_another_process_holds(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    sessions = open_sessions(agent, storage, idle_s=0.02)
    handle = await agent.new_session()
    sessions.add(handle, OWNER)
    assert await storage.leases().acquire(handle.session_id, "other-process", 30.0) is None
    async with reaping(sessions):
        await asyncio.sleep(0.2)  # several passes of the reaper
        assert len(sessions) == 1
        assert not handle.is_closed
        await storage.leases().release(handle.session_id, "other-process")
        await eventually(lambda: handle.is_closed, what="the freed session closed")
        assert len(sessions) == 0


async def test_close_all_closes_every_session_and_releases_its_lease(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    sessions = open_sessions(agent, storage)
    handles = [await agent.new_session() for _ in range(3)]
    for handle in handles:
        sessions.add(handle, OWNER)
    await sessions.close_all()
    assert len(sessions) == 0
    for handle in handles:
        assert handle.is_closed
        assert await storage.leases().holder(handle.session_id) is None


async def test_the_lease_taker_tells_a_live_holder_elsewhere_from_itself_and_the_ended(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    session_id = (await agent.new_session()).session_id
    ours = LeaseTaker(storage.leases(), HOLDER, ttl_s=30.0)
    theirs = LeaseTaker(storage.leases(), "other-process", ttl_s=30.0)
    assert await ours.take(session_id) is None
    assert await ours.held_elsewhere(session_id) is None  # our own lease
    assert await theirs.held_elsewhere(session_id) == HOLDER
    assert await ours.renew_all() == {session_id: LeaseState.HELD}
    await theirs.request_cancel(session_id)
    assert await ours.renew_all() == {session_id: LeaseState.CANCEL_REQUESTED}
    await ours.release(session_id)
    assert await theirs.held_elsewhere(session_id) is None
    assert await ours.renew_all() == {}

    ended = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await ended.wait()
    gone_holder = f"youyou serve, pid {ended.pid} on {socket.gethostname()}"
    gone = LeaseTaker(storage.leases(), gone_holder, ttl_s=30.0)
    assert await gone.take(session_id) is None
    assert await ours.held_elsewhere(session_id) is None  # a process of this machine that ended
