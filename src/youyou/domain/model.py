"""Provider-facing request and stream types (see docs/providers.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from youyou.domain.content import ContentBlock
from youyou.domain.tool import ToolDescriptor


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProviderCapability(StrEnum):
    TOOL_USE = "tool_use"
    VISION = "vision"
    STREAMING = "streaming"


class ModelInfo(_Frozen):
    model_id: str
    display_name: str
    context_window: int
    capabilities: frozenset[ProviderCapability] = frozenset(
        {ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}
    )


class ModelMessageRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ModelToolCall(_Frozen):
    """A tool call the assistant made earlier in the conversation, replayed to the model."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ModelMessage(_Frozen):
    role: ModelMessageRole
    content: tuple[ContentBlock, ...] = ()
    tool_call_id: str | None = None
    tool_calls: tuple[ModelToolCall, ...] = ()


class Usage(_Frozen):
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int | None = None
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        reasoning = None
        if self.reasoning_tokens is not None or other.reasoning_tokens is not None:
            reasoning = (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=reasoning,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class FinishReason(StrEnum):
    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CANCELLED = "cancelled"
    ERROR = "error"


class ChatRequest(_Frozen):
    model_id: str
    system_prompt: str
    messages: tuple[ModelMessage, ...]
    tools: tuple[ToolDescriptor, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


class ProviderErrorKind(StrEnum):
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    UNSUPPORTED_CAPABILITY = "unsupported_capability"
    TRANSPORT = "transport"
    PROVIDER = "provider"


class ProviderError(_Frozen):
    kind: ProviderErrorKind
    message: str
    retryable: bool = False
    capability: ProviderCapability | None = None


class TextDelta(_Frozen):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDelta(_Frozen):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ToolCallRequested(_Frozen):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class Done(_Frozen):
    type: Literal["done"] = "done"
    finish_reason: FinishReason
    usage: Usage = Usage()


class ChatError(_Frozen):
    type: Literal["error"] = "error"
    error: ProviderError


ChatEvent = TextDelta | ReasoningDelta | ToolCallRequested | Done | ChatError
