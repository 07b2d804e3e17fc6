"""Any OpenAI-compatible Chat Completions endpoint through the official ``openai`` SDK.

Covers OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp server and LM Studio: streaming
text, reasoning (``reasoning_content`` / ``reasoning`` delta fields of vLLM, DeepSeek, Ollama,
llama.cpp), tool calls streamed as fragments keyed by ``index``, and usage from the final
chunk (``stream_options.include_usage``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.completion_usage import CompletionUsage

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

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.ERROR,
}
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def _user_content(blocks: Sequence[TextBlock | ImageBlock | FileContentBlock]) -> Any:
    """A plain string when there is no image (the most widely accepted form), else parts."""
    if not any(isinstance(b, ImageBlock) for b in blocks):
        return "\n\n".join(_text_of(b) for b in blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ImageBlock):
            url = f"data:{block.mime_type};base64,{block.data_base64}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": _text_of(block)})
    return parts


def _text_of(block: TextBlock | ImageBlock | FileContentBlock) -> str:
    if isinstance(block, FileContentBlock):
        return file_block_text(block)
    if isinstance(block, TextBlock):
        return block.text
    return f"[image {block.mime_type} omitted]"


def _message(message: ModelMessage) -> dict[str, Any]:
    text = "\n\n".join(_text_of(b) for b in message.content)
    if message.role is ModelMessageRole.TOOL:
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": text}
    if message.role is ModelMessageRole.ASSISTANT:
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        return out
    if message.role is ModelMessageRole.SYSTEM:
        return {"role": "system", "content": text}
    return {"role": "user", "content": _user_content(message.content)}


def build_params(request: ChatRequest, api_model: str, *, stream_usage: bool) -> dict[str, Any]:
    """The Chat Completions body for ``request`` (without ``stream``)."""
    messages: list[dict[str, Any]] = []
    if request.system_prompt:
        messages.append({"role": "system", "content": request.system_prompt})
    messages.extend(_message(m) for m in request.messages)
    params: dict[str, Any] = {"model": api_model, "messages": messages}
    if stream_usage:
        params["stream_options"] = {"include_usage": True}
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters_schema,
                },
            }
            for tool in request.tools
        ]
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.max_tokens is not None:
        params["max_tokens"] = request.max_tokens
    if request.reasoning_effort is not None:
        params["reasoning_effort"] = request.reasoning_effort
    return params


@dataclass
class _PartialCall:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Joins tool-call fragments by ``index``: id and name come once, arguments piecewise.

    A few servers leave ``index`` out; then a fragment with a new id starts the next call and
    any other fragment continues the last one.
    """

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}

    def _key(self, fragment: ChoiceDeltaToolCall) -> int:
        index: int | None = getattr(fragment, "index", None)
        if index is not None:
            return index
        last = max(self._calls, default=-1)
        starts_new = fragment.id and (last < 0 or self._calls[last].call_id != fragment.id)
        return last + 1 if starts_new or last < 0 else last

    def add(self, fragment: ChoiceDeltaToolCall) -> None:
        call = self._calls.setdefault(self._key(fragment), _PartialCall())
        if fragment.id:
            call.call_id = fragment.id
        if fragment.function is not None:
            if fragment.function.name:
                call.name += fragment.function.name
            if fragment.function.arguments:
                call.arguments.append(fragment.function.arguments)

    def complete(self) -> list[ToolCallRequested]:
        return [
            ToolCallRequested(
                call_id=call.call_id or f"call_{index}",
                tool_name=call.name,
                arguments=parse_tool_arguments("".join(call.arguments)),
            )
            for index, call in sorted(self._calls.items())
        ]


def _reasoning_of(delta: ChoiceDelta) -> str | None:
    extra = delta.model_extra or {}
    for name in _REASONING_FIELDS:
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(usage: CompletionUsage) -> Usage:
    details = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        reasoning_tokens=details.reasoning_tokens if details is not None else None,
        total_tokens=usage.total_tokens,
    )


def _classify(exc: Exception) -> ProviderError:
    if isinstance(exc, openai.APIConnectionError):
        return connection_failure(exc, f"{type(exc).__name__}: {exc.message}")
    if isinstance(exc, openai.APIStatusError):
        if (page := proxy_page(exc)) is not None:
            return page
        return classify_http_error(
            exc.status_code, _api_message(exc), code=exc.code, error_type=exc.type
        )
    if isinstance(exc, openai.APIError):  # an error object inside an open stream
        return classify_http_error(None, exc.message, code=exc.code, error_type=exc.type)
    return stream_failure(exc)


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)  # vLLM puts the message at the top level
        if isinstance(error, str):  # Ollama: {"error": "..."}
            return error
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
    return exc.message


class OpenAICompatProvider(StreamingProvider):
    """A ``ModelProvider`` over one OpenAI-compatible base URL."""

    def __init__(
        self,
        *,
        provider_id: str,
        models: Sequence[ModelInfo],
        endpoint: Endpoint | None = None,
        stream_usage: bool = True,
    ) -> None:
        endpoint = endpoint or Endpoint()
        client = AsyncOpenAI(**endpoint.client_options())
        super().__init__(
            provider_id=provider_id,
            models=models,
            endpoint=endpoint,
            # The client's base URL: the SDK default or its environment variable when unset.
            classify=located(_classify, endpoint_label(provider_id, str(client.base_url))),
        )
        self._stream_usage = stream_usage
        self._client = client

    async def close(self) -> None:
        await self._client.close()

    def _params(self, request: ChatRequest, api_model: str) -> dict[str, Any]:
        return build_params(request, api_model, stream_usage=self._stream_usage)

    async def _attempt(self, params: dict[str, Any]) -> AsyncIterator[ChatEvent]:
        # Not ``chat.completions.create``: it deep-walks the parameters to transform them
        # (~0.6 ms per message, so a long session pays tens of ms per request), and ours are
        # plain JSON already. ``post`` is the same request through the same client.
        stream = await self._first_byte(
            self._client.post(
                "/chat/completions",
                body={**params, "stream": True},
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )
        )
        try:
            async for event in translate_chunks(stream):
                yield event
        finally:
            await stream.close()


async def translate_chunks(chunks: AsyncIterable[ChatCompletionChunk]) -> AsyncIterator[ChatEvent]:
    """Chat Completions chunks to events; tool calls are complete only at the end."""
    calls = ToolCallAssembler()
    finish: str | None = None
    usage = Usage()
    async for chunk in chunks:
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if reasoning := _reasoning_of(delta):
                yield ReasoningDelta(text=reasoning)
            if delta.content:
                yield TextDelta(text=delta.content)
            for fragment in delta.tool_calls or ():
                calls.add(fragment)
            finish = choice.finish_reason or finish
        if chunk.usage is not None:
            usage = _usage(chunk.usage)
    if finish is None:
        raise IncompleteStream("the stream ended without a finish reason")
    requested = calls.complete()
    for call in requested:
        yield call
    reason = settle_finish(_FINISH_REASONS.get(finish), called_tools=bool(requested))
    yield Done(finish_reason=reason, usage=usage)
