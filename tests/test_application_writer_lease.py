"""One writer per session across processes, as a kernel capability: two agents on one database
(SQLite file and PostgreSQL), each with its own connection pool, stand for two processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

import pytest

from kernel_kit import RecordingTool, build_agent, text
from plugin_kit import ScriptedPlugin
from storage_contract import T0, append_all, profile, user
from waiting import eventually
from youyou import Agent, AgentBuilder, AgentConfig, ScriptedProvider, ScriptedResponse
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage import LeaseState, SqlSessionLeases
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.application.writer_lease import WriterLeases
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.hooks import Continue, HookKind
from youyou.domain.ledger import (
    META_MEMORY_CHECKPOINT,
    AssistantMessage,
    LedgerEvent,
    Metadata,
    ToolResult,
    UserMessage,
)
from youyou.domain.session import SessionSummary, next_summary
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
    ttl_s: float = TTL_S,
    renew_every_s: float | None = None,
    plugins: Sequence[ScriptedPlugin] = (),
) -> AsyncIterator[Process]:
    """An agent on its own storage; ``holder`` None: without session leases."""
    storage = await SqlSessionStorage.open(db_url)

    def configure(builder: AgentBuilder) -> AgentBuilder:
        builder.register_session_storage(storage)
        for plugin in plugins:
            builder.register_plugin(plugin)
        if memories is not None:
            builder.register_memory_storage(memories)
        if holder is not None:
            builder.register_session_leases(
                storage.leases(), holder=holder, ttl_s=ttl_s, renew_every_s=renew_every_s
            )
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
        await _until_stored(b, mine.session_id, "from A")  # stored by A's turn, on its task
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


async def test_the_agent_names_the_writer_elsewhere_and_asks_it_to_cancel(db_url: str) -> None:
    """A server renews often (``renew_every_s``) to see a cancel asked on another process
    within a fraction of the lease's 30 s: the default would take 10 s."""
    async with (
        process(db_url, "process A", [slow(200)], ttl_s=30.0, renew_every_s=0.1) as a,
        process(db_url, "process B") as b,
        process(db_url, None) as plain,
    ):
        session = await a.agent.new_session()
        session_id = session.session_id
        assert (a.agent.writer, plain.agent.writer) == ("process A", None)
        assert await b.agent.writer_elsewhere(session_id) is None  # nobody writes it
        turn = await session.send_message("a long answer please")
        assert await b.agent.writer_elsewhere(session_id) == "process A"
        assert await a.agent.writer_elsewhere(session_id) is None  # itself
        assert await plain.agent.writer_elsewhere(session_id) is None
        assert not await plain.agent.request_cancel(session_id)  # no leases: cannot reach it
        assert await b.agent.request_cancel(session_id)
        outcome = await asyncio.wait_for(turn.join(), 3.0)
        assert outcome.status is OutcomeStatus.CANCELLED
        assert not await b.agent.request_cancel(session_id)  # nothing runs any more


async def test_a_renewal_slower_than_the_time_to_live_is_refused_at_build(db_url: str) -> None:
    async with process(db_url, None) as plain:
        for every in (0.0, 30.0):
            builder = AgentBuilder(AgentConfig(default_model="m1"))
            with pytest.raises(AgentError) as refused:
                builder.register_session_leases(
                    plain.leases(), holder="p", ttl_s=30.0, renew_every_s=every
                )
            assert refused.value.code is ErrorCode.INVALID_CONFIG


async def test_a_delete_is_the_writers_and_refused_while_anyone_writes(db_url: str) -> None:
    async with (
        process(db_url, "process A", [text("first answer"), slow(40)]) as a,
        process(db_url, "process B") as b,
    ):
        mine = await a.agent.new_session()
        session_id = mine.session_id
        await (await mine.send_message("first")).join()
        theirs = await b.agent.resume_session(session_id)
        running = await mine.send_message("more")
        with pytest.raises(AgentError) as busy_here:
            await mine.delete()
        assert busy_here.value.code is ErrorCode.TURN_BUSY
        with pytest.raises(AgentError) as busy_elsewhere:
            await theirs.delete()
        assert busy_elsewhere.value.code is ErrorCode.SESSION_BUSY
        assert not theirs.is_closed
        # A's turn stores its message on its own task, which the refusals need not wait for
        await _until_stored(b, session_id, "more")
        assert await b.user_texts(session_id) == ["first", "more"]
        assert (await running.join()).status is OutcomeStatus.COMPLETED
        await theirs.delete()  # its copy is out of date: deleting reads none of it
        assert theirs.is_closed
        assert await b.leases().holder(session_id) is None
        with pytest.raises(AgentError) as gone:
            await b.agent.resume_session(session_id)
        assert gone.value.code is ErrorCode.SESSION_NOT_FOUND


