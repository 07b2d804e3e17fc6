import asyncio
import base64
from typing import Any

import pytest

from kernel_kit import RecordingTool, block_text, build_agent, model, payload_types, text
from youyou import (
    AgentConfig,
    AgentError,
    ErrorCode,
    FileContentBlock,
    ImageBlock,
    OutcomeStatus,
    ProviderCapability,
    ScriptedResponse,
    TextBlock,
    TurnOptions,
)
from youyou.domain.ledger import (
    AssistantMessage,
    MessageStatus,
    Metadata,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.model import ChatRequest, ProviderErrorKind
from youyou.domain.templates import TURN_ABORTED_MESSAGE, Language

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


async def test_sequence_is_turn_scoped_and_terminal_event_is_last() -> None:
    agent, _ = await build_agent([text("one two three", chunks=3), text("again", chunks=2)])
    session = await agent.new_session()
    for _ in range(2):
        turn = await session.send_message("hi")
        events = await turn.collect()
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        assert payload_types(events)[0] == "turn_started"
        assert payload_types(events)[-1] == "turn_complete"
        assert len({(e.session_id, e.turn_id) for e in events}) == 1
        assert (await turn.join()).status is OutcomeStatus.COMPLETED


async def test_text_streams_before_the_turn_ends() -> None:
    agent, _ = await build_agent([text("a b c d", chunks=4, delay_s=0.05)])
    session = await agent.new_session()
    turn = await session.send_message("hi")
    first_delta = None
    async for event in turn.events:
        if event.payload.type == "text_delta":
            first_delta = event
            break
    assert first_delta is not None
    assert session.events[-1].payload == UserMessage(content=(TextBlock(text="hi"),))
    rest = await turn.collect()
    assert payload_types(rest)[-1] == "turn_complete"


async def test_ledger_order_of_a_plain_turn() -> None:
    agent, _ = await build_agent([text("answer")])
    session = await agent.new_session()
    turn = await session.send_message("question")
    await turn.join()
    payloads = [e.payload for e in session.events]
    assert isinstance(payloads[0], Metadata) and payloads[0].key == "session_profile"
    assert payloads[1] == UserMessage(content=(TextBlock(text="question"),))
    assert payloads[2] == AssistantMessage(content=(TextBlock(text="answer"),))
    assert [e.seq for e in session.events] == [1, 2, 3]


CANCEL_MARKERS = {
    Language.EN: "[This message was interrupted because the user cancelled it]",
    Language.ZH: "[此消息因用户取消而中断]",
}


@pytest.mark.parametrize("language", list(Language))
async def test_cancel_mid_stream_saves_partial_text_as_incomplete(language: Language) -> None:
    agent, provider = await build_agent(
        [
            text("partial answer that goes on and on", chunks=8, delay_s=0.02),
            text("next"),
        ],
        config=AgentConfig(default_model="m1", language=language),
    )
    session = await agent.new_session()
    turn = await session.send_message("hi")
    controller = turn.controller()
    seen = []
    async for event in turn.events:
        seen.append(event)
        if sum(e.payload.type == "text_delta" for e in seen) == 2:
            controller.cancel()
            controller.cancel()  # idempotent
            turn.cancel()
    outcome = await turn.join()
    assert outcome.status is OutcomeStatus.CANCELLED
    assert await turn.join() == outcome
    non_error = [e for e in seen if e.payload.type != "error"]
    assert non_error[-1].payload.type == "turn_cancelled"
    last = session.events[-1].payload
    assert isinstance(last, AssistantMessage)
    assert last.status is MessageStatus.INCOMPLETE
    assert block_text(last.content[0]) == "".join(
        e.payload.text for e in seen if e.payload.type == "text_delta"
    )
    # the next request shows the cancel marker, in the configured language, after the answer
    await (await session.send_message("go on")).join()
    contents = [m.content for m in provider.requests[-1].messages]
    marker_index = next(
        i
        for i, c in enumerate(contents)
        if c and getattr(c[0], "text", "") == CANCEL_MARKERS[language]
    )
    assert getattr(contents[marker_index - 1][0], "text", "").startswith("partial")


async def test_waiting_for_the_first_event_is_announced_until_it_comes() -> None:
    agent, _ = await build_agent(
        [text("late answer", chunks=3, delay_s=0.45)],
        config=AgentConfig(default_model="m1", model_wait_notice_ms=100),
    )
    session = await agent.new_session()
    turn = await session.send_message("hi")
    types = payload_types(await turn.collect())

    first_text = types.index("text_delta")
    assert types[0] == "turn_started"
    assert types[1:first_text] == ["model_waiting"] * (first_text - 1) and first_text >= 4
    assert "model_waiting" not in types[first_text:]  # the answer has started: no more
    assert len(session.events) == 3  # profile, user, assistant: progress is not stored


async def test_cancel_after_completion_keeps_the_real_outcome() -> None:
    agent, _ = await build_agent([text("done")])
    session = await agent.new_session()
    turn = await session.send_message("hi")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    turn.cancel()
    turn.controller().cancel()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert payload_types(await turn.collect())[-1] == "turn_complete"


async def test_join_without_consuming_events() -> None:
    agent, _ = await build_agent([text("done", chunks=3)])
    session = await agent.new_session()
    turn = await session.send_message("hi")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED


async def test_turn_busy_while_a_turn_runs() -> None:
    agent, _ = await build_agent([text("slow", chunks=4, delay_s=0.05), text("ok")])
    session = await agent.new_session()
    turn = await session.send_message("first")
    with pytest.raises(AgentError) as info:
        await session.send_message("second")
    assert info.value.code is ErrorCode.TURN_BUSY
    await turn.join()
    await (await session.send_message("second")).join()


@pytest.mark.parametrize(
    "bad_input",
    [
        [],
        [TextBlock(text="  ")],
        [ImageBlock(mime_type="image/jpeg", data_base64=PNG)],
        [ImageBlock(mime_type="image/png", data_base64=base64.b64encode(b"GIF8").decode())],
    ],
)
async def test_bad_input_is_rejected_before_anything_is_written(bad_input: list[object]) -> None:
    agent, provider = await build_agent([text("x")])
    session = await agent.new_session()
    before = session.events
    with pytest.raises(AgentError) as info:
        await session.send_message(bad_input)  # type: ignore[arg-type]
    assert info.value.code is ErrorCode.INPUT_VALIDATION
    assert session.events == before
    assert provider.requests == []


async def test_image_needs_vision_but_file_content_does_not() -> None:
    no_vision = model("text-only", caps=frozenset({ProviderCapability.STREAMING}))
    agent, provider = await build_agent([text("read it"), text("never")], models=[no_vision])
    session = await agent.new_session()
    turn = await session.send_message([FileContentBlock(file_name="app.log", text="ERR 1")])
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    turn = await session.send_message([ImageBlock(mime_type="image/png", data_base64=PNG)])
    outcome = await turn.join()
    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is ErrorCode.MODEL_NOT_SUPPORTED
    assert len(provider.requests) == 1  # the guard ran before any provider I/O


async def test_tools_need_tool_use_capability() -> None:
    no_tools = model("chat-only", caps=frozenset({ProviderCapability.STREAMING}))
    agent, provider = await build_agent([text("x")], models=[no_tools], tools=[RecordingTool("t")])
    session = await agent.new_session()
    outcome = await (await session.send_message("hi")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.MODEL_NOT_SUPPORTED
    assert provider.requests == []


async def test_offer_tools_false_lets_a_model_without_tool_use_chat() -> None:
    no_tools = model("chat-only", caps=frozenset({ProviderCapability.STREAMING}))
    agent, provider = await build_agent(
        [text("plain answer")], models=[no_tools], tools=[RecordingTool("t")]
    )
    session = await agent.new_session()
    turn = await session.send_message("hi", options=TurnOptions(offer_tools=False))
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    [request] = provider.requests
    assert request.tools == ()
    assert isinstance(session.events[-1].payload, AssistantMessage)


async def test_tool_loop_feeds_results_back_in_model_order() -> None:
    tool = RecordingTool("lookup")
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls(
                [("c1", "lookup", {"x": 1}), ("c2", "lookup", {"x": 2})], text="let me check"
            ),
            text("found it"),
        ],
        tools=[tool],
    )
    session = await agent.new_session()
    turn = await session.send_message("q")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    kinds = [type(e.payload).__name__ for e in session.events]
    assert kinds == [
        "Metadata",
        "UserMessage",
        "AssistantMessage",
        "ToolCall",
        "ToolCall",
        "ToolResult",
        "ToolResult",
        "AssistantMessage",
    ]
    second = provider.requests[1]
    assert [m.role.value for m in second.messages] == ["user", "assistant", "tool", "tool"]
    assert [c.call_id for c in second.messages[1].tool_calls] == ["c1", "c2"]
    assert [m.tool_call_id for m in second.messages[2:]] == ["c1", "c2"]
    assert second.tools and second.tools[0].name == "lookup"
    starts = [e.payload for e in events if e.payload.type == "tool_call_start"]
    assert [s.arguments for s in starts] == [{"x": 1}, {"x": 2}]
    ends = [e.payload for e in events if e.payload.type == "tool_call_end"]
    assert ends[0].output.metadata == {"tool": "lookup"}


