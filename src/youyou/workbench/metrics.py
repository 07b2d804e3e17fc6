"""Prometheus metrics of one server process (``GET /metrics``).

Each process keeps its own registry; behind ``--workers N`` a scrape sees the process that
answered it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# A person answering a page: seconds to an hour and more.
_APPROVAL_WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "youyou_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.turns = Counter(
            "youyou_turns",
            "Finished turns by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.active_streams = Gauge(
            "youyou_active_turn_streams",
            "Turns running in this process.",
            registry=self.registry,
        )
        self.open_sessions = Gauge(
            "youyou_open_sessions",
            "Sessions held open in this process (closed again when idle).",
            registry=self.registry,
        )
        self.time_to_first_event = Histogram(
            "youyou_time_to_first_event_seconds",
            "From accepting a send to the turn's first SSE frame.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.provider_latency = Histogram(
            "youyou_turn_duration_seconds",
            "From accepting a send to the model's complete answer (model time included).",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.provider_errors = Counter(
            "youyou_provider_errors",
            "Turns that ended with a model provider error.",
            registry=self.registry,
        )
        self.compactions = Counter(
            "youyou_compactions",
            "Context compactions by trigger (auto inside a turn, manual by request).",
            ["trigger"],
            registry=self.registry,
        )

        self.approvals = Counter(
            "youyou_tool_approvals",
            "Decisions on tool calls that waited for approval, by decision (a timeout denies).",
            ["decision"],
            registry=self.registry,
        )
        self.approval_wait = Histogram(
            "youyou_tool_approval_wait_seconds",
            "From a tool call's approval request to its decision.",
            buckets=_APPROVAL_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "youyou_tokens",
            "Tokens of completed turns by direction (input, output) and model.",
            ["direction", "model"],
            registry=self.registry,
        )
        self.cost = Counter(
            "youyou_cost",
            "Cost of completed turns by model, for models with prices configured.",
            ["model"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
