import json
from pathlib import Path

import pytest

from youyou import AgentError, CancellationToken, ErrorCode, ScriptedProvider, TextBlock
from youyou.domain.model import (
    ChatError,
    ChatRequest,
    Done,
    FinishReason,
    ModelMessage,
    ModelMessageRole,
    TextDelta,
    ToolCallRequested,
)

REQUEST = ChatRequest(
    model_id="youyou-demo",
    system_prompt="",
    messages=(ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text="ping"),)),),
)


async def events(
    provider: ScriptedProvider, cancel: CancellationToken | None = None
) -> list[object]:
    return [e async for e in provider.chat(REQUEST, cancel or CancellationToken())]


async def test_script_file_json_and_yaml(tmp_path: Path) -> None:
    script = {
        "responses": [
            {"text": "hello world", "chunks": 2, "reasoning": "think"},
            {"tool_calls": [{"id": "c1", "name": "get_current_time", "arguments": {}}]},
            {"error": {"kind": "context_length_exceeded", "message": "too long"}},
        ]
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    yaml_path = tmp_path / "script.yaml"
    yaml_path.write_text("responses:\n  - text: hi\n")
    provider = ScriptedProvider.from_file(path)
    first = await events(provider)
    assert [type(e).__name__ for e in first] == ["ReasoningDelta", "TextDelta", "TextDelta", "Done"]
    second = await events(provider)
    assert isinstance(second[0], ToolCallRequested)
    assert second[-1] == Done(finish_reason=FinishReason.TOOL_CALLS, usage=second[-1].usage)  # type: ignore[attr-defined]
    third = await events(provider)
    assert isinstance(third[0], ChatError)
    demo = await events(provider)  # script exhausted: the demo answers
    assert "ping" in "".join(e.text for e in demo if isinstance(e, TextDelta))
    assert [type(e).__name__ for e in await events(ScriptedProvider.from_file(yaml_path))] == [
        "TextDelta",
        "Done",
    ]
    assert provider.requests == [REQUEST] * 4


async def test_bad_script_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- just a list\n")
    with pytest.raises(AgentError) as info:
        ScriptedProvider.from_file(path)
    assert info.value.code is ErrorCode.INVALID_CONFIG


async def test_exhausted_script_without_fallback_is_an_error_event() -> None:
    out = await events(ScriptedProvider())
    assert isinstance(out[0], ChatError)


async def test_cancel_stops_a_delayed_stream() -> None:
    from youyou import ScriptedResponse

    provider = ScriptedProvider([ScriptedResponse.text("a b c", chunks=3, delay_s=5)])
    cancel = CancellationToken()
    cancel.cancel()
    assert await events(provider, cancel) == [Done(finish_reason=FinishReason.CANCELLED)]


async def test_unknown_error_kind_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("responses:\n  - error: {kind: rate_limit}\n")
    with pytest.raises(AgentError) as info:
        ScriptedProvider.from_file(path)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "error.kind" in info.value.message


async def test_demo_calls_the_clock_tool_when_asked_the_time() -> None:
    from youyou import ToolDescriptor

    clock = ToolDescriptor(name="get_current_time", description="now")
    asked = REQUEST.model_copy(
        update={
            "tools": (clock,),
            "messages": (
                ModelMessage(
                    role=ModelMessageRole.USER, content=(TextBlock(text="what time is it?"),)
                ),
            ),
        }
    )
    provider = ScriptedProvider.demo()
    out = [e async for e in provider.chat(asked, CancellationToken())]
    assert isinstance(out[0], ToolCallRequested) and out[0].tool_name == "get_current_time"
    answered = asked.model_copy(
        update={
            "messages": (
                *asked.messages,
                ModelMessage(
                    role=ModelMessageRole.TOOL,
                    tool_call_id="demo-time",
                    content=(TextBlock(text="2026-11-30T12:00:00Z"),),
                ),
            )
        }
    )
    final = [e async for e in provider.chat(answered, CancellationToken())]
    assert "2026-11-30T12:00:00Z" in "".join(e.text for e in final if isinstance(e, TextDelta))
