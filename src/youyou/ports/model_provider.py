"""Model provider port (see docs/providers.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from youyou.domain.cancel import CancellationToken
from youyou.domain.model import ChatEvent, ChatRequest, ModelInfo


@runtime_checkable
class ModelProvider(Protocol):
    """Streams one response; failures are yielded as ``ChatError`` events, not raised.

    A response that contains any ``ToolCallRequested`` must end with
    ``Done(finish_reason=TOOL_CALLS)``. ``cancel`` must stop the stream promptly.
    """

    @property
    def provider_id(self) -> str: ...

    def models(self) -> Sequence[ModelInfo]: ...

    def chat(self, request: ChatRequest, cancel: CancellationToken) -> AsyncIterator[ChatEvent]: ...
