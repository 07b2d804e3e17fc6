"""Consumes one provider response into a collected result, honouring cancellation."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from youyou.application.model_router import ModelRegistry
from youyou.application.tracing import NOOP_TRACER, chat_span, end_chat
from youyou.application.turn_stream import TurnChannel
from youyou.bulk import built
from youyou.domain.content import valid_unicode, valid_unicode_value
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import ModelWaiting, ReasoningDeltaEvent, TextDeltaEvent
from youyou.domain.model import (
    ChatError,
    ChatRequest,
    Done,
    FinishReason,
    ProviderError,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    Usage,
)
from youyou.domain.tool import RequestedToolCall
from youyou.ports.model_provider import ModelProvider
from youyou.ports.tracer import Tracer

# A stream that ends without saying how the response finished was cut (e.g. the connection
# dropped): the answer may be incomplete, so it is a failure, never a complete answer.
CUT_STREAM = ProviderError(
    kind=ProviderErrorKind.TRANSPORT,
    message="the model stream ended without a finish event",
    retryable=True,
)


@dataclass(slots=True)
class ModelResponse:
    text: list[str] = field(default_factory=list)
    tool_calls: list[RequestedToolCall] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    usage: Usage = field(default_factory=Usage)
    error: ProviderError | None = None
    cancelled: bool = False

    @property
    def full_text(self) -> str:
        return "".join(self.text)


async def _announce_waiting(channel: TurnChannel, every_s: float) -> None:
    """A ``ModelWaiting`` every ``every_s`` until cancelled (by the response's first event)."""
    loop = asyncio.get_running_loop()
    sent = loop.time()
    while True:
        await asyncio.sleep(every_s)
        channel.emit(ModelWaiting(elapsed_s=round(loop.time() - sent)))


async def stream_response(
    models: ModelRegistry,
    request: ChatRequest,
    channel: TurnChannel,
    *,
    wait_notice_s: float,
    tracer: Tracer = NOOP_TRACER,
) -> ModelResponse:
    """Forward deltas as they arrive; a cancel interrupts the stream at once. Until the first
    event, ``ModelWaiting`` progress is emitted every ``wait_notice_s``. The model's text
    enters the kernel here, so it is made encodable here (``valid_unicode``) for the client
    and the ledger alike. The request is one ``chat`` span (``application.tracing``)."""
    provider = models.route(request.model_id).provider
    with chat_span(tracer, request, provider.provider_id) as span:
        response = await _consume(provider, request, channel, wait_notice_s)
        end_chat(
            span,
            tracer,
            usage=response.usage,
            finish_reason=response.finish_reason,
            error=response.error,
            text=response.full_text,
            tool_calls=tuple(response.tool_calls),
        )
    return response


async def _consume(
    provider: ModelProvider, request: ChatRequest, channel: TurnChannel, wait_notice_s: float
) -> ModelResponse:
    response = ModelResponse()
    waiting = asyncio.ensure_future(_announce_waiting(channel, wait_notice_s))

    async def consume() -> None:
        async for event in provider.chat(request, channel.cancel_token):
            waiting.cancel()
            if isinstance(event, TextDelta):
                text = valid_unicode(event.text)
                response.text.append(text)
                channel.emit(built(TextDeltaEvent, {"type": "text_delta", "text": text}))
            elif isinstance(event, ReasoningDelta):
                channel.emit(ReasoningDeltaEvent(text=valid_unicode(event.text)))
            elif isinstance(event, ToolCallRequested):
                response.tool_calls.append(
                    RequestedToolCall(
                        call_id=valid_unicode(event.call_id),
                        tool_name=valid_unicode(event.tool_name),
                        requested_arguments=valid_unicode_value(event.arguments),
                    )
                )
            elif isinstance(event, Done):
                response.finish_reason = event.finish_reason
                response.usage = event.usage
            elif isinstance(event, ChatError):
                response.error = event.error
                return

    task = asyncio.ensure_future(consume())
    unsubscribe = channel.cancel_token.on_cancel(task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        if not channel.cancel_token.is_cancelled:
            raise
        response.cancelled = True
    except AgentError:
        raise
    except Exception as exc:
        raise AgentError(
            ErrorCode.PROVIDER_ERROR,
            f"provider failed: {exc}",
            retryable=True,
            source=ErrorSource.PROVIDER,
        ) from exc
    finally:
        waiting.cancel()
        unsubscribe()
    if response.finish_reason is FinishReason.CANCELLED or channel.cancel_token.is_cancelled:
        response.cancelled = True
    elif response.error is None and response.finish_reason is None:
        response.error = CUT_STREAM
    return response