async def test_tool_calls_without_tool_calls_finish_reason_are_a_provider_error() -> None:
    from youyou.domain.model import Done, FinishReason, ToolCallRequested

    bad = ScriptedResponse(
        (
            ToolCallRequested(call_id="c", tool_name="t", arguments={}),
            Done(finish_reason=FinishReason.STOP),
        )
    )
    tool = RecordingTool("t")
    agent, _ = await build_agent([bad], tools=[tool])
    session = await agent.new_session()
    turn = await session.send_message("q")
    events = await turn.collect()
    outcome = await turn.join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR
    assert events[-1].payload.type == "error"
    assert tool.calls == []


async def test_max_tool_calls_then_tools_disabled_final_answer() -> None:
    tool = RecordingTool("t")
    calls = [ScriptedResponse.tool_calls([(f"c{i}", "t", {})]) for i in range(3)]
    agent, provider = await build_agent(
        [*calls, text("summary without tools")],
        tools=[tool],
        config=AgentConfig(default_model="m1", max_tool_calls_per_turn=2),
    )
    session = await agent.new_session()
    turn = await session.send_message("loop")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert len(tool.calls) == 2
    assert provider.requests[-1].tools == ()
    assert SystemMessage(content=TURN_ABORTED_MESSAGE) in [e.payload for e in session.events]


