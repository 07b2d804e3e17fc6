"""What the HTTP providers share: error classification, retries before the first token, and
a cancellable stream driver (see docs/providers.md).

Each provider supplies an ``attempt`` (an async generator that opens one SDK stream, translates
it to ``ChatEvent`` values and closes the stream in ``finally``) and a ``classify`` function
turning its SDK's exceptions into a ``ProviderError``. ``drive_stream`` does the rest, so both
providers retry, cancel and report failures the same way.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from youyou.domain.cancel import CancellationToken
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    Done,
    FinishReason,
    ProviderCapability,
    ProviderError,
    ProviderErrorKind,
)

INVALID_ARGUMENTS_KEY = "__invalid_json__"
"""Tool-call arguments that are not a JSON object arrive as ``{INVALID_ARGUMENTS_KEY: raw}``.

No tool declares this key, so argument validation fails and the kernel feeds an error tool
result back to the model instead of the turn crashing."""

_CONTEXT_PATTERNS = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|"
    r"prompt is too long|too many tokens|exceeds? the (?:available |model'?s? )?"
    r"(?:maximum )?context|exceeds the maximum number of tokens|"
    r"input (?:is )?too long|reduce the length of the messages",
    re.IGNORECASE,
)
_TOOLS_UNSUPPORTED = re.compile(
    r"(?:does not|doesn't|do not) support (?:tools|tool use|tool calling|function calling)|"
    r"(?:tools|tool use|function calling) (?:is |are )?not supported",
    re.IGNORECASE,
)
_VISION_UNSUPPORTED = re.compile(
    r"(?:does not|doesn't|do not) support (?:image|images|vision|image input)|"
    r"(?:image|images|vision|image input)s? (?:is |are )?not supported",
    re.IGNORECASE,
)
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_RETRYABLE_TYPES = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "server_error", "timeout_error"}
)
_QUOTA = "insufficient_quota"


def classify_http_error(
    status: int | None, message: str, *, code: str | None = None, error_type: str | None = None
) -> ProviderError:
    """Map an API error (status, body message, error code/type) to a ``ProviderError``.

    ``status`` is None for an error event inside an already open stream.
    """
    text = f"{code or ''} {message}"
    if code == "context_length_exceeded" or _CONTEXT_PATTERNS.search(text):
        return ProviderError(kind=ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED, message=message)
    if status is not None and 400 <= status < 500 and status not in _RETRYABLE_STATUS:
        for pattern, capability in (
            (_TOOLS_UNSUPPORTED, ProviderCapability.TOOL_USE),
            (_VISION_UNSUPPORTED, ProviderCapability.VISION),
        ):
            if pattern.search(message):
                return ProviderError(
                    kind=ProviderErrorKind.UNSUPPORTED_CAPABILITY,
                    message=message,
                    capability=capability,
                )
    prefix = f"HTTP {status}: " if status is not None else ""
    if _QUOTA in (code, error_type):  # a 429 that waiting does not heal
        return ProviderError(
            kind=ProviderErrorKind.PROVIDER,
            message=f"{prefix}{message} (the account's quota is used up: check its plan and "
            "billing; retrying will not help)",
        )
    retryable = status in _RETRYABLE_STATUS or (
        status is None and (error_type in _RETRYABLE_TYPES or error_type is None)
    )
    return ProviderError(
        kind=ProviderErrorKind.PROVIDER, message=f"{prefix}{message}", retryable=retryable
    )


def proxy_page(exc: Exception) -> ProviderError | None:
    """An HTTP error answered with an HTML page instead of the API's JSON error: a proxy or
    gateway in front of the endpoint sent it (a model API never answers in HTML), so the status
    and its text are all there is to say, e.g. ``HTTP 502 Bad Gateway from a proxy …``."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if response is None or not isinstance(status, int) or status < 400:
        return None
    content_type = str(response.headers.get("content-type", "")).lower()
    if "html" not in content_type:
        return None
    reason = str(getattr(response, "reason_phrase", "") or "")
    return ProviderError(
        kind=ProviderErrorKind.PROVIDER,
        message=f"HTTP {status} {reason}".rstrip()
        + " from a proxy or gateway in front of the endpoint (an HTML page, not an API error)",
        retryable=status in _RETRYABLE_STATUS,
    )


def connection_failure(exc: Exception, message: str) -> ProviderError:
    """The SDK's connection error with what lies beneath it ("Connection refused", a DNS
    failure, a timeout), which its own message ("Connection error.") leaves out."""
    cause = exc.__cause__
    detail = f" ({cause})" if cause is not None and str(cause) else ""
    return transport_error(f"{message}{detail}")


