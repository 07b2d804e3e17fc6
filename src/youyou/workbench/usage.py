"""What each turn used: its tokens and cost stored when it completes, counted in ``/metrics``,
and shown per answer, per session and per user (``GET /usage``)."""

from __future__ import annotations

from collections.abc import Mapping

from youyou.config import ModelPrice
from youyou.domain.model import Usage
from youyou.workbench.metrics import Metrics
from youyou.workbench.schemas import UsageOut
from youyou.workbench.store import ChatSessionRecord
from youyou.workbench.store.usage import TurnUsageRecord, UsageTotals


class UsageBook:
    """Prices are those of ``[[providers.models]]`` when the server started; a turn's cost is
    computed once, when it completes, and stored with it."""

    def __init__(self, metrics: Metrics, prices: Mapping[str, ModelPrice]) -> None:
        self._metrics = metrics
        self._prices = prices

    def priced(
        self, chat: ChatSessionRecord, model_id: str, turn_seq: int, usage: Usage
    ) -> TurnUsageRecord:
        """A completed turn's usage, counted, with its cost (None without prices), to be
        stored with the session's projection (``record_turn_end``)."""
        price = self._prices.get(model_id)
        cost = price.cost(usage.input_tokens, usage.output_tokens) if price else None
        tokens = self._metrics.tokens
        tokens.labels(direction="input", model=model_id).inc(usage.input_tokens)
        tokens.labels(direction="output", model=model_id).inc(usage.output_tokens)
        if cost is not None:
            self._metrics.cost.labels(model=model_id).inc(cost)
        return TurnUsageRecord(
            chat.owner_id,
            chat.id,
            turn_seq,
            model_id,
            usage.input_tokens,
            usage.output_tokens,
            cost,
        )


def usage_out(totals: UsageTotals | TurnUsageRecord) -> UsageOut:
    turns = totals.turns if isinstance(totals, UsageTotals) else 1
    return UsageOut(
        model_id=totals.model_id,
        turns=turns,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        cost=totals.cost,
    )
