"""``ChatRequest`` assembly and the capability guard.

See docs/architecture.md, 'The system prompt and requests'.

Runs before any provider I/O: an image for a model without Vision, or tools for a model without
ToolUse, is MODEL_NOT_SUPPORTED. FileContent is text and never needs Vision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from youyou.bulk import built
from youyou.domain.content import ContentBlock, ImageBlock, TextBlock
from youyou.domain.context import VisibleMessage
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import AssistantMessage, SystemMessage, ToolCall, ToolResult, UserMessage
from youyou.domain.model import (
    ChatRequest,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
    ModelToolCall,
    ProviderCapability,
)
from youyou.domain.tool import ToolDescriptor
from youyou.domain.turn import RequestContext


@dataclass(frozen=True, slots=True)
class RequestBuildOptions:
    allow_tools: bool


def _unsupported(message: str) -> AgentError:
    return AgentError(ErrorCode.MODEL_NOT_SUPPORTED, message, source=ErrorSource.TURN_ENGINE)


def _text(content: str) -> tuple[ContentBlock, ...]:
    return (built(TextBlock, {"type": "text", "text": content}),)


class ModelMessageCache:
    """Converts the visible history incrementally: a turn must not re-serialize all of it.

    The converted prefix stays valid while the context appends to the same visible list; a
    rebuild (compaction, resume) replaces the list and so resets the cache.
    """

    def __init__(self) -> None:
        self._source: list[VisibleMessage] | None = None
        self._done = 0
        self._converted: list[ModelMessage] = []
        self._has_image = False

    def prefix(self, visible: list[VisibleMessage], upto: int) -> list[ModelMessage]:
        if visible is not self._source or upto < self._done:
            self._source, self._done, self._converted = visible, 0, []
            self._has_image = False
        for index in range(self._done, upto):
            self._has_image = _convert_into(self._converted, visible[index]) or self._has_image
        self._done = upto
        return list(self._converted)

    @property
    def prefix_has_image(self) -> bool:
        return self._has_image


def convert_messages(messages: Sequence[VisibleMessage]) -> tuple[list[ModelMessage], bool]:
    converted: list[ModelMessage] = []
    has_image = False
    for visible in messages:
        has_image = _convert_into(converted, visible) or has_image
    return converted, has_image


def _convert_into(result: list[ModelMessage], visible: VisibleMessage) -> bool:
    """Append one visible message; returns True if it carries an image."""
    payload = visible.message
    if type(payload) is ToolCall:
        _append_tool_call(
            result,
            built(
                ModelToolCall,
                {
                    "call_id": payload.call.call_id,
                    "tool_name": payload.call.tool_name,
                    "arguments": payload.call.effective_arguments,
                },
            ),
        )
        return False
    message = _convert_one(payload)
    result.append(message)
    # A loop: any() over a generator costs more per message, at resume thousands of times.
    for block in message.content:  # noqa: SIM110
        if type(block) is ImageBlock:
            return True
    return False


def _append_tool_call(result: list[ModelMessage], call: ModelToolCall) -> None:
    """Consecutive tool calls (and the assistant text right before them) form one message."""
    last = result[-1] if result else None
    if last is not None and last.role is ModelMessageRole.ASSISTANT:
        result[-1] = last.model_copy(update={"tool_calls": (*last.tool_calls, call)})
    else:
        result.append(
            built(
                ModelMessage,
                {
                    "role": ModelMessageRole.ASSISTANT,
                    "content": (),
                    "tool_call_id": None,
                    "tool_calls": (call,),
                },
            )
        )


def _convert_one(
    payload: UserMessage | AssistantMessage | ToolResult | SystemMessage,
) -> ModelMessage:
    if type(payload) is UserMessage:
        role, content, call_id = ModelMessageRole.USER, tuple(payload.content), None
    elif type(payload) is AssistantMessage:
        role, content, call_id = ModelMessageRole.ASSISTANT, tuple(payload.content), None
    elif type(payload) is ToolResult:
        role = ModelMessageRole.TOOL
        content, call_id = _text(payload.result.output.content), payload.result.call_id
    else:
        role, content, call_id = ModelMessageRole.SYSTEM, _text(payload.content), None
    return built(
        ModelMessage, {"role": role, "content": content, "tool_call_id": call_id, "tool_calls": ()}
    )


class ChatRequestBuilder:
    def __init__(self) -> None:
        self.messages = ModelMessageCache()

    def build(
        self,
        *,
        model: ModelInfo,
        system_prompt: str,
        context: RequestContext,
        tools: Sequence[ToolDescriptor],
        options: RequestBuildOptions,
    ) -> ChatRequest:
        """Order: pre-anchor → anchor → skill augmentations → post-anchor."""
        messages = self.messages.prefix(context.visible, context.anchor_index)
        tail, tail_image = convert_messages([context.anchor_message])
        messages.extend(tail)
        messages.extend(
            ModelMessage.model_construct(
                role=ModelMessageRole.SYSTEM, content=_text(xml), tool_call_id=None, tool_calls=()
            )
            for xml in context.post_anchor_augmentations
        )
        post, post_image = convert_messages(context.post_anchor_messages)
        messages.extend(post)
        request_tools = tuple(tools) if options.allow_tools else ()
        if request_tools and ProviderCapability.TOOL_USE not in model.capabilities:
            raise _unsupported(f"model {model.model_id} does not support tool use")
        has_image = self.messages.prefix_has_image or tail_image or post_image
        if has_image and ProviderCapability.VISION not in model.capabilities:
            raise _unsupported(f"model {model.model_id} does not accept images (no vision)")
        return built(
            ChatRequest,
            {
                "model_id": model.model_id,
                "system_prompt": system_prompt,
                "messages": tuple(messages),
                "tools": request_tools,
                "temperature": None,
                "max_tokens": None,
                "reasoning_effort": None,
            },
        )
