"""OpenAI-compatible provider: the real ``openai`` SDK against a fake Chat Completions server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from fakes.chat import (
    FAST_RETRY,
    PNG_B64,
    cancel_after_first_text,
    collect,
    ended_with_error,
    track,
    user,
)
from fakes.http_server import PROXY_502_PAGE, JSONReply, Silence
from fakes.openai_server import FakeOpenAIServer, OpenAIStream, openai_error, text_reply
from port_kit import free_port
from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.errors import INVALID_ARGUMENTS_KEY, RetryPolicy
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.model import (
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
    ModelToolCall,
    ProviderCapability,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    Usage,
)
from youyou.domain.tool import ToolDescriptor

MODEL = ModelInfo(model_id="gpt-test", display_name="GPT test", context_window=8000)


def request(*messages: ModelMessage, tools: tuple[ToolDescriptor, ...] = ()) -> ChatRequest:
    return ChatRequest(
        model_id="gpt-test",
        system_prompt="Be brief.",
        messages=messages or (user(TextBlock(text="hi")),),
        tools=tools,
    )


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def provider_for(
    url: str,
    retry: RetryPolicy = FAST_RETRY,
    *,
    headers: dict[str, str] | None = None,
    stream_usage: bool = True,
) -> OpenAICompatProvider:
    endpoint = Endpoint(
        base_url=url, api_key="sk-test", headers=headers or {}, timeout_s=10, retry=retry
    )
    return track(
        OpenAICompatProvider(
            provider_id="openai", models=[MODEL], endpoint=endpoint, stream_usage=stream_usage
        )
    )


pytestmark = pytest.mark.usefixtures("close_providers")


async def test_text_streams_in_order_with_usage(server: FakeOpenAIServer) -> None:
    server.enqueue(text_reply("Hel", "lo", "!", prompt=12, completion=3))
    provider = provider_for(server.base_url, headers={"X-Team": "sre"})

    events = await collect(provider, request())

    assert events == [
        TextDelta(text="Hel"),
        TextDelta(text="lo"),
        TextDelta(text="!"),
        Done(
            finish_reason=FinishReason.STOP,
            usage=Usage(input_tokens=12, output_tokens=3, total_tokens=15),
        ),
    ]
    sent = server.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-team"] == "sre"
    body = sent.json
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in body


async def test_reasoning_deltas_from_both_field_names(server: FakeOpenAIServer) -> None:
    stream = (
        OpenAIStream()
        .reasoning("think ")
        .reasoning("more", field="reasoning")
        .text("answer")
        .finish()
        .usage(5, 7, reasoning=4)
    )
    server.enqueue(stream.reply())

    events = await collect(provider_for(server.base_url), request())

    assert events == [
        ReasoningDelta(text="think "),
        ReasoningDelta(text="more"),
        TextDelta(text="answer"),
        Done(
            finish_reason=FinishReason.STOP,
            usage=Usage(input_tokens=5, output_tokens=7, reasoning_tokens=4, total_tokens=12),
        ),
    ]


async def test_parallel_tool_calls_are_assembled_from_fragments(
    server: FakeOpenAIServer,
) -> None:
    stream = (
        OpenAIStream()
        .text("Checking.")
        .tool_calls(
            ("call_a", "get_metrics", '{"service": "api", "window": "5m"}'),
            ("call_b", "search_logs", '{"query": "error 500", "limit": 20}'),
            pieces=4,
        )
    )
    server.enqueue(stream.finish("tool_calls").usage(30, 20).reply())
    tools = (
        ToolDescriptor(name="get_metrics", description="metrics"),
        ToolDescriptor(name="search_logs", description="logs"),
    )

    events = await collect(provider_for(server.base_url), request(tools=tools))

    assert events == [
        TextDelta(text="Checking."),
        ToolCallRequested(
            call_id="call_a", tool_name="get_metrics", arguments={"service": "api", "window": "5m"}
        ),
        ToolCallRequested(
            call_id="call_b", tool_name="search_logs", arguments={"query": "error 500", "limit": 20}
        ),
        Done(
            finish_reason=FinishReason.TOOL_CALLS,
            usage=Usage(input_tokens=30, output_tokens=20, total_tokens=50),
        ),
    ]
    sent_tools = server.requests[0].json["tools"]
    assert [t["function"]["name"] for t in sent_tools] == ["get_metrics", "search_logs"]
    assert sent_tools[0] == {
        "type": "function",
        "function": {
            "name": "get_metrics",
            "description": "metrics",
            "parameters": {"type": "object", "properties": {}},
        },
    }


async def test_invalid_arguments_and_wrong_finish_reason_do_not_crash(
    server: FakeOpenAIServer,
) -> None:
    stream = OpenAIStream().tool_calls(("c1", "run", '{"cmd": "ls"'), ("c2", "run", "[1, 2]"))
    server.enqueue(stream.finish("stop").reply())

    events = await collect(provider_for(server.base_url), request())

    assert events == [
        ToolCallRequested(
            call_id="c1", tool_name="run", arguments={INVALID_ARGUMENTS_KEY: '{"cmd": "ls"'}
        ),
        ToolCallRequested(
            call_id="c2", tool_name="run", arguments={INVALID_ARGUMENTS_KEY: "[1, 2]"}
        ),
        Done(finish_reason=FinishReason.TOOL_CALLS),
    ]


async def test_tool_calls_without_index_are_split_by_id(server: FakeOpenAIServer) -> None:
    stream = (
        OpenAIStream()
        .tool_fragment(None, call_id="a", name="ping", arguments='{"host": ')
        .tool_fragment(None, arguments='"db"}')
        .tool_fragment(None, call_id="b", name="ping", arguments='{"host": "api"}')
    )
    server.enqueue(stream.finish("tool_calls").reply())

    events = await collect(provider_for(server.base_url), request())

    assert events[:2] == [
        ToolCallRequested(call_id="a", tool_name="ping", arguments={"host": "db"}),
        ToolCallRequested(call_id="b", tool_name="ping", arguments={"host": "api"}),
    ]


async def test_finish_reason_length(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("cut").finish("length").reply())

    events = await collect(provider_for(server.base_url, stream_usage=False), request())

    assert events[-1] == Done(finish_reason=FinishReason.LENGTH)
    assert "stream_options" not in server.requests[0].json


async def test_history_images_files_and_tool_results_use_the_wire_format(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(text_reply("ok"))
    history = (
        user(
            TextBlock(text="look"),
            ImageBlock(mime_type="image/png", data_base64=PNG_B64),
            FileContentBlock(file_name="app.log", text="boom"),
        ),
        ModelMessage(
            role=ModelMessageRole.ASSISTANT,
            content=(TextBlock(text="calling"),),
            tool_calls=(ModelToolCall(call_id="c1", tool_name="grep", arguments={"q": "boom"}),),
        ),
        ModelMessage(
            role=ModelMessageRole.TOOL, tool_call_id="c1", content=(TextBlock(text="3 matches"),)
        ),
        ModelMessage(
            role=ModelMessageRole.ASSISTANT,
            tool_calls=(ModelToolCall(call_id="c2", tool_name="noop", arguments={}),),
        ),
    )

    await collect(provider_for(server.base_url), request(*history))

    messages = server.requests[0].json["messages"]
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            {"type": "text", "text": "File: app.log\n\nboom"},
        ],
    }
    assert messages[2] == {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "grep", "arguments": '{"q": "boom"}'},
            }
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "3 matches"}
    assert messages[4]["content"] is None


@pytest.mark.parametrize(
    ("status", "message", "code", "kind", "retryable"),
    [
        (
            400,
            "This model's maximum context length is 8192 tokens.",
            "context_length_exceeded",
            ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED,
            False,
        ),
        (
            400,
            "prompt has too many tokens for this model",
            None,
            ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED,
            False,
        ),
        (
            400,
            "registry/llama2 does not support tools",
            None,
            ProviderErrorKind.UNSUPPORTED_CAPABILITY,
            False,
        ),
        (401, "Incorrect API key provided", "invalid_api_key", ProviderErrorKind.PROVIDER, False),
        (429, "Rate limit reached", "rate_limit_exceeded", ProviderErrorKind.PROVIDER, True),
        (500, "The server had an error", None, ProviderErrorKind.PROVIDER, True),
    ],
)
async def test_http_errors_are_mapped(
    server: FakeOpenAIServer,
    status: int,
    message: str,
    code: str | None,
    kind: ProviderErrorKind,
    retryable: bool,
) -> None:
    server.default = lambda _: openai_error(status, message, code=code)

    error = ended_with_error(await collect(provider_for(server.base_url), request()))

    assert (error.kind, error.retryable) == (kind, retryable)
    assert message in error.message
    assert len(server.requests) == (FAST_RETRY.max_attempts if retryable else 1)
    if kind is ProviderErrorKind.UNSUPPORTED_CAPABILITY:
        assert error.capability is ProviderCapability.TOOL_USE


async def test_a_proxy_html_page_is_named_as_such(server: FakeOpenAIServer) -> None:
    server.default = lambda _: PROXY_502_PAGE

    error = ended_with_error(await collect(provider_for(server.base_url), request()))

    assert error.message == (
        f"provider 'openai' at {server.base_url}: HTTP 502 Bad Gateway from a proxy or "
        "gateway in front of the endpoint (an HTML page, not an API error) (after 3 attempts)"
    )
    assert error.retryable and len(server.requests) == FAST_RETRY.max_attempts


async def test_a_silent_endpoint_fails_at_the_first_byte_timeout(
    server: FakeOpenAIServer,
) -> None:
    server.default = lambda _: Silence()
    endpoint = Endpoint(
        base_url=server.base_url,
        timeout_s=30,
        first_byte_timeout_s=0.5,
        retry=RetryPolicy(2, 0.01, 0.01),
    )
    provider = track(OpenAICompatProvider(provider_id="openai", models=[MODEL], endpoint=endpoint))

    started = time.monotonic()
    error = ended_with_error(await collect(provider, request()))
    elapsed = time.monotonic() - started

    assert error.kind is ProviderErrorKind.TRANSPORT and error.retryable
    assert "no response within 0.5 s (first_byte_timeout_s)" in error.message
    assert error.message.endswith("(after 2 attempts)")
    assert 1.0 <= elapsed < 5.0  # two waits of 0.5 s, not the 30 s read timeout
    assert len(server.requests) == 2
    assert all([await r.hung_up() for r in server.requests])


async def test_connection_refused_is_a_retryable_transport_error() -> None:
    provider = provider_for(f"http://127.0.0.1:{free_port()}/v1", RetryPolicy(2, 0.01, 0.01))

    error = ended_with_error(await collect(provider, request()))

    assert error.kind is ProviderErrorKind.TRANSPORT
    assert error.retryable


async def test_retries_before_the_first_token(server: FakeOpenAIServer) -> None:
    server.enqueue(
        openai_error(503, "overloaded", error_type="server_error"),
        openai_error(429, "slow down", error_type="requests"),
        text_reply("fine"),
    )

    events = await collect(provider_for(server.base_url), request())

    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(text="fine")]
    assert isinstance(events[-1], Done)
    assert len(server.requests) == 3


async def test_retry_after_header_is_honoured(server: FakeOpenAIServer) -> None:
    limited = openai_error(429, "slow down", error_type="requests")
    server.enqueue(JSONReply(429, limited.body, headers={"retry-after": "0.4"}), text_reply("ok"))
    started = time.monotonic()

    events = await collect(provider_for(server.base_url, RetryPolicy(2, 0.001, 5.0)), request())

    assert time.monotonic() - started >= 0.4
    assert events[0] == TextDelta(text="ok")


async def test_no_retry_once_text_was_delivered(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("Hel").abort(), text_reply("Hello"))

    error = ended_with_error(await collect(provider_for(server.base_url), request()), "Hel")

    assert error.kind is ProviderErrorKind.TRANSPORT
    assert len(server.requests) == 1


async def test_error_object_inside_the_stream(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("a").error("upstream overloaded").reply())

    error = ended_with_error(await collect(provider_for(server.base_url), request()), "a")

    assert "upstream overloaded" in error.message
    assert len(server.requests) == 1


async def test_stream_without_finish_reason_is_an_error(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("partial").reply())

    error = ended_with_error(await collect(provider_for(server.base_url), request()), "partial")

    assert error.kind is ProviderErrorKind.TRANSPORT


async def test_cancellation_closes_the_http_stream(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("Hello", " world", delay_s=30).finish().reply())

    events = await cancel_after_first_text(provider_for(server.base_url), request())

    assert events == [TextDelta(text="Hello"), Done(finish_reason=FinishReason.CANCELLED)]
    assert await server.requests[0].hung_up()


async def test_cancelled_token_sends_nothing(server: FakeOpenAIServer) -> None:
    cancel = CancellationToken()
    cancel.cancel()

    events = await collect(provider_for(server.base_url), request(), cancel)

    assert events == [Done(finish_reason=FinishReason.CANCELLED)]
    assert server.requests == []


async def test_cancellation_interrupts_the_backoff(server: FakeOpenAIServer) -> None:
    server.default = lambda _: openai_error(503, "down", error_type="server_error")
    cancel = CancellationToken()
    provider = provider_for(server.base_url, RetryPolicy(5, base_delay_s=30, max_delay_s=30))
    asyncio.get_running_loop().call_later(0.3, cancel.cancel)

    events = await asyncio.wait_for(collect(provider, request(), cancel), timeout=5)

    assert events == [Done(finish_reason=FinishReason.CANCELLED)]
    assert len(server.requests) == 1


async def test_abandoning_the_stream_closes_the_connection(server: FakeOpenAIServer) -> None:
    server.enqueue(OpenAIStream().text("Hello", " world", delay_s=30).finish().reply())
    stream = provider_for(server.base_url).chat(request(), CancellationToken())

    assert await anext(stream) == TextDelta(text="Hello")
    await stream.aclose()  # type: ignore[attr-defined]

    assert await server.requests[0].hung_up()


async def test_a_cancel_that_comes_as_the_response_starts_is_not_lost() -> None:
    """A caller cancelled in the moment its response starts is cancelled: Python 3.11's
    ``wait_for`` handed it the response instead, and it read on a stalled stream for ever."""
    provider = provider_for(f"http://127.0.0.1:{free_port()}/v1")
    try:
        opening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiting = asyncio.create_task(provider._first_byte(opening))
        await asyncio.sleep(0)  # waiting for the response to start
        opening.set_result("the response")
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    finally:
        await provider.close()
