"""The sessions a server process holds open: resume on demand, a handle that reloads itself after
another process wrote, closing when idle unless busy. Real agents with session leases over a
real SQLite ledger; the same behaviour through two real server processes is in
test_workbench_processes.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from kernel_kit import build_agent, text
from waiting import eventually
from youyou import Agent, AgentConfig
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.ledger import UserMessage
from youyou.domain.turn import OutcomeStatus
from youyou.workbench.open_sessions import OpenSessions

HOLDER = "test-process"
OWNER = "user-1"


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(sqlite_url)
    yield opened
    await opened.close()


async def agent_on(
    storage: SqlSessionStorage, *answers: str, holder: str = HOLDER, delay_s: float = 0.0
) -> Agent:
    """An agent writing ``storage`` under session leases as ``holder`` (a process)."""
    agent, _ = await build_agent(
        [text(answer, chunks=len(answer.split()), delay_s=delay_s) for answer in answers],
        config=AgentConfig(default_model="m1", max_active_sessions=10),
        configure=lambda builder: builder.register_session_storage(storage).register_session_leases(
            storage.leases(), holder=holder, ttl_s=30.0
        ),
    )
    return agent


def open_sessions(agent: Agent, idle_s: float = 60.0) -> OpenSessions:
    return OpenSessions(agent, idle_s=idle_s, close_timeout_s=5.0, user_open_sessions=100)


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


async def test_a_cached_session_reloads_itself_after_another_process_wrote(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage, "first answer", "third answer")
    created = await agent.new_session()
    await (await created.send_message("hello")).join()
    await created.close(extract_memories=False)
    sessions = open_sessions(agent)

    handle = await sessions.handle(created.session_id, OWNER)
    assert len(sessions) == 1
    assert handle.last_seq == created.last_seq
    assert await sessions.handle(created.session_id, OWNER) is handle  # kept open

    other_process = await agent_on(storage, "second answer", holder="other-process")
    await say(other_process, created.session_id, "again")
    assert await sessions.handle(created.session_id, OWNER) is handle, "no read per request"
    turn = await handle.send_message("and once more")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert handle.reloads == 1, "the other process's turn was read before writing"
    assert handle.last_seq == await storage.last_seq(created.session_id)
    users = [
        e.payload.content[0].text  # type: ignore[union-attr]
        for e in await storage.load_events(created.session_id)
        if isinstance(e.payload, UserMessage)
    ]
    assert users == ["hello", "again", "and once more"]


async def test_idle_sessions_are_closed_but_one_running_a_turn_stays_open(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage, "a slow answer " * 10, delay_s=0.05)
    sessions = open_sessions(agent, idle_s=0.05)
    idle, busy = await agent.new_session(), await agent.new_session()
    sessions.add(idle, OWNER)
    sessions.add(busy, OWNER)
    turn = await busy.send_message("take your time")
    async with reaping(sessions):
        # the handle closes a moment before the cache lets it go
        await eventually(
            lambda: idle.is_closed and len(sessions) == 1, what="the idle session closed"
        )
        assert not busy.is_closed
        assert await sessions.handle(busy.session_id, OWNER) is busy
        await lease_released(storage, idle.session_id)
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        await eventually(lambda: busy.is_closed, what="the session closed once idle")


async def test_the_reaper_keeps_a_session_whose_lease_another_process_holds(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    sessions = open_sessions(agent, idle_s=0.02)
    handle = await agent.new_session()
    sessions.add(handle, OWNER)
    assert await storage.leases().acquire(handle.session_id, "other-process", 30.0) is None
    async with reaping(sessions):
        await asyncio.sleep(0.2)  # several passes of the reaper
        assert len(sessions) == 1
        assert not handle.is_closed
        await storage.leases().release(handle.session_id, "other-process")
        await eventually(
            lambda: handle.is_closed and len(sessions) == 0, what="the freed session closed"
        )


async def test_close_all_closes_every_session_and_releases_its_lease(
    storage: SqlSessionStorage,
) -> None:
    agent = await agent_on(storage)
    sessions = open_sessions(agent)
    handles = [await agent.new_session() for _ in range(3)]
    for handle in handles:
        sessions.add(handle, OWNER)
    await sessions.close_all()
    assert len(sessions) == 0
    for handle in handles:
        assert handle.is_closed
        assert await storage.leases().holder(handle.session_id) is None
