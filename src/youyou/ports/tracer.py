"""Tracing port: where a turn, a model call, a tool call and a compaction spent their time.

The kernel opens spans through this Protocol and never imports a tracing library, so it runs
the same with tracing off (the default no-op tracer) or on (the OpenTelemetry adapter in
``youyou.adapters.telemetry``). Span names and attribute keys follow the OpenTelemetry GenAI
semantic conventions (``youyou.application.tracing``); an implementation only carries them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from enum import StrEnum
from typing import Protocol

AttributeValue = str | bool | int | float | Sequence[str]


class SpanKind(StrEnum):
    INTERNAL = "internal"
    CLIENT = "client"  # a call to another service: a model request
    SERVER = "server"  # a request this process answers: an HTTP request


class TraceSpan(Protocol):
    @property
    def trace_id(self) -> str | None:
        """The trace's id in hex (what log lines carry), None when nothing is recorded."""
        ...

    def update_name(self, name: str) -> None:
        """For a name known only later (an HTTP request's route, once it is matched)."""
        ...

    def set_attribute(self, key: str, value: AttributeValue) -> None: ...

    def set_error(self, error_type: str, message: str) -> None:
        """Mark the span failed: ``error_type`` is an error code or an exception's class."""
        ...


class Tracer(Protocol):
    """``span`` is the current span inside its ``with`` block, so spans opened there (also in
    tasks started there) are its children. An exception leaving the block marks it failed."""

    @property
    def records_content(self) -> bool:
        """Whether message and tool content may go into spans (off unless configured)."""
        ...

    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> AbstractContextManager[TraceSpan]: ...
