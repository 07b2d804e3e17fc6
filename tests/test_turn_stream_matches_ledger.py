"""What a client was shown during a turn is what the ledger stores (real SQLite storage).

Each test streams a turn, concatenates the text deltas the client received, and compares them
with the assistant messages of that turn read back from the database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from kernel_kit import RecordingTool, build_agent, model, text
from youyou import (
    AgentConfig,
    AgentEvent,
    ErrorCode,
    OutcomeStatus,
    ScriptedResponse,
    SessionHandle,
    TextBlock,
)
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.events import TextDeltaEvent, ToolCallEnd
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.model import (
    ChatError,
    ChatRequest,
    ProviderError,
    ProviderErrorKind,
    TextDelta,
)
from youyou.domain.templates import TURN_ABORTED_MESSAGE

M1 = model("m1", window=100_000)


@pytest.fixture
async def storage(sqlite_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(sqlite_url)
    yield opened
    await opened.close()


async def open_session(
    storage: SqlSessionStorage,
    responses: Sequence[ResponseSource],
    *,
    config: AgentConfig | None = None,
    tools: Sequence[object] = (),
) -> tuple[SessionHandle, list[ChatRequest]]:
    agent, provider = await build_agent(
        responses,
        models=(M1,),
        config=config,
        tools=tools,
        configure=lambda b: b.register_session_storage(storage),
    )
    return await agent.new_session(), provider.requests


def shown_text(events: Sequence[AgentEvent]) -> str:
    return "".join(e.payload.text for e in events if isinstance(e.payload, TextDeltaEvent))


def last_turn(events: Sequence[LedgerEvent]) -> list[LedgerEvent]:
    start = max(i for i, e in enumerate(events) if isinstance(e.payload, UserMessage))
    return list(events[start + 1 :])


def answers(events: Sequence[LedgerEvent]) -> list[AssistantMessage]:
    return [e.payload for e in last_turn(events) if isinstance(e.payload, AssistantMessage)]


def stored_text(messages: Sequence[AssistantMessage]) -> str:
    return "".join(b.text for m in messages for b in m.content if isinstance(b, TextBlock))


async def test_context_length_error_after_streamed_text_is_not_retried(
    storage: SqlSessionStorage,
) -> None:
    overflow = ChatError(
        error=ProviderError(kind=ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED, message="too long")
    )
    session, requests = await open_session(
        storage,
        [
            text("first answer"),
            ScriptedResponse((TextDelta(text="PARTIAL-"), overflow)),
            text("SUMMARY"),
            text("final"),
        ],
    )
    await (await session.send_message("first")).join()
    running = await session.send_message("second")
    events = await running.collect()
    outcome = await running.join()

    stored = answers(await storage.load_events(session.session_id))
    assert shown_text(events) == stored_text(stored) == "PARTIAL-"
    assert [m.status for m in stored] == [MessageStatus.INCOMPLETE]
    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR
    assert [e.payload.type for e in events][-1] == "error"
    assert len(requests) == 2  # no compaction, no silent second attempt


async def test_context_length_error_before_any_text_still_compacts_and_retries(
    storage: SqlSessionStorage,
) -> None:
    session, _ = await open_session(
        storage,
        [
            text("first answer"),
            ScriptedResponse.error(ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED),
            text("SUMMARY"),
            text("final", chunks=3),
        ],
    )
    await (await session.send_message("first")).join()
    running = await session.send_message("second")
    events = await running.collect()
    assert (await running.join()).status is OutcomeStatus.COMPLETED
    stored = answers(await storage.load_events(session.session_id))
    assert shown_text(events) == stored_text(stored) == "final"
    assert [m.status for m in stored] == [MessageStatus.COMPLETE]


async def test_a_stream_cut_before_its_finish_is_a_provider_error_keeping_the_partial(
    storage: SqlSessionStorage,
) -> None:
    cut = ScriptedResponse((TextDelta(text="half "), TextDelta(text="an answer")))
    session, _ = await open_session(storage, [cut, text("whole answer")])
    running = await session.send_message("question")
    events = await running.collect()
    outcome = await running.join()

    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR
    assert outcome.error.retryable
    stored = answers(await storage.load_events(session.session_id))
    assert shown_text(events) == stored_text(stored) == "half an answer"
    assert [m.status for m in stored] == [MessageStatus.INCOMPLETE]
    # the session goes on; the next turn completes normally
    assert (await (await session.send_message("again")).join()).status is OutcomeStatus.COMPLETED


async def test_a_cut_stream_with_nothing_shown_stores_nothing(storage: SqlSessionStorage) -> None:
    session, _ = await open_session(storage, [ScriptedResponse(())])
    running = await session.send_message("question")
    events = await running.collect()
    outcome = await running.join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR
    assert shown_text(events) == ""
    assert answers(await storage.load_events(session.session_id)) == []


async def test_tool_calls_over_the_limit_are_recorded_with_why_they_did_not_run(
    storage: SqlSessionStorage,
) -> None:
    tool = RecordingTool("t")
    session, requests = await open_session(
        storage,
        [
            ScriptedResponse.tool_calls([("c0", "t", {"x": 0})]),
            ScriptedResponse.tool_calls(
                [("c1", "t", {"x": 1}), ("c2", "t", {"x": 2})], text="two more"
            ),
            text("done without tools"),
        ],
        config=AgentConfig(default_model="m1", max_tool_calls_per_turn=2),
        tools=[tool],
    )
    running = await session.send_message("loop")
    events = await running.collect()
    assert (await running.join()).status is OutcomeStatus.COMPLETED
    assert tool.calls == [{"x": 0}]

    turn = last_turn(await storage.load_events(session.session_id))
    calls = [e.payload.call for e in turn if isinstance(e.payload, ToolCall)]
    assert [(c.call_id, c.requested_arguments) for c in calls] == [
        ("c0", {"x": 0}),
        ("c1", {"x": 1}),
        ("c2", {"x": 2}),
    ]
    results = {
        e.payload.result.call_id: e.payload.result.output
        for e in turn
        if isinstance(e.payload, ToolResult)
    }
    for call_id in ("c1", "c2"):
        refused = results[call_id]
        assert refused.is_error
        assert "limit of 2 tool calls per turn" in refused.content
        assert refused.metadata is not None and refused.metadata["synthetic"] is True
    kinds = [e.payload.kind for e in turn]
    assert kinds.index("system_message") > max(i for i, k in enumerate(kinds) if k == "tool_result")
    assert SystemMessage(content=TURN_ABORTED_MESSAGE) in [e.payload for e in turn]
    # the client saw the refused calls end, as the ledger records them
    ended = [e.payload.call_id for e in events if isinstance(e.payload, ToolCallEnd)]
    assert ended == ["c0", "c1", "c2"]
    assert shown_text(events) == stored_text(answers(await storage.load_events(session.session_id)))
    # the model's last request answers every call it made, then tells it tools are off
    last = requests[-1]
    assert last.tools == ()
    assert [m.tool_call_id for m in last.messages if m.role.value == "tool"] == ["c0", "c1", "c2"]
