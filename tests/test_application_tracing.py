"""The kernel's spans through the OpenTelemetry adapter: a turn with a tool call and a
compaction, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from kernel_kit import RecordingTool, build_agent, model
from telemetry_kit import attrs, has_content, is_child, memory_telemetry, named, one
from youyou import AgentConfig, CompactionPolicy, ScriptedResponse
from youyou.adapters.telemetry.otel import Telemetry
from youyou.config import TelemetrySettings
from youyou.domain.config import MemoryMode
from youyou.domain.model import ProviderErrorKind, Usage

TURN = "invoke_agent youyou"


async def traced_agent(responses: list[Any], tools: list[Any], *, record_content: bool) -> Any:
    telemetry, exporter = memory_telemetry(record_content=record_content)
    config = AgentConfig(
        default_model="m1",
        compaction=CompactionPolicy(mode=MemoryMode.EVERY_N_TURNS, every_n_turns=1),
    )
    agent, _ = await build_agent(
        responses,
        models=[model("m1")],
        config=config,
        tools=tools,
        configure=lambda builder: builder.register_tracer(telemetry.tracer),
    )
    return agent, exporter


def script() -> list[ScriptedResponse]:
    return [
        ScriptedResponse.tool_calls([("call-1", "probe", {"x": 7})]),
        ScriptedResponse.text(
            "disk is full", usage=Usage(input_tokens=120, output_tokens=30, total_tokens=150)
        ),
        ScriptedResponse.text("SUMMARY of turn one"),  # the compaction before turn two
        ScriptedResponse.text(
            "second answer", usage=Usage(input_tokens=80, output_tokens=5, total_tokens=85)
        ),
    ]


async def test_a_turn_is_one_span_with_its_model_and_tool_calls_as_children() -> None:
    agent, exporter = await traced_agent(script(), [RecordingTool("probe")], record_content=False)
    session = await agent.new_session()
    turn = await session.send_message("db-1 disk full?")
    assert (await turn.join()).status.value == "completed"
    spans = exporter.get_finished_spans()
    root = one(spans, TURN)
    assert root.parent is None
    assert attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "youyou",
        "gen_ai.conversation.id": session.session_id,
        "gen_ai.request.model": "m1",
        "youyou.turn.id": turn.turn_id,
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "youyou.turn.outcome": "completed",
        "youyou.turn.tool_calls": 1,
    }
    chats = named(spans, "chat m1")
    assert len(chats) == 2 and all(is_child(c, root) for c in chats)
    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    assert attrs(first)["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(second)["gen_ai.operation.name"] == "chat"
    assert attrs(second)["gen_ai.request.model"] == "m1"
    assert attrs(second)["gen_ai.usage.input_tokens"] == 120
    assert attrs(second)["gen_ai.usage.output_tokens"] == 30
    assert attrs(first)["youyou.request.tools"] == ("probe",)
    tool = one(spans, "execute_tool probe")
    assert is_child(tool, root)
    assert attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "probe",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
    }
    assert first.end_time is not None and tool.start_time is not None
    assert first.end_time <= tool.start_time  # the tool ran after the request that asked
    assert not any(has_content(s) for s in spans)  # content is off by default
    await agent.shutdown()


async def test_a_compaction_is_a_span_of_its_turn_with_the_summary_request_inside() -> None:
    agent, exporter = await traced_agent(script(), [RecordingTool("probe")], record_content=False)
    session = await agent.new_session()
    await (await session.send_message("db-1 disk full?")).join()
    exporter.clear()
    await (await session.send_message("and now?")).join()
    spans = exporter.get_finished_spans()
    root = one(spans, TURN)
    compaction = one(spans, "compaction")
    assert is_child(compaction, root)
    assert attrs(compaction)["youyou.compaction.mode"] == "summary"
    assert attrs(compaction)["gen_ai.conversation.id"] == session.session_id
    assert attrs(compaction)["youyou.compaction.forced"] is False
    assert attrs(compaction)["youyou.compaction.messages"] >= 2
    assert isinstance(attrs(compaction)["youyou.compaction.replaces_through_seq"], int)
    summary, answer = sorted(named(spans, "chat m1"), key=lambda s: s.start_time or 0)
    assert is_child(summary, compaction)
    assert is_child(answer, root)
    assert attrs(root)["gen_ai.usage.output_tokens"] == 5  # the turn's own requests only
    await agent.shutdown()


async def test_content_is_recorded_only_when_enabled() -> None:
    agent, exporter = await traced_agent(script(), [RecordingTool("probe")], record_content=True)
    session = await agent.new_session()
    await (await session.send_message("db-1 disk full?")).join()
    spans = exporter.get_finished_spans()
    first, second = sorted(named(spans, "chat m1"), key=lambda s: s.start_time or 0)
    sent = json.loads(attrs(first)["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "db-1 disk full?"}]}
    call = {"type": "tool_call", "id": "call-1", "name": "probe", "arguments": {"x": 7}}
    assert json.loads(attrs(first)["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}
    ]
    replayed = json.loads(attrs(second)["gen_ai.input.messages"])
    assert replayed[-1]["parts"][0]["type"] == "tool_call_response"
    assert json.loads(attrs(second)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "disk is full"}
    ]
    assert "gen_ai.system_instructions" in attrs(first)
    tool = one(spans, "execute_tool probe")
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"]) == {"x": 7}
    assert attrs(tool)["gen_ai.tool.call.result"] == "probe ok {'x': 7}"
    await agent.shutdown()


async def test_failures_mark_their_spans() -> None:
    async def broken(arguments: dict[str, Any]) -> Any:
        raise RuntimeError("secret detail")

    responses = [
        ScriptedResponse.tool_calls([("call-1", "probe", {})]),
        ScriptedResponse.error(ProviderErrorKind.PROVIDER, "upstream said no"),
    ]
    agent, exporter = await traced_agent(
        responses, [RecordingTool("probe", behaviour=broken)], record_content=False
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("go")).join()
    assert outcome.status.value == "failed"
    spans = exporter.get_finished_spans()
    tool = one(spans, "execute_tool probe")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "TOOL_EXECUTION_ERROR"
    assert "secret detail" not in (tool.status.description or "")  # tool output is content
    failed_chat = sorted(named(spans, "chat m1"), key=lambda s: s.start_time or 0)[-1]
    assert failed_chat.status.status_code is StatusCode.ERROR
    assert attrs(failed_chat)["error.type"] == "provider"
    root = one(spans, TURN)
    assert root.status.status_code is StatusCode.ERROR
    assert attrs(root)["error.type"] == "PROVIDER_ERROR"
    assert attrs(root)["youyou.turn.outcome"] == "failed"
    await agent.shutdown()


@pytest.mark.parametrize("ratio", [0.0, 1.0])
async def test_the_sample_ratio_keeps_or_drops_whole_traces(ratio: float) -> None:
    exporter = InMemorySpanExporter()
    telemetry = Telemetry(
        TelemetrySettings(enabled=True, sample_ratio=ratio), SimpleSpanProcessor(exporter)
    )
    agent, _ = await build_agent(
        [ScriptedResponse.text("ok")],
        configure=lambda builder: builder.register_tracer(telemetry.tracer),
    )
    session = await agent.new_session()
    assert (await (await session.send_message("hi")).join()).status.value == "completed"
    assert len(exporter.get_finished_spans()) == (0 if ratio == 0 else 2)  # turn + chat
    with telemetry.tracer.span("probe", {}) as span:
        # what log lines carry: only the id of a trace that is kept
        kept = re.fullmatch("[0-9a-f]{32}", span.trace_id or "") is not None
    assert kept is (ratio == 1)
    await agent.shutdown()
