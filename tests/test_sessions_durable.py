"""Durable sessions end to end on SQLite and PostgreSQL (see docs/sessions.md).

Live vs resumed comparisons run the same deterministic script twice: once live to the end, once
up to the comparison point, then a fresh agent on a fresh storage object resumes the second
session. Both must show the same visible messages and send the same next request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from crash_child import PassThroughStorage
from kernel_kit import RecordingTool, build_agent, model, payload_as, text
from plugin_kit import ScriptedPlugin
from youyou import (
    Abort,
    AgentBuilder,
    AgentConfig,
    AgentError,
    CompactionPolicy,
    ErrorCode,
    HookKind,
    MemoryMode,
    OutcomeStatus,
    ScriptedResponse,
    SessionHandle,
    SkillDefinition,
    TextBlock,
)
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.context import CompactionMode, VisibleMessage
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from youyou.domain.model import ChatRequest, ProviderErrorKind
from youyou.domain.session import (
    SearchMode,
    SessionListQuery,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.domain.templates import PHRASES, TOOL_INTERRUPTED

M1, M2 = model("m1", window=2_000), model("m2", window=2_000)
# Manual compaction keeps the scripts deterministic; a low threshold makes truncation bite.
CONFIG = AgentConfig(
    default_model="m1",
    memory_namespace="alpha",
    compact_threshold=0.3,
    compaction=CompactionPolicy(mode=MemoryMode.MANUAL),
)
LONG = " ".join(f"word{i}" for i in range(60))


class ProxyStorage(PassThroughStorage):
    """A real storage whose writes fail on demand (``fail_append`` / ``fail_delete``)."""

    def __init__(self, inner: SqlSessionStorage) -> None:
        super().__init__(inner)
        self.fail_append: Callable[[LedgerEvent], bool] = lambda _: False
        self.fail_delete = False

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        if self.fail_append(event):
            raise OSError("disk full")
        await self.inner.append_event(session_id, event, summary)

    async def delete_session(self, session_id: str) -> None:
        if self.fail_delete:
            raise OSError("disk is read-only")
        await self.inner.delete_session(session_id)


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


def with_storage(storage: Any, *extra: Callable[[AgentBuilder], AgentBuilder]) -> Any:
    def apply(builder: AgentBuilder) -> AgentBuilder:
        builder.register_session_storage(storage)
        for step in extra:
            builder = step(builder)
        return builder

    return apply


async def turn(session: SessionHandle, message: str) -> OutcomeStatus:
    return (await (await session.send_message(message)).join()).status


async def cancelled_turn(session: SessionHandle, message: str) -> None:
    """Cancel after the second streamed delta, so a partial answer is saved."""
    running = await session.send_message(message)
    deltas = 0
    async for event in running.events:
        deltas += event.payload.type == "text_delta"
        if deltas == 2:
            running.cancel()
    assert (await running.join()).status is OutcomeStatus.CANCELLED


def assert_contiguous(events: Sequence[LedgerEvent]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


# -- append failures -------------------------------------------------------------------------


@pytest.mark.parametrize("failing_kind", ["user_message", "assistant_message"])
async def test_append_failure_leaves_memory_as_durable_as_storage(
    storage: SqlSessionStorage, failing_kind: str
) -> None:
    proxy = ProxyStorage(storage)
    agent, _ = await build_agent(
        [text("first answer"), text("lost"), text("third answer")],
        models=(M1,),
        config=CONFIG,
        configure=with_storage(proxy),
    )
    session = await agent.new_session()
    assert await turn(session, "first question") is OutcomeStatus.COMPLETED
    before = (session.events, session.summary, session.visible_messages(), session.usage())

    proxy.fail_append = lambda event: event.payload.kind == failing_kind
    outcome = await (await session.send_message("second question")).join()

    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is ErrorCode.STORAGE_ERROR
    assert "disk full" in outcome.error.message
    durable = await storage.load_events(session.session_id)
    assert session.events == tuple(durable)
    assert session.summary == (await storage.load_head(session.session_id)).summary
    if failing_kind == "user_message":
        assert (
            session.events,
            session.summary,
            session.visible_messages(),
            session.usage(),
        ) == before
    else:  # the user message was durable before the answer failed: memory shows it, too
        assert session.events[:-1] == before[0]
        assert session.events[-1].payload == UserMessage(
            content=(TextBlock(text="second question"),)
        )
        assert session.visible_messages()[:-1] == before[2]

    proxy.fail_append = lambda _: False
    assert await turn(session, "third question") is OutcomeStatus.COMPLETED
    assert_contiguous(await storage.load_events(session.session_id))


# -- SessionStart ordering -------------------------------------------------------------------


async def test_session_start_sees_the_durable_profile_and_abort_deletes_it(
    storage: SqlSessionStorage,
) -> None:
    seen: list[list[LedgerEvent]] = []

    async def inspect(payload: Any) -> Abort:
        seen.append(list(await storage.load_events(payload.session_id)))
        return Abort("rejected")

    plugin = ScriptedPlugin("gate", {HookKind.SESSION_START: inspect})
    agent, _ = await build_agent(
        models=(M1,),
        config=CONFIG,
        configure=with_storage(storage, lambda b: b.register_plugin(plugin)),
    )

    with pytest.raises(AgentError) as caught:
        await agent.new_session()

    assert caught.value.code is ErrorCode.PLUGIN_ABORTED
    [events] = seen
    assert [(e.seq, e.payload.kind) for e in events] == [(1, "metadata")]
    profile = events[0].payload
    assert isinstance(profile, Metadata) and profile.key == "session_profile"
    assert profile.value["model_id"] == "m1"
    session_id = plugin.received(HookKind.SESSION_START)[0].session_id
    assert (await storage.list_sessions(SessionListQuery())).items == ()
    with pytest.raises(AgentError) as gone:
        await storage.load_head(session_id)
    assert gone.value.code is ErrorCode.SESSION_NOT_FOUND


async def test_session_start_abort_with_failing_delete_is_storage_error(
    storage: SqlSessionStorage,
) -> None:
    proxy = ProxyStorage(storage)
    proxy.fail_delete = True
    plugin = ScriptedPlugin("gate", {HookKind.SESSION_START: Abort("rejected")})
    agent, _ = await build_agent(
        models=(M1,),
        config=CONFIG,
        configure=with_storage(proxy, lambda b: b.register_plugin(plugin)),
    )

    with pytest.raises(AgentError) as caught:
        await agent.new_session()

    assert caught.value.code is ErrorCode.STORAGE_ERROR
    assert "disk is read-only" in caught.value.message
    # the session could not be removed, but its slot was released
    assert len((await storage.list_sessions(SessionListQuery())).items) == 1
    plugin.replies = {}
    assert not (await agent.new_session()).is_closed


# -- catalog ---------------------------------------------------------------------------------


async def test_catalog_with_and_without_an_active_session(storage: SqlSessionStorage) -> None:
    agent, _ = await build_agent(
        [text("a1"), text("b1"), text("b2")],
        models=(M1,),
        config=CONFIG,
        configure=with_storage(storage),
    )
    catalog = agent.session_catalog()
    assert catalog is not None
    alpha = await agent.new_session()
    await turn(alpha, "alpha question\nsecond line")
    await alpha.close()
    bravo = await agent.new_session()
    await turn(bravo, "bravo question")

    page = await catalog.list()
    assert [s.session_id for s in page.items] == [bravo.session_id, alpha.session_id]
    assert [s.title for s in page.items] == ["bravo question", "alpha question"]
    found = await catalog.find(SessionSearchQuery(SearchMode.TITLE_CONTAINS, "BRAVO"))
    assert [s.session_id for s in found] == [bravo.session_id]
    found = await catalog.find(SessionSearchQuery(SearchMode.ID_PREFIX, alpha.session_id[:8]))
    assert [s.session_id for s in found] == [alpha.session_id]

    for attempt in (catalog.delete, catalog.resume):
        with pytest.raises(AgentError) as busy:
            await attempt(bravo.session_id)
        assert busy.value.code is ErrorCode.SESSION_BUSY
    with pytest.raises(AgentError) as missing:
        await catalog.delete("no-such-session")
    assert missing.value.code is ErrorCode.SESSION_NOT_FOUND
    with pytest.raises(AgentError) as full:  # the slot is claimed before storage is read
        await catalog.resume("no-such-session")
    assert full.value.code is ErrorCode.SESSION_BUSY
    # an inactive session can be deleted while another one is active
    await catalog.delete(alpha.session_id)
    assert [s.session_id for s in (await catalog.list()).items] == [bravo.session_id]

    await bravo.close()
    with pytest.raises(AgentError) as unknown:
        await catalog.resume("no-such-session")
    assert unknown.value.code is ErrorCode.SESSION_NOT_FOUND
    resumed = await catalog.resume(bravo.session_id)  # the failed resume freed its slot
    assert resumed.summary == bravo.summary
    assert await turn(resumed, "again") is OutcomeStatus.COMPLETED
    with pytest.raises(AgentError) as again:
        await catalog.resume(bravo.session_id)
    assert again.value.code is ErrorCode.SESSION_BUSY
    await resumed.close()
    await catalog.delete(bravo.session_id)
    assert (await catalog.list()).items == ()
    with pytest.raises(AgentError) as deleted:
        await catalog.resume(bravo.session_id)
    assert deleted.value.code is ErrorCode.SESSION_NOT_FOUND


# -- live vs resumed -------------------------------------------------------------------------


Prepare = Callable[[SessionHandle], Awaitable[None]]


@dataclass(frozen=True)
class Snapshot:
    visible: tuple[VisibleMessage, ...]
    title: str
    message_count: int
    next_request: ChatRequest
    handle: SessionHandle


async def live_and_resumed(
    db_url: str,
    responses: Sequence[ResponseSource],
    prepare: Prepare,
    extra: Callable[[AgentBuilder], AgentBuilder] = lambda b: b,
    follow_up: Sequence[ResponseSource] = (text("the next answer"),),
    **agent_kwargs: Any,
) -> tuple[Snapshot, Snapshot]:
    """Run ``prepare`` then one more turn (``follow_up`` responses), live; and again with a
    resume in between."""

    async def snapshot(session: SessionHandle, requests: list[ChatRequest]) -> Snapshot:
        visible = session.visible_messages()
        assert session.summary is not None
        title, count = session.summary.title, session.summary.message_count
        assert await turn(session, "the next question") is OutcomeStatus.COMPLETED
        return Snapshot(visible, title, count, requests[-1], session)

    live_storage, twin_storage, fresh_storage = [
        await SqlSessionStorage.open(db_url) for _ in range(3)
    ]
    try:
        live_agent, live_provider = await build_agent(
            [*responses, *follow_up], configure=with_storage(live_storage, extra), **agent_kwargs
        )
        live = await live_agent.new_session()
        await prepare(live)
        live_snapshot = await snapshot(live, live_provider.requests)

        twin_agent, _ = await build_agent(
            responses, configure=with_storage(twin_storage, extra), **agent_kwargs
        )
        twin = await twin_agent.new_session()
        await prepare(twin)
        await twin.close()
        fresh_agent, fresh_provider = await build_agent(
            follow_up, configure=with_storage(fresh_storage, extra), **agent_kwargs
        )
        resumed = await fresh_agent.resume_session(twin.session_id)
        assert resumed.latest_compaction == twin.latest_compaction
        resumed_snapshot = await snapshot(resumed, fresh_provider.requests)
        events = await fresh_storage.load_events(twin.session_id)
        assert_contiguous(events)
        closed_at = twin.events[-1].seq
        new = [e for e in events if e.seq > closed_at]  # the new turn continues the ledger
        assert new[0].seq == closed_at + 1
        assert [e.payload.kind for e in new][-2:] == ["user_message", "assistant_message"]
        return live_snapshot, resumed_snapshot
    finally:
        for opened in (live_storage, twin_storage, fresh_storage):
            await opened.close()


def assert_same(live: Snapshot, resumed: Snapshot) -> None:
    assert resumed.visible == live.visible
    assert resumed.next_request == live.next_request
    assert (resumed.title, resumed.message_count) == (live.title, live.message_count)
    assert resumed.handle.visible_messages() == live.handle.visible_messages()


def conversation(turns: int) -> list[ResponseSource]:
    return [text(f"answer {i} {LONG}", chunks=3) for i in range(turns)]


async def talk(session: SessionHandle, first: int, turns: int) -> None:
    for i in range(first, first + turns):
        assert await turn(session, f"question {i} {LONG}") is OutcomeStatus.COMPLETED


async def test_resume_after_summary_compaction_matches_live(db_url: str) -> None:
    tool = RecordingTool("lookup")
    responses = [
        ScriptedResponse.tool_calls([("c1", "lookup", {"x": 1})], text="let me look"),
        *conversation(3),
        text("summary one: the user asked questions 0-2"),
        *conversation(2),
        text("summary two: merged"),
        *conversation(1),
    ]

    async def prepare(session: SessionHandle) -> None:
        await talk(session, 0, 3)
        await session.compact()
        await talk(session, 3, 2)
        await session.compact()
        await talk(session, 5, 1)
        record = session.latest_compaction
        assert record is not None and record.mode is CompactionMode.SUMMARY
        assert record.summary_body == "summary two: merged"

    live, resumed = await live_and_resumed(
        db_url, responses, prepare, models=(M1,), config=CONFIG, tools=[tool]
    )
    assert_same(live, resumed)
    assert isinstance(live.visible[0].message, SystemMessage)
    assert "summary two: merged" in live.visible[0].message.content
    assert len(live.visible) == 3  # summary + the last question and answer
    # without a memory storage, resume reads nothing behind the latest compaction
    record = resumed.handle.latest_compaction
    assert record is not None
    assert resumed.handle.events[0].seq == record.replaces_through_seq + 1


def answer_or_fail_summaries(request: ChatRequest) -> ScriptedResponse:
    """Answers each question by its number; every summary request fails (→ truncation)."""
    last = request.messages[-1].content[0]
    assert isinstance(last, TextBlock)
    if last.text.startswith("Previous summary"):
        return ScriptedResponse.error(ProviderErrorKind.PROVIDER, "summarizer down")
    return text(f"answer to {last.text.split()[1]} {LONG}", chunks=3)


async def test_resume_after_truncation_compaction_matches_live(db_url: str) -> None:
    # automatic compaction at 70 % of the window keeps the newest messages that fit
    config = AgentConfig(
        default_model="m1", compaction=CompactionPolicy(mode=MemoryMode.CONTEXT_PERCENT)
    )

    async def prepare(session: SessionHandle) -> None:
        await talk(session, 0, 12)
        record = session.latest_compaction
        assert record is not None and record.mode is CompactionMode.TRUNCATION_FALLBACK
        kept = session.visible_messages()
        assert len(kept) > 4 and kept[0].source_seq == record.replaces_through_seq + 1

    live, resumed = await live_and_resumed(
        db_url,
        [answer_or_fail_summaries] * 30,
        prepare,
        follow_up=[answer_or_fail_summaries] * 2,
        models=(M1,),
        config=config,
    )
    assert_same(live, resumed)


async def test_several_incomplete_answers_each_keep_their_cancel_marker(db_url: str) -> None:
    partial = [text(f"partial {i} goes on and on and on", chunks=6, delay_s=0.01) for i in range(2)]
    responses = [partial[0], text("complete"), partial[1]]

    async def prepare(session: SessionHandle) -> None:
        await cancelled_turn(session, "one")
        await turn(session, "two")
        await cancelled_turn(session, "three")

    live, resumed = await live_and_resumed(db_url, responses, prepare, models=(M1,), config=CONFIG)
    assert_same(live, resumed)
    markers = [
        i
        for i, vm in enumerate(resumed.visible)
        if vm.message == SystemMessage(content=PHRASES[CONFIG.language].incomplete_assistant_marker)
    ]
    assert len(markers) == 2
    for index in markers:
        before = resumed.visible[index - 1].message
        assert isinstance(before, AssistantMessage)
        assert before.status is MessageStatus.INCOMPLETE


async def test_skill_augmentation_is_not_replayed_after_resume(db_url: str) -> None:
    skill = SkillDefinition(name="greet", description="greets", prompt="SAY HELLO LOUDLY")

    async def prepare(session: SessionHandle) -> None:
        assert await turn(session, "/greet the team") is OutcomeStatus.COMPLETED

    live, resumed = await live_and_resumed(
        db_url,
        [text("HELLO TEAM")],
        prepare,
        lambda b: b.register_skill(skill),
        models=(M1,),
        config=CONFIG,
    )
    assert_same(live, resumed)
    rendered = resumed.next_request.model_dump_json()
    assert "SAY HELLO LOUDLY" not in rendered and "/greet the team" in rendered
    ledger = resumed.handle.events
    audits = [
        e.payload
        for e in ledger
        if isinstance(e.payload, Metadata) and e.payload.key == "skill_invocations"
    ]
    assert [a.value for a in audits] == [[{"skill_name": "greet"}]]
    assert live.title == "the team"


# -- pinned config ---------------------------------------------------------------------------


async def test_pinned_config_survives_agent_config_changes(db_url: str) -> None:
    first = await SqlSessionStorage.open(db_url)
    second = await SqlSessionStorage.open(db_url)
    try:
        agent, _ = await build_agent(
            [text("hi")], models=(M1, M2), config=CONFIG, configure=with_storage(first)
        )
        session = await agent.new_session()
        await turn(session, "hello")
        await agent.shutdown()

        changed = CONFIG.model_copy(update={"default_model": "m2", "memory_namespace": "beta"})
        agent2, provider2 = await build_agent(
            [text("again")], models=(M1, M2), config=changed, configure=with_storage(second)
        )
        resumed = await agent2.resume_session(session.session_id)
        assert resumed.config.pinned == session.config.pinned
        assert resumed.config.pinned.model_id == "m1"
        assert resumed.config.pinned.memory_namespace == "alpha"
        await turn(resumed, "still m1?")
        assert [r.model_id for r in provider2.requests] == ["m1"]
        await resumed.close()
        assert (await agent2.new_session()).config.pinned.model_id == "m2"
    finally:
        await first.close()
        await second.close()


async def test_resume_with_a_vanished_model_is_model_not_supported(db_url: str) -> None:
    first = await SqlSessionStorage.open(db_url)
    second = await SqlSessionStorage.open(db_url)
    try:
        agent, _ = await build_agent(
            [text("hi")], models=(M1,), config=CONFIG, configure=with_storage(first)
        )
        session = await agent.new_session()
        await turn(session, "hello")
        await session.close()

        agent2, _ = await build_agent(
            models=(M2,),
            config=CONFIG.model_copy(update={"default_model": "m2"}),
            configure=with_storage(second),
        )
        with pytest.raises(AgentError) as caught:
            await agent2.resume_session(session.session_id)
        assert caught.value.code is ErrorCode.MODEL_NOT_SUPPORTED
        assert "m1" in caught.value.message
        assert not (await agent2.new_session()).is_closed  # the reservation was rolled back
    finally:
        await first.close()
        await second.close()


async def test_resume_answers_tool_calls_left_without_results(storage: SqlSessionStorage) -> None:
    proxy = ProxyStorage(storage)
    proxy.fail_append = lambda event: event.payload.kind == "tool_result"
    tool = RecordingTool("lookup")
    calls = ScriptedResponse.tool_calls([("c1", "lookup", {"x": 1}), ("c2", "lookup", {"x": 2})])
    agent, _ = await build_agent(
        [calls], models=(M1,), config=CONFIG, tools=[tool], configure=with_storage(proxy)
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("look it up")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.STORAGE_ERROR
    await session.close()
    durable = await storage.load_events(session.session_id)
    assert [e.payload.kind for e in durable][-2:] == ["tool_call", "tool_call"]

    fresh, provider = await build_agent(
        [text("sorry, the lookup was interrupted")],
        models=(M1,),
        config=CONFIG,
        tools=[tool],
        configure=with_storage(storage),
    )
    resumed = await fresh.resume_session(session.session_id)
    repairs = [payload_as(e.payload, ToolResult) for e in resumed.events[len(durable) :]]
    assert [(r.result.call_id, r.result.output.content) for r in repairs] == [
        ("c1", TOOL_INTERRUPTED),
        ("c2", TOOL_INTERRUPTED),
    ]
    assert await turn(resumed, "and now?") is OutcomeStatus.COMPLETED
    sent = provider.requests[0].messages
    assert [m.tool_call_id for m in sent if m.role.value == "tool"] == ["c1", "c2"]
    assert_contiguous(await storage.load_events(session.session_id))


async def test_memory_mode_survives_resume(db_url: str) -> None:
    first = await SqlSessionStorage.open(db_url)
    second = await SqlSessionStorage.open(db_url)
    try:
        agent, _ = await build_agent(
            [text("hi"), text("SUMMARY")],
            models=(M1,),
            config=CONFIG,
            configure=with_storage(first),
        )
        session = await agent.new_session()
        await turn(session, "hello")
        await session.set_memory_mode(MemoryMode.CONTEXT_PERCENT)
        await session.set_memory_mode(MemoryMode.CONTEXT_PERCENT)  # unchanged: no new event
        await agent.shutdown()
        modes = [
            e
            for e in await second.load_events(session.session_id)
            if isinstance(e.payload, Metadata) and e.payload.key == "memory_mode"
        ]
        assert [e.payload.value for e in modes] == [{"mode": "context_percent"}]  # type: ignore[union-attr]

        agent2, _ = await build_agent(
            [text("again")], models=(M1,), config=CONFIG, configure=with_storage(second)
        )
        resumed = await agent2.resume_session(session.session_id)
        assert resumed.memory_mode is MemoryMode.CONTEXT_PERCENT
        fresh = await build_agent([], models=(M1,), config=CONFIG)
        assert (await fresh[0].new_session()).memory_mode is MemoryMode.MANUAL
    finally:
        await first.close()
        await second.close()


async def test_last_seq_shows_that_another_process_appended(db_url: str) -> None:
    mine, theirs = await SqlSessionStorage.open(db_url), await SqlSessionStorage.open(db_url)
    try:
        agent, _ = await build_agent(
            [text("hi")], models=(M1,), config=CONFIG, configure=with_storage(mine)
        )
        session = await agent.new_session()
        assert session.last_seq == 1  # the session profile
        await turn(session, "hello")
        assert session.last_seq == (await mine.load_head(session.session_id)).last_seq == 3

        other, _ = await build_agent(
            [text("there")], models=(M1,), config=CONFIG, configure=with_storage(theirs)
        )
        elsewhere = await other.resume_session(session.session_id)
        assert elsewhere.last_seq == 3
        await turn(elsewhere, "from another process")
        assert elsewhere.last_seq == 5

        assert session.last_seq == 3  # this handle is now behind the storage
        assert (await mine.load_head(session.session_id)).last_seq == 5
        await agent.shutdown()
        await other.shutdown()
    finally:
        await mine.close()
        await theirs.close()
