"""The kernel's spans, named and described by the OpenTelemetry GenAI semantic conventions.

One span per turn (``invoke_agent youyou``), per model request (``chat {model}``), per tool
run (``execute_tool {tool}``) and per compaction (``compaction``). Message and tool content go
into spans only when the tracer ``records_content``; counts, names, ids and errors always do.
Without a registered tracer every span is the shared no-op below: a turn pays a few calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import CompactionRecord
from youyou.domain.ledger import ToolOutput
from youyou.domain.model import ChatRequest, FinishReason, ModelMessage, ProviderError, Usage
from youyou.domain.tool import RequestedToolCall, ResolvedToolCall
from youyou.domain.turn import TurnOutcome
from youyou.ports.tracer import AttributeValue, SpanKind, Tracer, TraceSpan

AGENT_NAME = "youyou"
TURN_SPAN = f"invoke_agent {AGENT_NAME}"
COMPACTION_SPAN = "compaction"


class _NoopSpan:
    @property
    def trace_id(self) -> str | None:
        return None

    def update_name(self, name: str) -> None:
        pass

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        pass

    def set_error(self, error_type: str, message: str) -> None:
        pass


class _NoopScope(AbstractContextManager[TraceSpan]):
    def __enter__(self) -> TraceSpan:
        return _NOOP_SPAN

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


_NOOP_SPAN = _NoopSpan()
_NOOP_SCOPE = _NoopScope()


class NoopTracer:
    """Tracing off: one shared span that records nothing."""

    @property
    def records_content(self) -> bool:
        return False

    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> AbstractContextManager[TraceSpan]:
        return _NOOP_SCOPE


NOOP_TRACER: Tracer = NoopTracer()


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def set_usage(span: TraceSpan, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)


# -- turn ----------------------------------------------------------------------------------


def turn_span(
    tracer: Tracer, session_id: str, turn_id: str, model_id: str
) -> AbstractContextManager[TraceSpan]:
    return tracer.span(
        TURN_SPAN,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.conversation.id": session_id,
            "gen_ai.request.model": model_id,
            "youyou.turn.id": turn_id,
        },
    )


def end_turn(span: TraceSpan, outcome: TurnOutcome, usage: Usage, tool_calls: int) -> None:
    set_usage(span, usage)
    span.set_attribute("youyou.turn.outcome", outcome.status.value)
    span.set_attribute("youyou.turn.tool_calls", tool_calls)
    if outcome.error is not None:
        span.set_error(outcome.error.code.value, outcome.error.message)


# -- model requests ------------------------------------------------------------------------


def _part(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "content": block.text}
    if isinstance(block, ImageBlock):  # the image itself never goes into a span
        return {"type": "image", "mime_type": block.mime_type}
    assert isinstance(block, FileContentBlock)
    return {"type": "file", "name": block.file_name, "content": block.text}


def _message(message: ModelMessage) -> dict[str, Any]:
    parts = [_part(b) for b in message.content]
    if message.tool_call_id is not None:  # a tool result: its content answers the call
        parts = [{"type": "tool_call_response", "id": message.tool_call_id, "response": parts}]
    parts += [
        {"type": "tool_call", "id": c.call_id, "name": c.tool_name, "arguments": c.arguments}
        for c in message.tool_calls
    ]
    return {"role": message.role.value, "parts": parts}


def chat_span(
    tracer: Tracer, request: ChatRequest, provider_id: str
) -> AbstractContextManager[TraceSpan]:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": request.model_id,
        "youyou.provider.id": provider_id,
    }
    if request.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    if request.temperature is not None:
        attributes["gen_ai.request.temperature"] = request.temperature
    if request.tools:
        attributes["youyou.request.tools"] = [t.name for t in request.tools]
    if tracer.records_content:
        attributes["gen_ai.system_instructions"] = _json(
            [{"type": "text", "content": request.system_prompt}]
        )
        attributes["gen_ai.input.messages"] = _json([_message(m) for m in request.messages])
    return tracer.span(f"chat {request.model_id}", attributes, SpanKind.CLIENT)


def end_chat(
    span: TraceSpan,
    tracer: Tracer,
    *,
    usage: Usage,
    finish_reason: FinishReason | None,
    error: ProviderError | None,
    text: str,
    tool_calls: tuple[RequestedToolCall, ...] = (),
) -> None:
    set_usage(span, usage)
    if finish_reason is not None:
        span.set_attribute("gen_ai.response.finish_reasons", [finish_reason.value])
    if error is not None:
        span.set_error(error.kind.value, error.message)
    if tracer.records_content:
        parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
        parts += [
            {
                "type": "tool_call",
                "id": c.call_id,
                "name": c.tool_name,
                "arguments": c.requested_arguments,
            }
            for c in tool_calls
        ]
        reason = finish_reason.value if finish_reason is not None else "error"
        output = {"role": "assistant", "parts": parts, "finish_reason": reason}
        span.set_attribute("gen_ai.output.messages", _json([output]))


# -- tools ---------------------------------------------------------------------------------


def tool_span(tracer: Tracer, call: ResolvedToolCall) -> AbstractContextManager[TraceSpan]:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool_name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.type": "function",
    }
    if tracer.records_content:
        attributes["gen_ai.tool.call.arguments"] = _json(call.effective_arguments)
    return tracer.span(f"execute_tool {call.tool_name}", attributes)


def end_tool(span: TraceSpan, tracer: Tracer, output: ToolOutput) -> None:
    if output.is_error:
        code = (output.metadata or {}).get("error_code")
        error_type = code if isinstance(code, str) else "tool_error"
        # The error text is the tool's output: content, so only when content is recorded.
        span.set_error(error_type, output.content if tracer.records_content else error_type)
    if tracer.records_content:
        span.set_attribute("gen_ai.tool.call.result", output.content)


# -- compaction ----------------------------------------------------------------------------


def compaction_span(
    tracer: Tracer, session_id: str, messages: int, *, forced: bool
) -> AbstractContextManager[TraceSpan]:
    return tracer.span(
        COMPACTION_SPAN,
        {
            "gen_ai.conversation.id": session_id,
            "youyou.compaction.messages": messages,
            "youyou.compaction.forced": forced,
        },
    )


def end_compaction(span: TraceSpan, record: CompactionRecord | None) -> None:
    if record is None:
        span.set_attribute("youyou.compaction.mode", "none")
        return
    span.set_attribute("youyou.compaction.mode", record.mode.value)
    span.set_attribute("youyou.compaction.replaces_through_seq", record.replaces_through_seq)
