"""One writer per session across processes, as a kernel capability: two agents on one database
(SQLite file and PostgreSQL), each with its own connection pool, stand for two processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest

from kernel_kit import RecordingTool, build_agent, text
from waiting import eventually
from youyou import Agent, AgentBuilder, ScriptedProvider, ScriptedResponse
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage import SqlSessionLeases
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import (
    META_MEMORY_CHECKPOINT,
    AssistantMessage,
    Metadata,
    ToolResult,
    UserMessage,
)
from youyou.domain.turn import OutcomeStatus

TTL_S = 0.3  # a renewal every 0.1 s


@dataclass
class Process:
    agent: Agent
    provider: ScriptedProvider
    storage: SqlSessionStorage

    def leases(self) -> SqlSessionLeases:
        return self.storage.leases()

    async def user_texts(self, session_id: str) -> list[str]:
        return [
            e.payload.content[0].text  # type: ignore[union-attr]
            for e in await self.storage.load_events(session_id)
            if isinstance(e.payload, UserMessage)
        ]


@asynccontextmanager
async def process(
    db_url: str,
    holder: str | None,
    responses: Sequence[ResponseSource] = (),
    memories: InMemoryMemoryStorage | None = None,
    tools: Sequence[RecordingTool] = (),
) -> AsyncIterator[Process]:
    """An agent on its own storage; ``holder`` None: without session leases."""
    storage = await SqlSessionStorage.open(db_url)

    def configure(builder: AgentBuilder) -> AgentBuilder:
        builder.register_session_storage(storage)
        if memories is not None:
            builder.register_memory_storage(memories)
        if holder is not None:
            builder.register_session_leases(storage.leases(), holder=holder, ttl_s=TTL_S)
        return builder

    try:
        agent, provider = await build_agent(responses, tools=tools, configure=configure)
        try:
            yield Process(agent, provider, storage)
        finally:
            await agent.shutdown()
    finally:
        await storage.close()


def slow(words: int = 20) -> ResponseSource:
    """An answer of ``words`` chunks, 0.05 s apart (a cancel stops it between two)."""
    return text("w " * words, chunks=words, delay_s=0.05)


async def test_a_turn_holds_the_lease_renewed_past_its_expiry_and_gives_it_back(
    db_url: str,
) -> None:
    async with process(db_url, "process A", [slow()]) as a:
        session = await a.agent.new_session()
        turn = await session.send_message("hello")
        await asyncio.sleep(2 * TTL_S)  # past the first expiry: the renewals keep it ours
        assert await a.leases().holder(session.session_id) == "process A"
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        assert await a.leases().holder(session.session_id) is None  # given back at the end


async def test_a_second_writer_gets_one_session_busy_error_and_stores_nothing(
    db_url: str,
) -> None:
    async with (
        process(db_url, "process A", [text("first answer"), slow(40)]) as a,
        process(db_url, "process B", [text("second answer")]) as b,
    ):
        mine = await a.agent.new_session()
        assert (await (await mine.send_message("first")).join()).status is OutcomeStatus.COMPLETED
        theirs = await b.agent.resume_session(mine.session_id)
        running = await mine.send_message("from A")
        for write in (lambda: theirs.send_message("from B"), theirs.compact):
            with pytest.raises(AgentError) as refused:
                await write()
            assert refused.value.code is ErrorCode.SESSION_BUSY
            assert "is in use by another process (process A)" in refused.value.message
        assert await b.user_texts(mine.session_id) == ["first", "from A"]
        assert (await running.join()).status is OutcomeStatus.COMPLETED
        # once A's turn has ended, B writes: after reloading what A appended meanwhile
        assert (await (await theirs.send_message("from B")).join()).status is (
            OutcomeStatus.COMPLETED
        )
        assert theirs.reloads == 1
        assert await a.user_texts(mine.session_id) == ["first", "from A", "from B"]


async def test_a_handle_reloads_a_session_another_process_appended_to_before_writing(
    db_url: str,
) -> None:
    async with (
        process(db_url, "process A", [text("one answered"), text("three answered")]) as a,
        process(db_url, "process B", [text("two answered")]) as b,
    ):
        mine = await a.agent.new_session()
        await (await mine.send_message("one")).join()
        theirs = await b.agent.resume_session(mine.session_id)
        await (await theirs.send_message("two")).join()
        outcome = await (await mine.send_message("three")).join()
        assert outcome.status is OutcomeStatus.COMPLETED, outcome.error
        assert (mine.reloads, theirs.reloads) == (1, 0)
        assert mine.last_seq == (await a.storage.load_head(mine.session_id)).last_seq
        assert await a.user_texts(mine.session_id) == ["one", "two", "three"]
        seen = [m.content for m in a.provider.requests[-1].messages]
        assert "two answered" in str(seen)  # the model saw what B appended


async def test_a_cancel_asked_by_another_process_cancels_the_running_turn(db_url: str) -> None:
    async with (
        process(db_url, "process A", [slow(200)]) as a,
        process(db_url, None) as other,
    ):
        session = await a.agent.new_session()
        turn = await session.send_message("a long answer please")
        assert await other.leases().request_cancel(session.session_id)
        outcome = await turn.join()
        assert outcome.status is OutcomeStatus.CANCELLED
        assert await other.leases().holder(session.session_id) is None


async def test_a_lost_lease_stops_the_writer_and_writes_nothing_more(db_url: str) -> None:
    async with (
        process(db_url, "process A", [slow(200), text("never")]) as a,
        process(db_url, None) as other,
    ):
        session = await a.agent.new_session()
        session_id = session.session_id
        turn = await session.send_message("a long answer please")
        await _until_stored(other, session_id, "a long answer please")
        stored = len(await other.storage.load_events(session_id))
        # as if A had stalled past its expiry and another process had taken the lease over
        leases = other.leases()
        await leases.release(session_id, "process A")
        assert await leases.acquire(session_id, "process C", 30) is None
        outcome = await turn.join()
        assert outcome.status is not OutcomeStatus.COMPLETED
        assert len(await other.storage.load_events(session_id)) == stored  # not the partial
        assert not any(
            isinstance(e.payload, AssistantMessage)
            for e in await other.storage.load_events(session_id)
        )
        with pytest.raises(AgentError) as refused:
            await session.send_message("again")
        assert refused.value.code is ErrorCode.SESSION_BUSY and "(process C)" in str(
            refused.value.message
        )
        assert await leases.holder(session_id) == "process C"  # left to its holder


async def test_a_close_extracts_as_the_writer_and_leaves_a_busy_session_to_its_writer(
    db_url: str,
) -> None:
    extraction = {"mutations": [{"op": "create", "content": "db-1 runs pg", "reason": "said"}]}
    memories = InMemoryMemoryStorage()
    async with (
        process(db_url, "process A", [text("first answer"), slow(40)]) as a,
        process(db_url, "process B", [text(json.dumps(extraction))], memories) as b,
    ):
        session = await a.agent.new_session()
        session_id = session.session_id
        await (await session.send_message("db-1 runs pg")).join()
        busy = await b.agent.resume_session(session_id)
        running = await session.send_message("and then?")
        await busy.close()  # A writes the session: B closes without extracting
        assert busy.is_closed and not b.provider.requests
        assert await b.user_texts(session_id) == ["db-1 runs pg", "and then?"]
        await running.join()
        writer = await b.agent.resume_session(session_id)
        await writer.close()  # nobody else writes: B extracts, as the writer
        namespace = writer.config.pinned.memory_namespace
        assert [m.content for m in await memories.list_all(namespace)] == ["db-1 runs pg"]
        [checkpoint] = [
            e
            for e in await b.storage.load_events(session_id)
            if isinstance(e.payload, Metadata) and e.payload.key == META_MEMORY_CHECKPOINT
        ]
        assert checkpoint.seq == (await b.storage.load_head(session_id)).last_seq
        assert await b.leases().holder(session_id) is None


async def test_a_resume_answers_interrupted_calls_only_as_the_writer(db_url: str) -> None:
    """A call whose tool still runs in another process is not interrupted: it is not answered
    for that process, which still writes the session."""
    lookup = RecordingTool("lookup", delay=1.0)
    call = ScriptedResponse.tool_calls([("c-1", "lookup", {"x": 1})])
    async with (
        process(db_url, "process A", [call, text("found it")], tools=[lookup]) as a,
        process(db_url, "process B") as b,
    ):
        session = await a.agent.new_session()
        session_id = session.session_id
        turn = await session.send_message("look it up")
        await eventually(lambda: bool(lookup.calls), what="the tool to run")
        with pytest.raises(AgentError) as refused:
            await b.agent.resume_session(session_id)
        assert refused.value.code is ErrorCode.SESSION_BUSY
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        [result] = [
            e.payload
            for e in await b.storage.load_events(session_id)
            if type(e.payload) is ToolResult
        ]
        assert result.result.output.content == "lookup ok {'x': 1}"  # the tool's, not synthetic
        resumed = await b.agent.resume_session(session_id)  # nothing to answer now
        assert resumed.last_seq == (await b.storage.load_head(session_id)).last_seq


async def test_without_session_leases_the_kernel_takes_none(db_url: str) -> None:
    async with process(db_url, None, [slow()]) as a:
        session = await a.agent.new_session()
        turn = await session.send_message("hello")
        await _until_stored(a, session.session_id, "hello")
        assert await a.leases().holder(session.session_id) is None
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        assert session.reloads == 0


async def _until_stored(proc: Process, session_id: str, text_: str) -> None:
    for _ in range(500):
        if text_ in await proc.user_texts(session_id):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{text_!r} was never stored")
