"""Traces of the real workbench server: an HTTP request that sends a message is the parent of
its turn, whose model requests and tool run are its children; the request id links the trace
to the log lines."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_trace_id

from fakes.http_server import FakeHTTPServer, PageReply
from fakes.openai_server import OpenAIStream, text_reply
from server_kit import MODEL, Workbench
from telemetry_kit import attrs, has_content, is_child, memory_telemetry, named, one
from youyou.workbench.server import server_log_handler

SEND = "POST /chat/sessions/{session_id}/messages"
TURN = "invoke_agent youyou"


def finished(exporter: InMemorySpanExporter, *names: str) -> Sequence[ReadableSpan]:
    """The spans, once every one of ``names`` has ended (the turn ends just after its last
    frame is sent)."""
    deadline = time.monotonic() + 10
    while True:
        spans = exporter.get_finished_spans()
        if all(named(spans, name) for name in names) or time.monotonic() > deadline:
            return spans
        time.sleep(0.02)


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The server's log lines as ``--log-format json`` writes them."""
    buffer = io.StringIO()
    handler = server_log_handler(logging.StreamHandler(buffer), "json")
    root = logging.getLogger()
    root.addHandler(handler)
    yield buffer
    root.removeHandler(handler)


def ask_the_time(wb: Workbench, session_id: str, user: Any) -> list[Any]:
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", '{"timezone": "UTC"}'))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("It is late.", prompt=40, completion=7),
    )
    frames: list[Any] = user.send(
        session_id, "what time is it?", headers={"X-Request-Id": "req-trace-1"}
    )
    return frames


@pytest.mark.parametrize("workbench_db", ["sqlite"], indirect=True)
def test_a_send_is_a_request_span_over_its_turn_model_and_tool_spans(
    start_workbench: Callable[..., Workbench], json_log: io.StringIO
) -> None:
    telemetry, exporter = memory_telemetry()
    wb = start_workbench(tracer=telemetry.tracer)
    alice = wb.user("alice")
    session_id = alice.new_session()["id"]
    exporter.clear()
    frames = ask_the_time(wb, session_id, alice)
    assert frames[-1].event == "turn_complete"
    spans = finished(exporter, SEND, TURN)

    request = one(spans, SEND)
    assert request.kind is SpanKind.SERVER and request.parent is None
    assert attrs(request) == {
        "http.request.method": "POST",
        "url.path": f"/chat/sessions/{session_id}/messages",
        "youyou.request_id": "req-trace-1",
        "http.route": "/chat/sessions/{session_id}/messages",
        "http.response.status_code": 200,
    }
    turn = one(spans, TURN)
    assert is_child(turn, request)
    assert attrs(turn)["gen_ai.conversation.id"] == session_id
    assert attrs(turn)["gen_ai.usage.input_tokens"] == 60
    assert attrs(turn)["gen_ai.usage.output_tokens"] == 12
    chats = sorted(named(spans, f"chat {MODEL}"), key=lambda s: s.start_time or 0)
    assert len(chats) == 2 and all(is_child(c, turn) for c in chats)
    assert all(c.kind is SpanKind.CLIENT for c in chats)
    assert [attrs(c)["gen_ai.response.finish_reasons"] for c in chats] == [
        ("tool_calls",),
        ("stop",),
    ]
    assert [attrs(c)["gen_ai.usage.input_tokens"] for c in chats] == [20, 40]
    assert [attrs(c)["gen_ai.usage.output_tokens"] for c in chats] == [5, 7]
    tool = one(spans, "execute_tool get_current_time")
    assert is_child(tool, turn)
    assert attrs(tool)["gen_ai.tool.call.id"] == "call_1"
    assert not any(has_content(s) for s in spans)

    # The trace id is in the request's JSON log lines, next to the request id.
    assert request.context is not None
    trace_id = format_trace_id(request.context.trace_id)
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    mine = [line for line in lines if line["request_id"] == "req-trace-1"]
    assert mine and all(line.get("trace_id") == trace_id for line in mine)


@pytest.mark.parametrize("workbench_db", ["sqlite"], indirect=True)
def test_content_goes_into_spans_only_when_enabled(
    start_workbench: Callable[..., Workbench],
) -> None:
    telemetry, exporter = memory_telemetry(record_content=True)
    wb = start_workbench(tracer=telemetry.tracer)
    bob = wb.user("bob")
    session_id = bob.new_session()["id"]
    ask_the_time(wb, session_id, bob)
    spans = finished(exporter, SEND, TURN)
    first, second = sorted(named(spans, f"chat {MODEL}"), key=lambda s: s.start_time or 0)
    assert "what time is it?" in attrs(first)["gen_ai.input.messages"]
    assert "It is late." in attrs(second)["gen_ai.output.messages"]
    tool = one(spans, "execute_tool get_current_time")
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"]) == {"timezone": "UTC"}
    assert "UTC" in attrs(tool)["gen_ai.tool.call.result"]


class FakeCollector(FakeHTTPServer):
    """An OTLP/HTTP traces endpoint that accepts every export."""

    route = "/v1/traces"

    def __init__(self) -> None:
        super().__init__()
        self.default = lambda request: PageReply(200, "", "application/x-protobuf")

    def exported(self) -> list[tuple[str, str]]:
        """``(service.name, span name)`` of every span received."""
        spans = []
        for request in self.requests:
            export = ExportTraceServiceRequest.FromString(request.body)
            for resource_spans in export.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    spans += [(resource["service.name"], span.name) for span in scope.spans]
        return spans


@pytest.mark.parametrize("workbench_db", ["sqlite"], indirect=True)
def test_youyou_serve_exports_its_spans_over_otlp_as_configured(
    start_workbench: Callable[..., Workbench],
) -> None:
    """``[telemetry]`` in ``youyou.toml``, a real server process, a real OTLP/HTTP exporter:
    the spans queued when SIGTERM arrives are exported before the process exits."""
    with FakeCollector() as collector:
        wb = start_workbench(
            process=True,
            extra=(
                "[telemetry]\nenabled = true\n"
                f'otlp_endpoint = "{collector.url}/v1/traces"\nservice_name = "oncall-test"\n'
            ),
        )
        dora = wb.user("dora")
        frames = dora.send(dora.new_session()["id"], "disk full?")
        assert frames[-1].event == "turn_complete"
        assert wb.server.stop() == 0
        exported = collector.exported()
    names = {name for _, name in exported}
    assert {SEND, TURN, f"chat {MODEL}", "POST /auth/register"} <= names
    assert {service for service, _ in exported} == {"oncall-test"}
