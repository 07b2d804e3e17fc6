"""Error classification, tool-argument parsing, backoff and the cancellable stream driver."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from youyou.adapters.providers.errors import (
    INVALID_ARGUMENTS_KEY,
    Attempt,
    RetryPolicy,
    classify_http_error,
    drive_stream,
    parse_tool_arguments,
    transport_error,
)
from youyou.domain.cancel import CancellationToken
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    Done,
    FinishReason,
    ProviderCapability,
    ProviderError,
    ProviderErrorKind,
    TextDelta,
)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Input has too many tokens",
        "the request exceeds the available context size, try increasing it",
        "Please reduce the length of the messages or completion.",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    ],
)
def test_context_length_messages(message: str) -> None:
    error = classify_http_error(400, message)

    assert error.kind is ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert not error.retryable


def test_context_length_code_wins_over_the_message() -> None:
    error = classify_http_error(400, "bad request", code="context_length_exceeded")

    assert error.kind is ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED


@pytest.mark.parametrize(
    ("message", "capability"),
    [
        ("llama2 does not support tools", ProviderCapability.TOOL_USE),
        ("Function calling is not supported by this model", ProviderCapability.TOOL_USE),
        ("This model does not support image input", ProviderCapability.VISION),
        ("Images are not supported", ProviderCapability.VISION),
    ],
)
def test_capability_errors(message: str, capability: ProviderCapability) -> None:
    error = classify_http_error(400, message)

    assert error.kind is ProviderErrorKind.UNSUPPORTED_CAPABILITY
    assert error.capability is capability


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (422, False),
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
    ],
)
def test_status_codes(status: int, retryable: bool) -> None:
    error = classify_http_error(status, "boom")

    assert error.kind is ProviderErrorKind.PROVIDER
    assert error.retryable is retryable
    assert error.message == f"HTTP {status}: boom"


@pytest.mark.parametrize(
    ("error_type", "retryable"),
    [
        ("overloaded_error", True),
        ("api_error", True),
        (None, True),
        ("invalid_request_error", False),
        ("permission_error", False),
    ],
)
def test_errors_inside_an_open_stream(error_type: str | None, retryable: bool) -> None:
    assert classify_http_error(None, "x", error_type=error_type).retryable is retryable


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", {}),
        ("  ", {}),
        ('{"a": 1}', {"a": 1}),
        ('{"a": ', {INVALID_ARGUMENTS_KEY: '{"a": '}),
        ("[1]", {INVALID_ARGUMENTS_KEY: "[1]"}),
        ("null", {INVALID_ARGUMENTS_KEY: "null"}),
    ],
)
def test_tool_arguments(raw: str, expected: dict[str, object]) -> None:
    assert parse_tool_arguments(raw) == expected


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    policy = RetryPolicy(max_attempts=6, base_delay_s=0.5, max_delay_s=4.0)

    for index, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 4.0]):
        delays = {policy.delay(index) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered


def _attempts(*outcomes: list[ChatEvent] | Exception) -> tuple[list[int], Attempt]:
    calls: list[int] = []

    async def attempt() -> AsyncIterator[ChatEvent]:
        outcome = outcomes[len(calls)]
        calls.append(1)
        if isinstance(outcome, Exception):
            raise outcome
        for event in outcome:
            yield event

    return calls, attempt


def _classify(exc: Exception) -> ProviderError:
    return (
        transport_error(str(exc))
        if isinstance(exc, ConnectionError)
        else ProviderError(kind=ProviderErrorKind.PROVIDER, message=str(exc))
    )


async def _run(attempt: Attempt, policy: RetryPolicy) -> list[ChatEvent]:
    stream = drive_stream(attempt, _classify, policy, CancellationToken())
    return [event async for event in stream]


async def test_driver_retries_transient_failures_then_reports_the_attempts() -> None:
    calls, attempt = _attempts(ConnectionError("refused"), ConnectionError("refused"))

    events = await _run(attempt, RetryPolicy(2, 0.001, 0.001))

    assert len(calls) == 2
    assert events == [ChatError(error=transport_error("refused (after 2 attempts)"))]


async def test_driver_does_not_retry_permanent_failures() -> None:
    calls, attempt = _attempts(ValueError("bad"), [Done(finish_reason=FinishReason.STOP)])

    events = await _run(attempt, RetryPolicy(3, 0.001, 0.001))

    assert len(calls) == 1
    assert events == [
        ChatError(error=ProviderError(kind=ProviderErrorKind.PROVIDER, message="bad"))
    ]


async def test_driver_cancels_a_silent_attempt_promptly() -> None:
    closed = asyncio.Event()

    async def attempt() -> AsyncIterator[ChatEvent]:
        try:
            yield TextDelta(text="a")
            await asyncio.sleep(30)
            yield TextDelta(text="never")
        finally:
            closed.set()

    cancel = CancellationToken()
    events: list[ChatEvent] = []
    async for event in drive_stream(attempt, _classify, RetryPolicy(), cancel):
        events.append(event)
        cancel.cancel()

    assert events == [TextDelta(text="a"), Done(finish_reason=FinishReason.CANCELLED)]
    assert closed.is_set()


async def test_driver_cancels_again_an_attempt_that_lost_the_cancel() -> None:
    async def attempt() -> AsyncIterator[ChatEvent]:
        yield TextDelta(text="a")
        # lost, as Python 3.11's wait_for lost a cancel that met its result
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(30)
        await asyncio.sleep(30)  # then a stream that never ends
        yield TextDelta(text="never")

    cancel = CancellationToken()
    events: list[ChatEvent] = []
    async with asyncio.timeout(10):
        async for event in drive_stream(attempt, _classify, RetryPolicy(), cancel):
            events.append(event)
            cancel.cancel()

    assert events == [TextDelta(text="a"), Done(finish_reason=FinishReason.CANCELLED)]
