import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from kernel_kit import MODEL, RecordingTool, block_text, build_agent, payload_types, text
from plugin_kit import ScriptedPlugin, patch_arguments
from youyou import (
    AgentBuilder,
    AgentConfig,
    AgentError,
    CancellationToken,
    ErrorCode,
    OutcomeStatus,
    ScriptedProvider,
    ScriptedResponse,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
)
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.api.running_turn import TurnController
from youyou.application.tool_dispatcher import CANCELLED_OUTPUT
from youyou.domain.hooks import HookKind
from youyou.domain.ledger import ToolCall, ToolResult
from youyou.domain.model import ChatRequest, Done, FinishReason, ToolCallRequested
from youyou.domain.templates import TOOL_OUTPUT_TRUNCATED_SUFFIX


def batch(*names: str) -> ScriptedResponse:
    return ScriptedResponse.tool_calls([(f"c{i}", name, {"x": i}) for i, name in enumerate(names)])


def results(session: Any) -> list[ToolResult]:
    return [e.payload for e in session.events if isinstance(e.payload, ToolResult)]


async def test_read_only_batch_runs_concurrently_and_commits_in_model_order() -> None:
    slow, fast, mid = (
        RecordingTool("slow", delay=0.15),
        RecordingTool("fast", delay=0.01),
        RecordingTool("mid", delay=0.05),
    )
    agent, provider = await build_agent(
        [batch("slow", "fast", "mid"), text("done")], tools=[slow, fast, mid]
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    tools = (slow, fast, mid)
    assert max(t.started[0] for t in tools) < min(t.finished[0] for t in tools)  # all in flight
    assert fast.finished[0] < slow.finished[0]  # completion order differs from model order
    types = [t for t in payload_types(events) if t.startswith("tool_call")]
    assert types == ["tool_call_start"] * 3 + ["tool_call_end"] * 3
    ends = [e.payload.call_id for e in events if e.payload.type == "tool_call_end"]
    assert ends == ["c0", "c1", "c2"]
    assert [r.result.call_id for r in results(session)] == ["c0", "c1", "c2"]
    assert [m.tool_call_id for m in provider.requests[1].messages[2:]] == ["c0", "c1", "c2"]


async def test_one_mutating_call_makes_the_batch_serial() -> None:
    reader, writer = (
        RecordingTool("reader", delay=0.03),
        RecordingTool("writer", mutating=True, delay=0.03),
    )
    agent, _ = await build_agent(
        [batch("reader", "writer", "reader"), text("done")], tools=[reader, writer]
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    types = [t for t in payload_types(events) if t.startswith("tool_call")]
    assert types == ["tool_call_start", "tool_call_end"] * 3
    assert reader.finished[0] <= writer.started[0]
    assert writer.finished[0] <= reader.started[1]


async def test_cancel_during_a_serial_batch_skips_the_rest_in_order() -> None:
    holder: dict[str, TurnController] = {}

    async def cancel_then_finish(args: dict[str, Any]) -> ToolOutput:
        holder["controller"].cancel()
        await asyncio.sleep(0.01)  # a running tool is not killed
        return ToolOutput(content="first finished")

    first = RecordingTool("first", mutating=True, behaviour=cancel_then_finish)
    later = RecordingTool("later", mutating=True)
    agent, provider = await build_agent(
        [batch("first", "later", "later"), text("never")], tools=[first, later]
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    holder["controller"] = turn.controller()
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.CANCELLED
    assert later.calls == []
    outs = [r.result.output for r in results(session)]
    assert outs[0].content == "first finished"
    assert outs[1:] == [CANCELLED_OUTPUT, CANCELLED_OUTPUT]
    assert CANCELLED_OUTPUT.content == "[tool skipped: cancelled before execution]"
    assert CANCELLED_OUTPUT.metadata == {
        "synthetic": True,
        "skipped": True,
        "reason": "cancelled_before_execution",
    }
    kinds = [type(e.payload) for e in session.events[-6:]]
    call_then_result: list[type[object]] = [ToolCall, ToolResult]
    assert kinds == call_then_result * 3
    types = [t for t in payload_types(events) if t.startswith("tool_call")]
    assert types == ["tool_call_start", "tool_call_end"] * 3
    assert payload_types(events)[-1] == "turn_cancelled"
    assert len(provider.requests) == 1  # no further model request after the cancel


class HoldingProvider(ScriptedProvider):
    """Streams two tool calls, then holds the response open until the turn is cancelled."""

    def __init__(self) -> None:
        super().__init__(models=(MODEL,))
        self.calls_streamed = asyncio.Event()

    async def chat(self, request: ChatRequest, cancel: CancellationToken) -> Any:
        self.requests.append(request)
        for call_id in ("c0", "c1"):
            yield ToolCallRequested(call_id=call_id, tool_name="t", arguments={})
        self.calls_streamed.set()
        await cancel.wait()
        yield Done(finish_reason=FinishReason.CANCELLED)


async def test_cancel_before_a_concurrent_batch_dispatches_skips_every_call() -> None:
    tool = RecordingTool("t")
    provider = HoldingProvider()
    builder = AgentBuilder(AgentConfig(default_model="m1")).register_model_provider(provider)
    builder.with_token_counter(lambda _: ApproximateTokenCounter()).register_tool(tool)
    session = await (await builder.build()).new_session()
    turn = await session.send_message("go")
    async with asyncio.timeout(10):  # a deadline, not a wait
        await provider.calls_streamed.wait()  # tool calls received, Done not yet
    turn.cancel()
    assert (await turn.join()).status is OutcomeStatus.CANCELLED
    assert tool.calls == []


async def test_timeout_unknown_tool_and_failure_become_error_outputs() -> None:
    async def boom(args: dict[str, Any]) -> ToolOutput:
        raise ValueError("disk on fire")

    slow = RecordingTool("slow", delay=1.0)
    failing = RecordingTool("failing", behaviour=boom)
    agent, provider = await build_agent(
        [batch("slow", "ghost", "failing"), text("handled")],
        tools=[slow, failing],
        config=AgentConfig(default_model="m1", tool_timeout_ms=50),
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    outs = [r.result.output for r in results(session)]
    assert all(o.is_error for o in outs)
    codes = [o.metadata["error_code"] for o in outs if o.metadata]
    assert codes == ["TOOL_TIMEOUT", "TOOL_NOT_FOUND", "TOOL_EXECUTION_ERROR"]
    assert "disk on fire" in outs[2].content
    errors = [e.payload for e in events if e.payload.type == "error"]
    assert [e.code for e in errors] == codes
    assert all(not e.fatal for e in errors)
    assert (
        provider.requests[1]
        .messages[-1]
        .content[0]
        .text.startswith(  # type: ignore[union-attr]
            "TOOL_EXECUTION_ERROR"
        )
    )


async def test_huge_output_is_truncated_everywhere() -> None:
    async def huge(args: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content="é" * 700_000, metadata={"rows": 7})

    tool = RecordingTool("dump", behaviour=huge)
    agent, _ = await build_agent([batch("dump"), text("ok")], tools=[tool])
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    stored = results(session)[0].result.output
    assert stored.content.endswith(TOOL_OUTPUT_TRUNCATED_SUFFIX)
    assert len(stored.content.encode()) <= 1_048_576
    assert stored.metadata == {"rows": 7}
    end = next(e.payload for e in events if e.payload.type == "tool_call_end")
    assert end.output == stored


async def test_display_metadata_is_what_events_show() -> None:
    async def with_display(args: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            content="Loaded skill: x\n\nlong body", metadata={"display": "Loaded skill: x"}
        )

    tool = RecordingTool("show", behaviour=with_display)
    agent, provider = await build_agent([batch("show"), text("ok")], tools=[tool])
    session = await agent.new_session()
    events = await (await session.send_message("go")).collect()
    end = next(e.payload for e in events if e.payload.type == "tool_call_end")
    assert end.output.content == "Loaded skill: x"
    assert block_text(provider.requests[1].messages[-1].content[0]).endswith("long body")


async def test_a_handler_returning_a_wrong_type_is_an_error_result_and_the_turn_goes_on() -> None:
    async def returns_int(args: dict[str, Any]) -> Any:
        return 42

    async def returns_dict(args: dict[str, Any]) -> Any:
        return {"content": "looks like output"}

    agent, provider = await build_agent(
        [batch("counter", "dicty"), text("recovered"), text("second answer")],
        tools=[
            RecordingTool("counter", behaviour=returns_int),
            RecordingTool("dicty", behaviour=returns_dict),
        ],
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    outs = [r.result.output for r in results(session)]
    assert [o.content for o in outs] == [
        "TOOL_EXECUTION_ERROR: tool 'counter' returned int, expected ToolOutput",
        "TOOL_EXECUTION_ERROR: tool 'dicty' returned dict, expected ToolOutput",
    ]
    assert all(o.is_error for o in outs)
    errors = [e.payload for e in events if e.payload.type == "error"]
    assert [(e.code, e.fatal) for e in errors] == [("TOOL_EXECUTION_ERROR", False)] * 2
    assert block_text(provider.requests[1].messages[-1].content[0]) == outs[1].content
    # The next turn finds every call answered: no "process stopped" result is added.
    assert (await (await session.send_message("again")).join()).status is OutcomeStatus.COMPLETED
    assert len(results(session)) == 2


async def test_a_handler_editing_its_arguments_leaves_the_recorded_call_alone() -> None:
    async def edits(args: dict[str, Any]) -> ToolOutput:
        args["filter"]["level"] = "debug"
        args["x"] = 666
        return ToolOutput(content="edited")

    tool = RecordingTool("edit", behaviour=edits)
    sent = {"x": 1, "filter": {"level": "error"}}
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c0", "edit", sent)]), text("ok")], tools=[tool]
    )
    session = await agent.new_session()
    await (await session.send_message("go")).join()
    model_sent = {"x": 1, "filter": {"level": "error"}}
    call = next(e.payload.call for e in session.events if isinstance(e.payload, ToolCall))
    assert call.requested_arguments == call.effective_arguments == model_sent
    assert provider.requests[1].messages[1].tool_calls[0].arguments == model_sent


SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "filters": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
    "additionalProperties": False,
}


@dataclass
class SchemaTool:
    """A read-only tool with the given parameters schema; records the arguments it receives."""

    name: str
    schema: dict[str, Any]
    validate: bool = True
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            description=f"tool {self.name}",
            parameters_schema=self.schema,
            validate_arguments=self.validate,
        )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        self.calls.append(tool_input.arguments)
        return ToolOutput(content=f"{self.name} ok")


async def test_arguments_that_break_the_schema_are_answered_without_calling_the_tool() -> None:
    search = SchemaTool("search", SEARCH_SCHEMA)
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("c0", "search", {"query": "disk", "limit": "ten"}),
        ("c1", "search", {"limit": 5, "verbose": True}),
        ("c2", "search", {"query": "disk", "filters": ["a", 7]}),
        ("c3", "search", {"query": "disk", "limit": 3}),
    ]
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls(calls), text("let me fix that")], tools=[search]
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert search.calls == [{"query": "disk", "limit": 3}]
    outs = [r.result.output.content for r in results(session)]
    prefix = "INPUT_VALIDATION: invalid arguments for tool 'search': "
    assert outs == [
        prefix + "argument 'limit': 'ten' is not of type 'integer'",
        prefix + "arguments: 'query' is a required property; arguments: Additional properties "
        "are not allowed ('verbose' was unexpected)",
        prefix + "argument 'filters[1]': 7 is not of type 'string'",
        "search ok",
    ]
    errors = [e.payload for e in events if e.payload.type == "error"]
    assert [(e.code, e.fatal) for e in errors] == [("INPUT_VALIDATION", False)] * 3
    replies = [block_text(m.content[0]) for m in provider.requests[1].messages[-4:]]
    assert replies == outs  # the model reads why, so it can correct itself


