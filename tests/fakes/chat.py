"""Driving a provider in tests: small requests, collecting events, cancelling mid-stream."""

from __future__ import annotations

import asyncio
import base64
from typing import Any, TypeVar

from youyou.adapters.providers.errors import RetryPolicy
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    ChatRequest,
    ModelMessage,
    ModelMessageRole,
    ProviderError,
    TextDelta,
)
from youyou.ports.model_provider import ModelProvider

PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 8).decode()
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02)


P = TypeVar("P")
_open: list[Any] = []


def track(provider: P) -> P:
    """Remember an SDK-backed provider so ``close_tracked`` can release its connection pool."""
    _open.append(provider)
    return provider


async def close_tracked() -> None:
    while _open:
        await _open.pop().close()


def user(*blocks: TextBlock | ImageBlock | FileContentBlock) -> ModelMessage:
    return ModelMessage(role=ModelMessageRole.USER, content=blocks)


async def collect(
    provider: ModelProvider, request: ChatRequest, cancel: CancellationToken | None = None
) -> list[ChatEvent]:
    return [event async for event in provider.chat(request, cancel or CancellationToken())]


async def cancel_after_first_text(
    provider: ModelProvider, request: ChatRequest, *, timeout_s: float = 5.0
) -> list[ChatEvent]:
    """Stream until the first text delta arrives, cancel, and keep what still comes; the whole
    call fails after ``timeout_s`` if cancelling does not end the stream."""
    cancel = CancellationToken()
    events: list[ChatEvent] = []

    async def run() -> None:
        async for event in provider.chat(request, cancel):
            events.append(event)
            if isinstance(event, TextDelta):
                cancel.cancel()

    await asyncio.wait_for(run(), timeout_s)
    return events


def ended_with_error(events: list[ChatEvent], *texts: str) -> ProviderError:
    """The error a stream ended with, after exactly the text deltas ``texts`` and nothing else."""
    assert events, "the stream ended without any event"
    *before, last = events
    assert before == [TextDelta(text=t) for t in texts], events
    assert isinstance(last, ChatError), events
    return last.error
