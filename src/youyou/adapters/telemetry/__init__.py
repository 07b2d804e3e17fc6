"""Traces through OpenTelemetry (the ``otel`` extra), behind the kernel's tracing port.

Nothing here imports OpenTelemetry until ``open_telemetry`` is called, so the package imports
without the extra installed; ``youyou.adapters.telemetry.otel`` is the implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from youyou.config import TelemetrySettings
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

if TYPE_CHECKING:
    from youyou.adapters.telemetry.otel import Telemetry

OTEL_MISSING = (
    "[telemetry] enabled = true needs OpenTelemetry: install the otel extra "
    "(pip install 'youyou-agent[otel]')"
)


def open_telemetry(settings: TelemetrySettings) -> Telemetry:
    """The tracer provider of ``[telemetry]``, exporting over OTLP; INVALID_CONFIG when the
    ``otel`` extra is not installed."""
    try:
        from youyou.adapters.telemetry.otel import Telemetry
    except ImportError as exc:
        raise AgentError(
            ErrorCode.INVALID_CONFIG, OTEL_MISSING, source=ErrorSource.AGENT_BUILDER
        ) from exc
    return Telemetry.exporting(settings)
