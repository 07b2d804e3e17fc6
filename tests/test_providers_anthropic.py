"""Anthropic provider: the real ``anthropic`` SDK against a fake Messages server."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakes.anthropic_server import AnthropicStream, FakeAnthropicServer, anthropic_error, text_reply
from fakes.chat import (
    FAST_RETRY,
    PNG_B64,
    cancel_after_first_text,
    collect,
    ended_with_error,
    track,
    user,
)
from fakes.http_server import PROXY_502_PAGE, Silence
from youyou.adapters.providers.anthropic import DEFAULT_MAX_TOKENS, AnthropicProvider
from youyou.adapters.providers.base import Endpoint
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.model import (
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
    ModelToolCall,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    Usage,
)
from youyou.domain.tool import ToolDescriptor

MODEL = ModelInfo(model_id="claude-test", display_name="Claude test", context_window=200_000)


def request(
    *messages: ModelMessage, tools: tuple[ToolDescriptor, ...] = (), max_tokens: int | None = None
) -> ChatRequest:
    return ChatRequest(
        model_id="claude-test",
        system_prompt="You are on call.",
        messages=messages or (user(TextBlock(text="hi")),),
        tools=tools,
        max_tokens=max_tokens,
    )


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def provider_for(url: str) -> AnthropicProvider:
    endpoint = Endpoint(
        base_url=url,
        api_key="sk-ant-test",
        timeout_s=10,
        retry=FAST_RETRY,
        headers={"anthropic-beta": "fake-beta"},
    )
    return track(AnthropicProvider(provider_id="anthropic", models=[MODEL], endpoint=endpoint))


pytestmark = pytest.mark.usefixtures("close_providers")


async def test_text_thinking_and_usage(server: FakeAnthropicServer) -> None:
    stream = (
        AnthropicStream(input_tokens=20, cache_read_tokens=5)
        .ping()
        .thinking("Let me ", "check.")
        .text("All ", "good.")
        .stop(output_tokens=9)
    )
    server.enqueue(stream.reply())

    events = await collect(provider_for(server.base_url), request())

    assert events == [
        ReasoningDelta(text="Let me "),
        ReasoningDelta(text="check."),
        TextDelta(text="All "),
        TextDelta(text="good."),
        Done(
            finish_reason=FinishReason.STOP,
            usage=Usage(input_tokens=25, output_tokens=9, total_tokens=34),
        ),
    ]
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert "sk-ant-test" in (sent.headers.get("x-api-key") or sent.headers["authorization"])
    assert sent.headers["anthropic-beta"] == "fake-beta"
    assert sent.json == {
        "model": "claude-test",
        "system": "You are on call.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": True,
    }


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
    ],
)
async def test_stop_reasons(server: FakeAnthropicServer, reason: str, finish: FinishReason) -> None:
    server.enqueue(AnthropicStream().text("x").stop(reason).reply())

    events = await collect(provider_for(server.base_url), request(max_tokens=50))

    assert events[-1] == Done(
        finish_reason=finish, usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15)
    )
    assert server.requests[0].json["max_tokens"] == 50


async def test_tool_use_round_trip(server: FakeAnthropicServer) -> None:
    server.enqueue(
        AnthropicStream()
        .text("Looking.")
        .tool_use("toolu_1", "get_metrics", '{"serv', 'ice": "api"}')
        .tool_use("toolu_2", "uptime")
        .stop("tool_use")
        .reply(),
        text_reply("Both fine."),
    )
    tools = (
        ToolDescriptor(
            name="get_metrics",
            description="metrics",
            parameters_schema={"type": "object", "properties": {"service": {"type": "string"}}},
        ),
        ToolDescriptor(name="uptime", description="uptime"),
    )
    provider = provider_for(server.base_url)
    first = request(tools=tools)

    events = await collect(provider, first)

    calls = [e for e in events if isinstance(e, ToolCallRequested)]
    assert calls == [
        ToolCallRequested(call_id="toolu_1", tool_name="get_metrics", arguments={"service": "api"}),
        ToolCallRequested(call_id="toolu_2", tool_name="uptime", arguments={}),
    ]
    assert events[-1].finish_reason is FinishReason.TOOL_CALLS  # type: ignore[union-attr]

    second = first.model_copy(
        update={
            "messages": (
                *first.messages,
                ModelMessage(
                    role=ModelMessageRole.ASSISTANT,
                    content=(TextBlock(text="Looking."),),
                    tool_calls=tuple(
                        ModelToolCall(
                            call_id=c.call_id, tool_name=c.tool_name, arguments=c.arguments
                        )
                        for c in calls
                    ),
                ),
                ModelMessage(
                    role=ModelMessageRole.TOOL,
                    tool_call_id="toolu_1",
                    content=(TextBlock(text="p99 120ms"),),
                ),
                ModelMessage(
                    role=ModelMessageRole.TOOL,
                    tool_call_id="toolu_2",
                    content=(TextBlock(text="up 3d"),),
                ),
            )
        }
    )
    assert await collect(provider, second) == [
        TextDelta(text="Both fine."),
        Done(
            finish_reason=FinishReason.STOP,
            usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15),
        ),
    ]

    body = server.requests[1].json
    assert body["tools"][0] == {
        "name": "get_metrics",
        "description": "metrics",
        "input_schema": tools[0].parameters_schema,
    }
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_metrics",
                    "input": {"service": "api"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "uptime", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "p99 120ms"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "up 3d"}],
                },
            ],
        },
    ]


async def test_images_and_files_become_blocks(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("A cat."))
    message = user(
        TextBlock(text="what is this"),
        ImageBlock(mime_type="image/png", data_base64=PNG_B64),
        FileContentBlock(file_name="notes.md", text="# notes"),
    )
    system = ModelMessage(role=ModelMessageRole.SYSTEM, content=(TextBlock(text="Extra rule."),))

    await collect(provider_for(server.base_url), request(system, message))

    body = server.requests[0].json
    assert body["system"] == "You are on call.\n\nExtra rule."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                },
                {"type": "text", "text": "File: notes.md\n\n# notes"},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("status", "error_type", "message", "kind", "retryable"),
    [
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED,
            False,
        ),
        (
            400,
            "invalid_request_error",
            "max_tokens: field required",
            ProviderErrorKind.PROVIDER,
            False,
        ),
        (401, "authentication_error", "invalid x-api-key", ProviderErrorKind.PROVIDER, False),
        (
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            ProviderErrorKind.PROVIDER,
            True,
        ),
        (529, "overloaded_error", "Overloaded", ProviderErrorKind.PROVIDER, True),
        (500, "api_error", "Internal server error", ProviderErrorKind.PROVIDER, True),
    ],
)
async def test_http_errors_are_mapped(
    server: FakeAnthropicServer,
    status: int,
    error_type: str,
    message: str,
    kind: ProviderErrorKind,
    retryable: bool,
) -> None:
    server.default = lambda _: anthropic_error(status, error_type, message)

    error = ended_with_error(await collect(provider_for(server.base_url), request()))

    assert (error.kind, error.retryable) == (kind, retryable)
    assert message in error.message
    assert len(server.requests) == (FAST_RETRY.max_attempts if retryable else 1)


async def test_a_proxy_html_page_is_named_as_such(server: FakeAnthropicServer) -> None:
    server.default = lambda _: PROXY_502_PAGE

    error = ended_with_error(await collect(provider_for(server.base_url), request()))

    assert error.message == (
        f"provider 'anthropic' at {server.base_url}: HTTP 502 Bad Gateway from a proxy or "
        "gateway in front of the endpoint (an HTML page, not an API error) (after 3 attempts)"
    )
    assert error.retryable and len(server.requests) == FAST_RETRY.max_attempts


async def test_a_silent_endpoint_fails_at_the_first_byte_timeout(
    server: FakeAnthropicServer,
) -> None:
    server.default = lambda _: Silence()
    endpoint = Endpoint(base_url=server.base_url, first_byte_timeout_s=0.5, retry=FAST_RETRY)
    provider = track(AnthropicProvider(provider_id="anthropic", models=[MODEL], endpoint=endpoint))

    started = time.monotonic()
    error = ended_with_error(await collect(provider, request()))

    assert time.monotonic() - started < 5.0  # three waits of 0.5 s, not the 60 s read timeout
    assert error.kind is ProviderErrorKind.TRANSPORT
    assert "no response within 0.5 s (first_byte_timeout_s)" in error.message
    assert len(server.requests) == FAST_RETRY.max_attempts


async def test_retry_before_first_token_then_success(server: FakeAnthropicServer) -> None:
    server.enqueue(
        anthropic_error(529, "overloaded_error", "Overloaded"),
        AnthropicStream().error("overloaded_error", "Overloaded").reply(),
        text_reply("ok"),
    )

    events = await collect(provider_for(server.base_url), request())

    assert events[0] == TextDelta(text="ok")
    assert len(events) == 2
    assert len(server.requests) == 3


async def test_error_event_after_text_is_not_retried(server: FakeAnthropicServer) -> None:
    server.enqueue(
        AnthropicStream().text("Part").error("overloaded_error", "Overloaded").reply(),
        text_reply("Partial answer again"),
    )

    error = ended_with_error(await collect(provider_for(server.base_url), request()), "Part")

    assert error.retryable  # the kernel may retry the whole turn, the provider didn't
    assert len(server.requests) == 1


async def test_broken_stream_is_a_transport_error(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicStream().text("Hal").abort())

    error = ended_with_error(await collect(provider_for(server.base_url), request()), "Hal")

    assert error.kind is ProviderErrorKind.TRANSPORT
    assert len(server.requests) == 1


async def test_cancellation_closes_the_http_stream(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicStream().text("Hello", " there", delay_s=30).stop().reply())

    events = await cancel_after_first_text(provider_for(server.base_url), request())

    assert events == [TextDelta(text="Hello"), Done(finish_reason=FinishReason.CANCELLED)]
    assert await server.requests[0].hung_up()
