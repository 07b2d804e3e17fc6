"""Lifecycle races: shutdown against session creation, close against send, cancel against
compaction, and a turn against a manual compaction.

See docs/architecture.md, 'Cancellation and shutdown'.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest

from crash_child import PassThroughStorage
from kernel_kit import block_text, model, text
from plugin_kit import ScriptedPlugin
from youyou import (
    Agent,
    AgentBuilder,
    AgentConfig,
    AgentError,
    CancellationToken,
    CompactionPolicy,
    Continue,
    ErrorCode,
    HookKind,
    MemoryMode,
    ModelInfo,
    OutcomeStatus,
    ScriptedProvider,
    SessionHandle,
)
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.hooks import SessionTerminationMode
from youyou.domain.ledger import META_CONTEXT_COMPACTION, LedgerEvent, Metadata, UserMessage
from youyou.domain.lifecycle import LifecycleState
from youyou.domain.model import ChatEvent, ChatRequest
from youyou.domain.session import SessionHead
from youyou.domain.templates import DEFAULT_COMPACT_PROMPT

DEADLINE_S = 5.0  # a guard against a hang, never a measurement


class Gate:
    """A step that waits until the test opens it; ``entered`` says something is waiting."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self._opened = asyncio.Event()

    async def wait(self) -> None:
        self.entered.set()
        await self._opened.wait()

    def open(self) -> None:
        self._opened.set()


def is_summary(request: ChatRequest) -> bool:
    return request.system_prompt == DEFAULT_COMPACT_PROMPT


class GatedModel:
    """A scripted model whose requests matching ``held`` first wait at ``gate`` without looking
    at their cancel token: the hardest case for a prompt cancel."""

    def __init__(
        self,
        responses: Sequence[ResponseSource],
        gate: Gate,
        held: Callable[[ChatRequest], bool] = is_summary,
    ) -> None:
        self.inner = ScriptedProvider(responses, models=[model("m1")])
        self.gate = gate
        self.held = held

    @property
    def provider_id(self) -> str:
        return "gated"

    def models(self) -> Sequence[ModelInfo]:
        return self.inner.models()

    async def chat(
        self, request: ChatRequest, cancel: CancellationToken
    ) -> AsyncIterator[ChatEvent]:
        if self.held(request):
            await self.gate.wait()
        async for event in self.inner.chat(request, cancel):
            yield event


class SlowHead(PassThroughStorage):
    """Resume reads the session through ``gate``."""

    def __init__(self, inner: SqlSessionStorage, gate: Gate) -> None:
        super().__init__(inner)
        self.gate = gate

    async def load_session(
        self, session_id: str, events_after: Callable[[SessionHead], int]
    ) -> tuple[SessionHead, Sequence[LedgerEvent]]:
        await self.gate.wait()
        return await self.inner.load_session(session_id, events_after)


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(sqlite_url)
    yield opened
    await opened.close()


async def build(
    provider: Any,
    storage: Any,
    *plugins: ScriptedPlugin,
    mode: MemoryMode = MemoryMode.MANUAL,
    every: int = 30,
) -> Agent:
    config = AgentConfig(
        default_model="m1", compaction=CompactionPolicy(mode=mode, every_n_turns=every)
    )
    builder = AgentBuilder(config).register_model_provider(provider)
    builder.with_token_counter(lambda _: ApproximateTokenCounter())
    builder.register_session_storage(storage)
    for plugin in plugins:
        builder.register_plugin(plugin)
    return await builder.build()


def gated_hook(gate: Gate) -> Callable[[Any], Awaitable[Continue]]:
    async def hook(_: Any) -> Continue:
        await gate.wait()
        return Continue()

    return hook


