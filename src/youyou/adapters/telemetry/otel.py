"""The tracing port on the OpenTelemetry SDK: one tracer provider per process, its own (the
global one is left to the embedding program), exporting in batches over OTLP/HTTP."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Status, StatusCode

from youyou import __version__
from youyou.config import TelemetrySettings
from youyou.domain.errors import AgentError
from youyou.ports.tracer import AttributeValue, SpanKind, Tracer, TraceSpan

_KINDS = {
    SpanKind.INTERNAL: trace.SpanKind.INTERNAL,
    SpanKind.CLIENT: trace.SpanKind.CLIENT,
    SpanKind.SERVER: trace.SpanKind.SERVER,
}


class _Span:
    __slots__ = ("_span",)

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    @property
    def trace_id(self) -> str | None:
        context = self._span.get_span_context()
        if not (context.is_valid and context.trace_flags.sampled):
            return None  # a trace the sampler dropped: no backend will ever have it
        return trace.format_trace_id(context.trace_id)

    def update_name(self, name: str) -> None:
        self._span.update_name(name)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self._span.set_attribute(key, value)

    def set_error(self, error_type: str, message: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR, message))


class OtelTracer:
    """``Tracer`` on an OpenTelemetry tracer. An exception leaving a span marks it failed
    with ``error.type`` (an ``AgentError``'s code, else the exception's class)."""

    def __init__(self, tracer: trace.Tracer, *, record_content: bool) -> None:
        self._tracer = tracer
        self._record_content = record_content

    @property
    def records_content(self) -> bool:
        return self._record_content

    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> AbstractContextManager[TraceSpan]:
        return self._span(name, attributes, kind)

    @contextmanager
    def _span(
        self, name: str, attributes: Mapping[str, AttributeValue], kind: SpanKind
    ) -> Iterator[TraceSpan]:
        with self._tracer.start_as_current_span(
            name,
            kind=_KINDS[kind],
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            handle = _Span(span)
            try:
                yield handle
            except BaseException as exc:
                code = exc.code.value if isinstance(exc, AgentError) else type(exc).__name__
                handle.set_error(code, str(exc))
                raise


class Telemetry:
    """A tracer provider and the ``Tracer`` on it; ``shutdown`` exports what is pending."""

    def __init__(self, settings: TelemetrySettings, processor: SpanProcessor) -> None:
        resource = Resource.create(
            {"service.name": settings.service_name, "service.version": __version__}
        )
        self.provider = TracerProvider(
            resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio))
        )
        self.provider.add_span_processor(processor)
        self.tracer: Tracer = OtelTracer(
            self.provider.get_tracer("youyou", __version__),
            record_content=settings.record_content,
        )

    @classmethod
    def exporting(
        cls, settings: TelemetrySettings, exporter: SpanExporter | None = None
    ) -> Telemetry:
        """Spans sent in batches off the event loop to ``exporter`` (default: OTLP/HTTP to
        ``settings.otlp_endpoint``)."""
        exporter = exporter or OTLPSpanExporter(endpoint=settings.otlp_endpoint)
        return cls(settings, BatchSpanProcessor(exporter))

    def shutdown(self) -> None:
        self.provider.shutdown()