async def test_max_tool_calls_exceeded_when_the_model_keeps_calling() -> None:
    tool = RecordingTool("t")
    calls = [ScriptedResponse.tool_calls([(f"c{i}", "t", {})]) for i in range(3)]
    agent, _ = await build_agent(
        calls, tools=[tool], config=AgentConfig(default_model="m1", max_tool_calls_per_turn=1)
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("loop")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.MAX_TOOL_CALLS_EXCEEDED


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        (ProviderErrorKind.TRANSPORT, ErrorCode.PROVIDER_ERROR),
        (ProviderErrorKind.PROVIDER, ErrorCode.PROVIDER_ERROR),
        (ProviderErrorKind.UNSUPPORTED_CAPABILITY, ErrorCode.MODEL_NOT_SUPPORTED),
    ],
)
async def test_provider_errors_map_to_codes(kind: ProviderErrorKind, code: ErrorCode) -> None:
    agent, _ = await build_agent([ScriptedResponse.error(kind, "boom", retryable=True)])
    session = await agent.new_session()
    turn = await session.send_message("q")
    events = await turn.collect()
    outcome = await turn.join()
    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is code
    assert events[-1].payload.type == "error"
    assert events[-1].payload.code == code.value


async def test_a_raising_provider_is_a_provider_error() -> None:
    def explode(_: ChatRequest) -> ScriptedResponse:
        raise ConnectionError("socket closed")

    agent, _ = await build_agent([explode])
    session = await agent.new_session()
    outcome = await (await session.send_message("q")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR


async def test_unexpected_failure_inside_the_turn_is_a_panic() -> None:
    class Broken:
        """Survives the warm-up at build, then fails inside the turn."""

        calls = 0

        def count_text(self, text: str) -> int:
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("tokenizer exploded")
            return 0

    broken = Broken()
    agent, _ = await build_agent(
        [text("x")], configure=lambda b: b.with_token_counter(lambda _: broken)
    )
    session = await agent.new_session()
    turn = await session.send_message("q")
    events = await turn.collect()
    outcome = await turn.join()
    assert outcome.status is OutcomeStatus.PANICKED
    assert outcome.error is not None and outcome.error.code is ErrorCode.INTERNAL_PANIC
    assert events[-1].payload.type == "error"
    # the session is usable again
    assert not session.is_closed


async def test_closed_session_refuses_turns() -> None:
    agent, _ = await build_agent([text("x")])
    session = await agent.new_session()
    await session.close()
    with pytest.raises(AgentError) as info:
        await session.send_message("hi")
    assert info.value.code is ErrorCode.SESSION_NOT_FOUND


async def test_close_cancels_the_running_turn() -> None:
    agent, _ = await build_agent([text("long " * 50, chunks=50, delay_s=0.02)])
    session = await agent.new_session()
    turn = await session.send_message("hi")
    await asyncio.sleep(0.05)
    await session.close()
    assert (await turn.join()).status is OutcomeStatus.CANCELLED
    assert session.is_closed


def _kinds(events: object) -> list[type]:
    return [type(e.payload) for e in events]  # type: ignore[attr-defined]


async def test_tool_results_hang_after_their_calls_in_the_ledger() -> None:
    tool = RecordingTool("t")
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "t", {"x": 5})]), text("ok")], tools=[tool]
    )
    session = await agent.new_session()
    await (await session.send_message("q")).join()
    call = next(e.payload for e in session.events if isinstance(e.payload, ToolCall))
    result = next(e.payload for e in session.events if isinstance(e.payload, ToolResult))
    assert call.call.requested_arguments == call.call.effective_arguments == {"x": 5}
    assert result.result.output.metadata == {"tool": "t"}