async def until(predicate: Callable[[], bool]) -> None:
    """Poll with a deadline (the thing awaited has no event of its own)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0)


async def refused(call: Awaitable[Any]) -> ErrorCode:
    with pytest.raises(AgentError) as info:
        await asyncio.wait_for(call, DEADLINE_S)
    return info.value.code


def compactions(events: Sequence[LedgerEvent]) -> list[LedgerEvent]:
    return [
        e
        for e in events
        if isinstance(e.payload, Metadata) and e.payload.key == META_CONTEXT_COMPACTION
    ]


async def every_kind_of_work_refused(session: SessionHandle) -> list[ErrorCode]:
    return [
        await refused(session.send_message("late")),
        await refused(session.compact()),
        await refused(session.set_memory_mode(MemoryMode.MANUAL)),
        await refused(session.set_memory_mode(MemoryMode.CONTEXT_PERCENT)),
    ]


# -- shutdown against session creation -------------------------------------------------------


async def test_shutdown_waits_for_a_session_inside_a_slow_session_start(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    journal: list[str] = []
    plugin = ScriptedPlugin(
        "slow",
        {HookKind.SESSION_START: gated_hook(gate), HookKind.SESSION_END: Continue()},
        journal=journal,
    )
    agent = await build(ScriptedProvider([text("never")], models=[model("m1")]), storage, plugin)
    creating = asyncio.create_task(agent.new_session())
    await gate.entered.wait()
    stopping = asyncio.create_task(agent.shutdown())
    await until(lambda: agent.lifecycle is not LifecycleState.RUNNING)
    gate.open()
    session = await asyncio.wait_for(creating, DEADLINE_S)
    await asyncio.wait_for(stopping, DEADLINE_S)

    assert agent.lifecycle is LifecycleState.SHUTDOWN
    assert session.is_closed
    assert journal[-3:] == ["slow:session_start", "slow:session_end", "shutdown:slow"]
    ended = plugin.received(HookKind.SESSION_END)
    assert [p.termination_mode for p in ended] == [SessionTerminationMode.SHUTDOWN]
    before = await storage.load_events(session.session_id)
    assert await every_kind_of_work_refused(session) == [ErrorCode.AGENT_SHUTDOWN] * 4
    assert await storage.load_events(session.session_id) == before


async def test_shutdown_waits_for_a_slow_resume(storage: SqlSessionStorage) -> None:
    first = await build(ScriptedProvider([text("a1")], models=[model("m1")]), storage)
    original = await first.new_session()
    await (await original.send_message("q1")).join()
    await first.shutdown()

    gate = Gate()
    plugin = ScriptedPlugin("watch", {HookKind.SESSION_END: Continue()})
    agent = await build(
        ScriptedProvider([text("never")], models=[model("m1")]), SlowHead(storage, gate), plugin
    )
    resuming = asyncio.create_task(agent.resume_session(original.session_id))
    await gate.entered.wait()
    stopping = asyncio.create_task(agent.shutdown())
    await until(lambda: agent.lifecycle is not LifecycleState.RUNNING)
    gate.open()
    resumed = await asyncio.wait_for(resuming, DEADLINE_S)
    await asyncio.wait_for(stopping, DEADLINE_S)

    assert resumed.is_closed
    ended = plugin.received(HookKind.SESSION_END)
    assert [p.termination_mode for p in ended] == [SessionTerminationMode.SHUTDOWN]
    assert await refused(resumed.send_message("late")) is ErrorCode.AGENT_SHUTDOWN


async def test_every_old_handle_refuses_work_after_shutdown(storage: SqlSessionStorage) -> None:
    agent = await build(ScriptedProvider([text("a1")], models=[model("m1")]), storage)
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    await agent.shutdown()
    before = await storage.load_events(session.session_id)

    assert await every_kind_of_work_refused(session) == [ErrorCode.AGENT_SHUTDOWN] * 4
    assert await storage.load_events(session.session_id) == before
    await session.close()  # closing a closed session does nothing, even after shutdown


# -- close against send ------------------------------------------------------------------------


async def test_a_closing_session_refuses_work_and_close_keeps_its_slot_until_done(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    plugin = ScriptedPlugin("slow", {HookKind.SESSION_END: gated_hook(gate)})
    agent = await build(ScriptedProvider([text("a1")], models=[model("m1")]), storage, plugin)
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    closing = asyncio.create_task(session.close())
    await gate.entered.wait()

    assert await every_kind_of_work_refused(session) == [ErrorCode.SESSION_NOT_FOUND] * 4
    assert await refused(agent.new_session()) is ErrorCode.SESSION_BUSY  # the slot is still held
    gate.open()
    await asyncio.wait_for(closing, DEADLINE_S)

    assert session.is_closed
    users = [
        e for e in await storage.load_events(session.session_id) if e.payload.kind == "user_message"
    ]
    assert len(users) == 1
    await agent.new_session()  # the slot is free now


async def test_a_closed_handle_never_writes_to_a_ledger_resumed_elsewhere(
    storage: SqlSessionStorage,
) -> None:
    agent = await build(
        ScriptedProvider([text("a1"), text("SUMMARY")], models=[model("m1")]), storage
    )
    old = await agent.new_session()
    await (await old.send_message("q1")).join()
    await old.close()
    resumed = await agent.resume_session(old.session_id)
    before = await storage.load_events(old.session_id)

    assert await every_kind_of_work_refused(old) == [ErrorCode.SESSION_NOT_FOUND] * 4
    assert await storage.load_events(old.session_id) == before
    assert resumed.last_seq == before[-1].seq


# -- cancel against compaction -----------------------------------------------------------------


async def compacting_session(
    storage: SqlSessionStorage, gate: Gate, *plugins: ScriptedPlugin
) -> tuple[Agent, SessionHandle, asyncio.Task[Any], list[LedgerEvent]]:
    """A session with one turn whose manual compaction is stuck in its summary request."""
    agent = await build(GatedModel([text("a1"), text("a2")], gate), storage, *plugins)
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    before = list(await storage.load_events(session.session_id))
    compacting = asyncio.create_task(session.compact())
    await gate.entered.wait()
    return agent, session, compacting, before


async def test_cancel_stops_a_hanging_summary_within_200_ms(storage: SqlSessionStorage) -> None:
    gate = Gate()  # never opened: the summary would hang forever
    _, session, compacting, before = await compacting_session(storage, gate)
    loop = asyncio.get_running_loop()

    started = loop.time()
    session.cancel()
    assert await refused(compacting) is ErrorCode.REQUEST_CANCELLED
    assert loop.time() - started < 0.2

    assert list(await storage.load_events(session.session_id)) == before
    assert session.latest_compaction is None
    outcome = await asyncio.wait_for((await session.send_message("q2")).join(), DEADLINE_S)
    assert outcome.status is OutcomeStatus.COMPLETED


async def test_close_stops_a_running_compaction_and_writes_nothing(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    plugin = ScriptedPlugin("watch", {HookKind.SESSION_END: Continue()})
    _, session, compacting, before = await compacting_session(storage, gate, plugin)

    await asyncio.wait_for(session.close(), DEADLINE_S)

    assert await refused(compacting) is ErrorCode.SESSION_NOT_FOUND
    assert session.is_closed
    assert list(await storage.load_events(session.session_id)) == before


async def test_shutdown_stops_a_running_compaction_and_writes_nothing(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    agent, session, compacting, before = await compacting_session(storage, gate)

    await asyncio.wait_for(agent.shutdown(), DEADLINE_S)

    assert await refused(compacting) is ErrorCode.AGENT_SHUTDOWN
    assert session.is_closed
    assert list(await storage.load_events(session.session_id)) == before


async def test_a_cancelled_compaction_task_leaves_the_session_usable(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    _, session, compacting, before = await compacting_session(storage, gate)

    compacting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await compacting

    assert list(await storage.load_events(session.session_id)) == before
    outcome = await asyncio.wait_for((await session.send_message("q2")).join(), DEADLINE_S)
    assert outcome.status is OutcomeStatus.COMPLETED


async def test_cancelling_a_turn_stops_its_compaction_before_anything_is_written(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    agent = await build(
        GatedModel([text("a1")], gate), storage, mode=MemoryMode.EVERY_N_TURNS, every=1
    )
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    before = list(await storage.load_events(session.session_id))
    turn = await session.send_message("q2")  # compacts first: one turn completed
    await gate.entered.wait()

    turn.cancel()
    outcome = await asyncio.wait_for(turn.join(), DEADLINE_S)

    assert outcome.status is OutcomeStatus.CANCELLED
    assert list(await storage.load_events(session.session_id)) == before


# -- a turn against a manual compaction --------------------------------------------------------


async def test_a_send_or_a_second_compaction_during_a_compaction_is_turn_busy(
    storage: SqlSessionStorage,
) -> None:
    gate = Gate()
    agent = await build(
        GatedModel([text("a1"), text("SUMMARY"), text("a2")], gate),
        storage,
        mode=MemoryMode.EVERY_N_TURNS,
        every=1,
    )
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    compacting = asyncio.create_task(session.compact())
    await gate.entered.wait()

    assert await refused(session.send_message("q2")) is ErrorCode.TURN_BUSY
    assert await refused(session.compact()) is ErrorCode.TURN_BUSY
    assert await refused(session.set_memory_mode(MemoryMode.MANUAL)) is ErrorCode.TURN_BUSY
    gate.open()
    await asyncio.wait_for(compacting, DEADLINE_S)
    outcome = await asyncio.wait_for((await session.send_message("q2")).join(), DEADLINE_S)

    assert outcome.status is OutcomeStatus.COMPLETED
    stored = await storage.load_events(session.session_id)
    assert len(compactions(stored)) == 1
    assert [
        block_text(e.payload.content[0]) for e in stored if isinstance(e.payload, UserMessage)
    ] == [
        "q1",
        "q2",
    ]


async def test_a_compaction_during_a_turn_is_turn_busy(storage: SqlSessionStorage) -> None:
    gate = Gate()
    agent = await build(GatedModel([text("a1")], gate, held=lambda r: not is_summary(r)), storage)
    session = await agent.new_session()
    turn = await session.send_message("q1")
    await gate.entered.wait()

    assert await refused(session.compact()) is ErrorCode.TURN_BUSY
    assert await refused(session.set_memory_mode(MemoryMode.MANUAL)) is ErrorCode.TURN_BUSY
    session.cancel()
    outcome = await asyncio.wait_for(turn.join(), DEADLINE_S)

    assert outcome.status is OutcomeStatus.CANCELLED
    assert compactions(await storage.load_events(session.session_id)) == []
