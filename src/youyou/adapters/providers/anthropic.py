"""Anthropic Messages through the official ``anthropic`` SDK (streaming).

Text, ``tool_use`` / ``tool_result`` blocks, thinking blocks (streamed as reasoning), base64
images, stop reasons and usage. Anthropic wants strictly alternating roles, so consecutive
messages of one role (e.g. several tool results) are merged into a single message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import MessageDeltaUsage, RawMessageStreamEvent
from anthropic.types import Usage as AnthropicUsage

from youyou.adapters.providers.base import (
    Endpoint,
    StreamingProvider,
    file_block_text,
    settle_finish,
)
from youyou.adapters.providers.errors import (
    IncompleteStream,
    classify_http_error,
    connection_failure,
    endpoint_label,
    located,
    parse_tool_arguments,
    proxy_page,
    stream_failure,
)
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.model import (
    ChatEvent,
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
    ProviderError,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    Usage,
)

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires ``max_tokens``; used when the request leaves it open."""

_STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.ERROR,
}


def _block(block: TextBlock | ImageBlock | FileContentBlock) -> dict[str, Any] | None:
    if isinstance(block, ImageBlock):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": block.mime_type, "data": block.data_base64},
        }
    text = file_block_text(block) if isinstance(block, FileContentBlock) else block.text
    # The API rejects empty text blocks.
    return {"type": "text", "text": text} if text else None


def _blocks(message: ModelMessage) -> list[dict[str, Any]]:
    return [b for b in map(_block, message.content) if b is not None]


def _content(message: ModelMessage) -> tuple[str, list[dict[str, Any]]]:
    """The Anthropic role and content blocks of one message."""
    if message.role is ModelMessageRole.TOOL:
        result = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": _blocks(message),
        }
        return "user", [result]
    if message.role is ModelMessageRole.ASSISTANT:
        uses = [
            {"type": "tool_use", "id": c.call_id, "name": c.tool_name, "input": c.arguments}
            for c in message.tool_calls
        ]
        return "assistant", [*_blocks(message), *uses]
    return "user", _blocks(message)


def build_params(request: ChatRequest, api_model: str, *, max_tokens: int) -> dict[str, Any]:
    """The Messages API body for ``request`` (without ``stream``)."""
    system = [request.system_prompt] if request.system_prompt else []
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role is ModelMessageRole.SYSTEM:
            system.extend(b["text"] for b in _blocks(message) if b["type"] == "text")
            continue
        role, content = _content(message)
        if not content:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": role, "content": content})
    params: dict[str, Any] = {
        "model": api_model,
        "messages": messages,
        "max_tokens": request.max_tokens or max_tokens,
    }
    if system:
        params["system"] = "\n\n".join(system)
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters_schema}
            for t in request.tools
        ]
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


@dataclass
class _ToolUse:
    call_id: str
    name: str
    json_parts: list[str] = field(default_factory=list)


@dataclass
class _Tally:
    """Usage is split over ``message_start`` (input) and ``message_delta`` (output)."""

    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int | None = None

    def update(self, usage: AnthropicUsage | MessageDeltaUsage) -> None:
        if usage.input_tokens is not None:
            self.input_tokens = (
                usage.input_tokens
                + (usage.cache_creation_input_tokens or 0)
                + (usage.cache_read_input_tokens or 0)
            )
        self.output_tokens = usage.output_tokens
        if usage.output_tokens_details is not None:
            self.thinking_tokens = usage.output_tokens_details.thinking_tokens

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            reasoning_tokens=self.thinking_tokens,
            total_tokens=self.input_tokens + self.output_tokens,
        )


class _Translator:
    """Turns raw stream events into ``ChatEvent`` values, keeping per-response state."""

    def __init__(self) -> None:
        self.tool_uses: dict[int, _ToolUse] = {}
        self.called_tools = False
        self.stop_reason: str | None = None
        self.tally = _Tally()

    def events(self, event: RawMessageStreamEvent) -> list[ChatEvent]:
        if event.type == "message_start":
            self.tally.update(event.message.usage)
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self.tally.update(event.usage)
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.tool_uses[event.index] = _ToolUse(block.id, block.name)
            elif block.type == "text" and block.text:
                return [TextDelta(text=block.text)]
            elif block.type == "thinking" and block.thinking:
                return [ReasoningDelta(text=block.thinking)]
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextDelta(text=delta.text)]
            if delta.type == "thinking_delta":
                return [ReasoningDelta(text=delta.thinking)]
            if delta.type == "input_json_delta" and event.index in self.tool_uses:
                self.tool_uses[event.index].json_parts.append(delta.partial_json)
        elif event.type == "content_block_stop" and event.index in self.tool_uses:
            use = self.tool_uses.pop(event.index)
            self.called_tools = True
            return [
                ToolCallRequested(
                    call_id=use.call_id,
                    tool_name=use.name,
                    arguments=parse_tool_arguments("".join(use.json_parts)),
                )
            ]
        return []

    def done(self) -> Done:
        if self.stop_reason is None:
            raise IncompleteStream("the stream ended without a stop reason")
        reason = settle_finish(_STOP_REASONS.get(self.stop_reason), called_tools=self.called_tools)
        return Done(finish_reason=reason, usage=self.tally.usage())


def _classify(exc: Exception) -> ProviderError:
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_failure(exc, f"{type(exc).__name__}: {exc.message}")
    if isinstance(exc, anthropic.APIStatusError):
        if (page := proxy_page(exc)) is not None:
            return page
        message = exc.api_message or exc.message
        # An ``error`` event inside an open stream arrives with the stream's 200 status.
        status = exc.status_code if exc.status_code >= 400 else None
        return classify_http_error(status, message, code=exc.error_code, error_type=exc.type)
    return stream_failure(exc)


class AnthropicProvider(StreamingProvider):
    """A ``ModelProvider`` over the Anthropic Messages API (or a compatible gateway)."""

    def __init__(
        self,
        *,
        provider_id: str,
        models: Sequence[ModelInfo],
        endpoint: Endpoint | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        endpoint = endpoint or Endpoint()
        client = AsyncAnthropic(**endpoint.client_options())
        super().__init__(
            provider_id=provider_id,
            models=models,
            endpoint=endpoint,
            # The client's base URL: the SDK default or its environment variable when unset.
            classify=located(_classify, endpoint_label(provider_id, str(client.base_url))),
        )
        self._max_tokens = max_tokens
        self._client = client

    async def close(self) -> None:
        await self._client.close()

    def _params(self, request: ChatRequest, api_model: str) -> dict[str, Any]:
        return build_params(request, api_model, max_tokens=self._max_tokens)

    async def _attempt(self, params: dict[str, Any]) -> AsyncIterator[ChatEvent]:
        stream = await self._first_byte(self._client.messages.create(**params, stream=True))
        try:
            translator = _Translator()
            async for event in stream:
                for chat_event in translator.events(event):
                    yield chat_event
            yield translator.done()
        finally:
            await stream.close()