async def test_arguments_are_checked_after_before_tool_use_patches() -> None:
    search = SchemaTool("search", SEARCH_SCHEMA)

    def patch(payload: Any) -> Any:
        if payload.call_id == "c0":
            return patch_arguments({"query": "disk", "limit": 10})  # repairs the model's call
        return patch_arguments({"query": 5})  # breaks a valid call

    plugin = ScriptedPlugin("fixer", {HookKind.BEFORE_TOOL_USE: patch})
    agent, _ = await build_agent(
        [
            ScriptedResponse.tool_calls(
                [
                    ("c0", "search", {"query": "disk", "limit": "ten"}),
                    ("c1", "search", {"query": "x"}),
                ]
            ),
            text("done"),
        ],
        tools=[search],
        configure=lambda b: b.register_plugin(plugin),
    )
    session = await agent.new_session()
    await (await session.send_message("go")).join()
    assert search.calls == [{"query": "disk", "limit": 10}]
    outs = [r.result.output.content for r in results(session)]
    assert outs[0] == "search ok"
    assert outs[1].endswith("argument 'query': 5 is not of type 'string'")
    recorded = [e.payload.call for e in session.events if isinstance(e.payload, ToolCall)]
    assert recorded[0].requested_arguments == {"query": "disk", "limit": "ten"}
    assert recorded[0].effective_arguments == {"query": "disk", "limit": 10}


async def test_a_tool_that_checks_its_own_arguments_gets_them_unchecked() -> None:
    lenient = SchemaTool("lenient", SEARCH_SCHEMA, validate=False)
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c0", "lenient", {"query": 5})]), text("ok")],
        tools=[lenient],
    )
    session = await agent.new_session()
    await (await session.send_message("go")).join()
    assert lenient.calls == [{"query": 5}]
    assert [r.result.output.content for r in results(session)] == ["lenient ok"]


async def test_a_tool_with_an_invalid_schema_is_refused_at_build() -> None:
    broken = SchemaTool("broken", {"type": "object", "properties": {"n": {"type": "integr"}}})
    with pytest.raises(AgentError) as caught:
        await build_agent([text("never")], tools=[broken])
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert caught.value.message.startswith(
        "tool 'broken' has an invalid parameters_schema: at 'properties.n.type': "
    )