async def test_a_close_unless_busy_keeps_a_session_busy_here_or_elsewhere(db_url: str) -> None:
    """An idle sweep's close: while a turn runs (here) or another process holds the lease,
    nothing happens; a copy another process moved on from closes without extracting (that
    process extracts what it wrote); the writer's fresh copy extracts."""
    extraction = {"mutations": [{"op": "create", "content": "db-1 runs pg", "reason": "said"}]}
    memories = InMemoryMemoryStorage()
    async with (
        process(db_url, "process A", [slow(40)]) as a,
        process(db_url, "process B", [text(json.dumps(extraction))], memories) as b,
    ):
        session = await a.agent.new_session()
        session_id = session.session_id
        stale = await b.agent.resume_session(session_id)
        running = await session.send_message("db-1 runs pg")
        assert not await session.close(unless_busy=True)
        assert not await stale.close(unless_busy=True)
        assert not session.is_closed and not stale.is_closed
        assert await b.leases().holder(session_id) == "process A"  # B took nothing
        assert (await running.join()).status is OutcomeStatus.COMPLETED
        assert await stale.close(unless_busy=True)
        assert stale.is_closed and not b.provider.requests
        fresh = await b.agent.resume_session(session_id)
        assert await fresh.close(unless_busy=True)
        namespace = fresh.config.pinned.memory_namespace
        assert [m.content for m in await memories.list_all(namespace)] == ["db-1 runs pg"]
        assert await b.leases().holder(session_id) is None


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
        # A's turn stores its message on its own task, which B's close need not wait for
        await _until_stored(b, session_id, "and then?")
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


async def test_another_process_takes_the_session_as_soon_as_the_answer_is_stored(
    db_url: str,
) -> None:
    """The turn's answer is its last write and gives the lease back with it: while the turn
    still ends here (a TurnEnd hook runs), another process takes the session, and the end of
    the turn here leaves that process's lease alone."""
    ending, ended = asyncio.Event(), asyncio.Event()

    async def slow_end(payload: object) -> Continue:
        ending.set()
        await ended.wait()
        return Continue()

    plugin = ScriptedPlugin("slow end", {HookKind.TURN_END: slow_end})
    async with (
        process(db_url, "process A", [text("first answer")], plugins=[plugin]) as a,
        process(db_url, "process B", [slow(40)]) as b,
    ):
        mine = await a.agent.new_session()
        session_id = mine.session_id
        turn = await mine.send_message("first")
        try:
            await asyncio.wait_for(ending.wait(), 30)
            assert await b.leases().holder(session_id) is None
            theirs = await b.agent.resume_session(session_id)
            running = await theirs.send_message("second")  # takes the lease at once
            assert await b.leases().holder(session_id) == "process B"
        finally:
            ended.set()
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        assert await a.leases().holder(session_id) == "process B"
        assert (await running.join()).status is OutcomeStatus.COMPLETED
        assert await a.user_texts(session_id) == ["first", "second"]
        assert await a.leases().holder(session_id) is None


class SlowToAnswer(SqlSessionStorage):
    """Answers a releasing append ``delay_s`` after storing it: the lease is gone from the
    database while its writer has not heard so yet."""

    delay_s = 0.3

    async def append_event_releasing(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary, *, holder: str
    ) -> None:
        await super().append_event_releasing(session_id, event, summary, holder=holder)
        await asyncio.sleep(self.delay_s)


class CountedRenewals(SqlSessionLeases):
    renewals = 0

    async def renew_all(self, holder: str, ttl_s: float) -> dict[str, LeaseState]:
        self.renewals += 1
        return await super().renew_all(holder, ttl_s)


