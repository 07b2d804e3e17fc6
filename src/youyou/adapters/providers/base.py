"""The skeleton the streaming providers share: identity, models, endpoint options and the
``chat()`` plumbing (retries before the first token, cancellation) of ``errors.drive_stream``."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from youyou.adapters.providers.errors import Classify, FirstByteTimeout, RetryPolicy, drive_stream
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import FileContentBlock
from youyou.domain.model import ChatEvent, ChatRequest, FinishReason, ModelInfo

T = TypeVar("T")

NO_API_KEY = "no-key"
"""Sent when no key is configured: local servers ignore it, the SDKs insist on one."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """How to reach an HTTP model API. SDK retries stay off: ours know whether a token was
    already delivered, theirs do not."""

    base_url: str | None = None
    api_key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    """The longest silence between two chunks of an open stream (and of a connect or write)."""
    first_byte_timeout_s: float = 30.0
    """How long an attempt waits for the response to start (its status and headers)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    api_model_names: Mapping[str, str] = field(default_factory=dict)
    """Our model id → the name the API knows (model ids must be unique across providers)."""

    def client_options(self) -> dict[str, Any]:
        """Constructor arguments of ``AsyncOpenAI`` and ``AsyncAnthropic`` alike."""
        return {
            "api_key": self.api_key or NO_API_KEY,
            "base_url": self.base_url,
            "default_headers": dict(self.headers),
            "timeout": self.timeout_s,
            "max_retries": 0,
        }


def file_block_text(block: FileContentBlock) -> str:
    """File text travels as plain text, headed by its name so the model can cite it."""
    return f"File: {block.file_name}\n\n{block.text}" if block.file_name else block.text


def settle_finish(reported: FinishReason | None, *, called_tools: bool) -> FinishReason:
    """The tool calls actually delivered decide ``TOOL_CALLS``, whatever the server reported:
    some say ``stop`` after calls, others ``tool_calls`` with none. Unknown means ``STOP``."""
    if called_tools:
        return FinishReason.TOOL_CALLS
    if reported is None or reported is FinishReason.TOOL_CALLS:
        return FinishReason.STOP
    return reported


class StreamingProvider(ABC):
    """A ``ModelProvider`` whose subclasses only build the request body and run one attempt;
    ``classify`` maps their SDK's exceptions to ``ProviderError``."""

    def __init__(
        self,
        *,
        provider_id: str,
        models: Sequence[ModelInfo],
        endpoint: Endpoint,
        classify: Classify,
    ) -> None:
        self._provider_id = provider_id
        self._models = tuple(models)
        self._endpoint = endpoint
        self._classify = classify

    @property
    def provider_id(self) -> str:
        return self._provider_id

    def models(self) -> Sequence[ModelInfo]:
        return self._models

    def chat(self, request: ChatRequest, cancel: CancellationToken) -> AsyncIterator[ChatEvent]:
        names = self._endpoint.api_model_names
        params = self._params(request, names.get(request.model_id, request.model_id))
        retry = self._endpoint.retry
        return drive_stream(lambda: self._attempt(params), self._classify, retry, cancel)

    async def _first_byte(self, opening: Awaitable[T]) -> T:
        """``opening`` (an SDK call that returns once the response has started), or
        ``FirstByteTimeout`` after ``first_byte_timeout_s``: an endpoint that accepts the
        connection and never answers fails fast, then the stream's own idle timeout applies.

        ``asyncio.timeout``, not ``wait_for``: on Python 3.11 ``wait_for`` drops a cancel that
        arrives as the response starts, and the stream it returns is then read on, for ever if
        the endpoint stalls, by a caller that was told to stop."""
        limit = self._endpoint.first_byte_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await opening
        except TimeoutError:
            raise FirstByteTimeout(limit) from None

    @abstractmethod
    async def close(self) -> None:
        """Release the connection pool or the loaded model."""

    @abstractmethod
    def _params(self, request: ChatRequest, api_model: str) -> dict[str, Any]:
        """The API request body (without ``stream``)."""

    @abstractmethod
    def _attempt(self, params: dict[str, Any]) -> AsyncIterator[ChatEvent]:
        """Open one stream, translate it, close it in ``finally``."""