def endpoint_label(provider_id: str, base_url: str) -> str:
    """``provider 'id' at URL``, for errors: which endpoint failed, without credentials
    (a user:password part or a query string) the URL may carry."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    url = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return f"provider {provider_id!r} at {url}"


def located(classify: Classify, where: str) -> Classify:
    """``classify`` whose messages start with ``where`` (see ``endpoint_label``)."""

    def classify_here(exc: Exception) -> ProviderError:
        error = classify(exc)
        return error.model_copy(update={"message": f"{where}: {error.message}"})

    return classify_here


def transport_error(message: str) -> ProviderError:
    """A connection that failed, timed out or broke off: always worth another attempt."""
    return ProviderError(kind=ProviderErrorKind.TRANSPORT, message=message, retryable=True)


class IncompleteStream(Exception):
    """The server closed a stream cleanly but before saying how the response finished."""


class FirstByteTimeout(Exception):
    """The response did not start within the provider's ``first_byte_timeout_s``."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(
            f"no response within {limit_s:g} s (first_byte_timeout_s): the endpoint accepted "
            "the connection but did not answer"
        )


def stream_failure(exc: Exception) -> ProviderError:
    """Anything else that broke a stream (truncated body, undecodable chunk, early end)."""
    if isinstance(exc, IncompleteStream | FirstByteTimeout):
        return transport_error(str(exc))
    return transport_error(f"{type(exc).__name__}: {exc}")


def parse_tool_arguments(raw: str) -> dict[str, Any]:
    """Parse streamed JSON arguments; never raises (see ``INVALID_ARGUMENTS_KEY``)."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_ARGUMENTS_KEY: raw}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``max_attempts`` counts the first try. A server's
    ``Retry-After`` lengthens a sleep, up to ``max_delay_s``."""

    max_attempts: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def delay(self, retry_index: int) -> float:
        """Seconds before retry ``retry_index`` (0-based): half fixed, half random jitter."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0**retry_index)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


Attempt = Callable[[], AsyncIterator[ChatEvent]]
Classify = Callable[[Exception], ProviderError]


async def _with_retries(
    attempt: Attempt, classify: Classify, policy: RetryPolicy
) -> AsyncIterator[ChatEvent]:
    """Retry retryable failures, but only while nothing has been yielded yet."""
    for index in range(policy.max_attempts):
        started = False
        try:
            async for event in attempt():
                started = True
                yield event
            return
        except Exception as exc:  # any SDK or decoding failure becomes a ChatError
            error = classify(exc)
            if started or not error.retryable or index + 1 >= policy.max_attempts:
                if error.retryable and index > 0:
                    error = error.model_copy(
                        update={"message": f"{error.message} (after {index + 1} attempts)"}
                    )
                yield ChatError(error=error)
                return
            delay = policy.delay(index)
            if (asked := retry_after_s(exc)) is not None:
                delay = max(delay, min(asked, policy.max_delay_s))
        await asyncio.sleep(delay)


def retry_after_s(exc: Exception) -> float | None:
    """The server's ``Retry-After`` (seconds form) from an SDK status error, if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:  # the HTTP-date form is rare for model APIs
        return None


_END = object()
RECANCEL_S = 0.5


async def _stopped(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` until it has ended. A cancel can be lost below us (Python 3.11's
    ``wait_for`` drops one that meets its result, an SDK may catch one): it is sent again every
    ``RECANCEL_S`` rather than leave the caller waiting on a stream that may never end."""
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=RECANCEL_S)


async def drive_stream(
    attempt: Attempt, classify: Classify, policy: RetryPolicy, cancel: CancellationToken
) -> AsyncIterator[ChatEvent]:
    """Run the attempts in one task and stop it the moment ``cancel`` fires.

    The SDK stream lives entirely inside the pump task, so cancelling that task closes the HTTP
    response where it is (``finally`` in ``attempt``); the caller then gets
    ``Done(CANCELLED)``. Events already received are delivered first.
    """
    if cancel.is_cancelled:
        yield Done(finish_reason=FinishReason.CANCELLED)
        return
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def pump() -> None:
        async for event in _with_retries(attempt, classify, policy):
            queue.put_nowait(event)

    def finished(task: asyncio.Task[None]) -> None:
        if task.cancelled():
            queue.put_nowait(Done(finish_reason=FinishReason.CANCELLED))
        elif (exc := task.exception()) is not None:
            queue.put_nowait(
                ChatError(error=ProviderError(kind=ProviderErrorKind.PROVIDER, message=repr(exc)))
            )
        queue.put_nowait(_END)

    async def watch() -> None:
        await cancel.wait()
        await _stopped(pump_task)

    pump_task = asyncio.create_task(pump())
    pump_task.add_done_callback(finished)
    watcher = asyncio.create_task(watch())
    try:
        while (item := await queue.get()) is not _END:
            yield item
    finally:
        watcher.cancel()
        # wait() never raises the pump's CancelledError, yet still lets our own propagate.
        await _stopped(pump_task)