async def _taken(writers: WriterLeases, seen: int, stop: Callable[[], None] = lambda: None) -> None:
    """One more writer of session s-1 here, whose copy's last seq is ``seen``."""

    async def nothing(last_seq: int | None) -> None:
        pass

    await writers.take("s-1", stop=stop, on_taken=nothing, seen=lambda: seen)


def _answer(seq: int) -> LedgerEvent:
    return LedgerEvent(seq=seq, timestamp=T0 + timedelta(seconds=seq), payload=user("done"))


async def test_renewals_while_the_last_write_gives_the_lease_back_neither_stop_nor_lose_it(
    db_url: str,
) -> None:
    storage = await SlowToAnswer.open(db_url)
    try:
        leases = CountedRenewals(storage.engine, beside_ledger=True)
        writers = WriterLeases(leases, "process A", 30.0, renew_every_s=0.05, ledger=storage)
        _, summary = await append_all(storage, "s-1", [profile()])
        stopped: list[str] = []
        await _taken(writers, 1, lambda: stopped.append("s-1"))
        renewals = leases.renewals
        answer = _answer(2)
        assert await writers.append_last("s-1", answer, next_summary(summary, "s-1", answer))
        assert leases.renewals > renewals  # some ran while the lease was being given back
        assert await leases.holder("s-1") is None
        await asyncio.sleep(0.2)  # and some after: a lease given back is not theirs to judge
        assert stopped == []
        await writers.check_writable("s-1", 2)  # not lost: a later write takes it back
        assert await leases.holder("s-1") == "process A"
        await writers.give_back("s-1")
        assert await leases.holder("s-1") is None
    finally:
        await storage.close()


async def test_a_write_after_the_last_one_takes_the_lease_back_unless_another_moved_in(
    db_url: str,
) -> None:
    storage, other = await SqlSessionStorage.open(db_url), await SqlSessionStorage.open(db_url)
    try:
        # without the session storage (or with one keeping no leases), nothing is done
        writers = WriterLeases(storage.leases(), "process A", 30.0, renew_every_s=10.0)
        first = _answer(1)
        assert not await writers.append_last("s-1", first, next_summary(None, "s-1", first))
        writers = WriterLeases(
            storage.leases(), "process A", 30.0, renew_every_s=10.0, ledger=storage
        )
        _, summary = await append_all(storage, "s-1", [profile()])
        await _taken(writers, 1)
        await _taken(writers, 1)  # two writers here: the first one's last write keeps it
        answer = _answer(2)
        summary = next_summary(summary, "s-1", answer)
        assert not await writers.append_last("s-1", answer, summary)
        await storage.append_event("s-1", answer, summary)
        await writers.give_back("s-1")
        assert await other.leases().holder("s-1") == "process A"
        answer = _answer(3)
        summary = next_summary(summary, "s-1", answer)
        assert await writers.append_last("s-1", answer, summary)
        # another process takes the session: a write here is refused and takes nothing
        assert await other.leases().acquire("s-1", "process B", 30) is None
        with pytest.raises(AgentError) as busy:
            await writers.check_writable("s-1", 3)
        assert busy.value.code is ErrorCode.SESSION_BUSY and "(process B)" in busy.value.message
        # it appends and gives the session back: this copy is behind, so still refused
        await append_all(other, "s-1", [user("from B")], first_seq=4, previous=summary)
        await other.leases().release("s-1", "process B")
        writes: list[Callable[[], Awaitable[None]]] = [
            lambda: writers.check_writable("s-1", 3),
            lambda: _taken(writers, 3),  # a second operation here, while the first ends
        ]
        for write in writes:
            with pytest.raises(AgentError) as moved:
                await write()
            assert moved.value.code is ErrorCode.SESSION_BUSY
            assert "written by another process" in moved.value.message
            assert await other.leases().holder("s-1") is None
        await writers.check_writable("s-1", 4)  # up to date: takes the lease back
        assert await other.leases().holder("s-1") == "process A"
        await writers.give_back("s-1")
        assert await other.leases().holder("s-1") is None
    finally:
        await storage.close()
        await other.close()


async def _until_stored(proc: Process, session_id: str, text_: str) -> None:
    for _ in range(3000):  # 30 s: a loaded machine is slow, a stored message returns at once
        if text_ in await proc.user_texts(session_id):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{text_!r} was never stored")