async def test_a_failed_tool_result_write_is_repaired_before_the_next_turn() -> None:
    from youyou.adapters.storage.memory import InMemorySessionStorage

    class FailingResults(InMemorySessionStorage):
        fail = True

        async def append_event(self, session_id: str, event: Any, summary: Any) -> None:
            if self.fail and isinstance(event.payload, ToolResult):
                self.fail = False
                raise OSError("disk full")
            await super().append_event(session_id, event, summary)

    storage = FailingResults()
    tool = RecordingTool("t")
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "t", {})]), text("recovered")],
        tools=[tool],
        configure=lambda b: b.register_session_storage(storage),
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("first")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.STORAGE_ERROR
    assert (await (await session.send_message("second")).join()).status is OutcomeStatus.COMPLETED
    repaired = [
        e.payload
        for e in await storage.load_events(session.session_id)
        if isinstance(e.payload, ToolResult)
    ]
    assert [r.result.call_id for r in repaired] == ["c1"]
    assert repaired[0].result.output.metadata == {
        "synthetic": True,
        "reason": "interrupted_before_result",
    }
    roles = [m.role.value for m in provider.requests[-1].messages]
    assert roles == ["user", "assistant", "tool", "user"]


async def test_a_turn_task_cancelled_from_outside_still_ends_its_stream() -> None:
    agent, _ = await build_agent([text("slow " * 20, chunks=20, delay_s=0.05)])
    session = await agent.new_session()
    turn = await session.send_message("hi")
    await asyncio.sleep(0.05)
    engine_tasks = [t for t in asyncio.all_tasks() if "_run" in repr(t.get_coro())]
    assert len(engine_tasks) == 1
    engine_tasks[0].cancel()
    outcome = await asyncio.wait_for(turn.join(), 2)
    assert outcome.status is OutcomeStatus.CANCELLED
    events = await asyncio.wait_for(turn.collect(), 2)
    assert payload_types(events)[-1] == "turn_cancelled"
    await (await session.send_message("again")).join()  # the session is usable again
