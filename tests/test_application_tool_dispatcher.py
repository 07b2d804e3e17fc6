import asyncio
from typing import Any

from tests.kernel_kit import RecordingTool, build_agent, payload_types, text

from youyou import AgentConfig, OutcomeStatus, ScriptedResponse, ToolOutput
from youyou.api.running_turn import TurnController
from youyou.application.tool_dispatcher import CANCELLED_OUTPUT
from youyou.domain.ledger import ToolCall, ToolResult
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
    loop = asyncio.get_running_loop()
    started = loop.time()
    turn = await session.send_message("go")
    events = await turn.collect()
    wall = loop.time() - started
    assert wall < 0.15 + 0.01 + 0.05  # not the sum
    assert fast.finished[0] < slow.finished[0]  # completion order differs from model order
    types = [t for t in payload_types(events) if t.startswith("tool_call")]
    assert types == ["tool_call_start"] * 3 + ["tool_call_end"] * 3
    ends = [e.payload.call_id for e in events if e.payload.type == "tool_call_end"]  # type: ignore[union-attr]
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
    assert kinds == [ToolCall, ToolResult] * 3
    types = [t for t in payload_types(events) if t.startswith("tool_call")]
    assert types == ["tool_call_start", "tool_call_end"] * 3
    assert payload_types(events)[-1] == "turn_cancelled"
    assert len(provider.requests) == 1  # no further model request after the cancel


async def test_cancel_before_a_concurrent_batch_dispatches_skips_every_call() -> None:
    tool = RecordingTool("t")
    agent, _ = await build_agent(
        [
            ScriptedResponse.tool_calls([("c0", "t", {}), ("c1", "t", {})], delay_s=0.02),
            text("never"),
        ],
        tools=[tool],
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    async for event in turn.events:
        if event.payload.type == "turn_started":
            break
    await asyncio.sleep(0.03)  # tool calls received, Done not yet
    turn.cancel()
    await turn.join()
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
    assert [e.code for e in errors] == codes  # type: ignore[union-attr]
    assert all(not e.fatal for e in errors)  # type: ignore[union-attr]
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
    assert end.output == stored  # type: ignore[union-attr]


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
    assert end.output.content == "Loaded skill: x"  # type: ignore[union-attr]
    assert provider.requests[1].messages[-1].content[0].text.endswith("long body")  # type: ignore[union-attr]
