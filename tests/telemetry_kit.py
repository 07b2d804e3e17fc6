"""Spans read back from the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from youyou.adapters.telemetry.otel import Telemetry
from youyou.config import TelemetrySettings

CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)


def memory_telemetry(*, record_content: bool = False) -> tuple[Telemetry, InMemorySpanExporter]:
    """A tracer whose spans are exported synchronously into memory when they end."""
    exporter = InMemorySpanExporter()
    settings = TelemetrySettings(enabled=True, record_content=record_content)
    return Telemetry(settings, SimpleSpanProcessor(exporter)), exporter


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = named(spans, name)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def is_child(child: ReadableSpan, parent: ReadableSpan) -> bool:
    assert child.parent is not None and parent.context is not None, child.name
    return (
        child.parent.span_id == parent.context.span_id
        and child.context is not None
        and child.context.trace_id == parent.context.trace_id
    )


def has_content(span: ReadableSpan) -> bool:
    return any(key in attrs(span) for key in CONTENT_KEYS)
