"""Token usage and cost per completed turn, and their sums per session and per user.

One row per turn, written once when the turn completes (never updated), so two processes
never contend for a counter; the sums are aggregates over the rows of one owner or session,
or of every account at once for administrators (one GROUP BY query).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select

from youyou.workbench.store.base import StoreBase
from youyou.workbench.store.tables import turn_usage, users


@dataclass(frozen=True, slots=True)
class TurnUsageRecord:
    owner_id: str
    chat_session_id: str
    turn_seq: int
    """The ledger seq of the turn's user message: the answer it belongs to follows it."""
    model_id: str
    input_tokens: int
    output_tokens: int
    cost: float | None
    """None when the model has no prices configured."""


@dataclass(frozen=True, slots=True)
class UsageTotals:
    model_id: str | None  # None: every model together
    turns: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    """The cost of the priced turns among them; None when none was priced."""


@dataclass(frozen=True, slots=True)
class AccountUsage:
    user_id: str
    username: str
    usage: UsageTotals


_TOTALS = (
    func.count(turn_usage.c.id),  # not count(*): an account without turns joins one empty row
    func.coalesce(func.sum(turn_usage.c.input_tokens), 0),
    func.coalesce(func.sum(turn_usage.c.output_tokens), 0),
    func.sum(turn_usage.c.cost),
)


def _totals(model_id: str | None, row: Sequence[Any]) -> UsageTotals:
    turns, tokens_in, tokens_out, cost = row
    return UsageTotals(
        model_id, int(turns), int(tokens_in), int(tokens_out), None if cost is None else cost
    )


class UsageQueries(StoreBase):
    async def session_turn_usage(self, chat_session_id: str) -> dict[int, TurnUsageRecord]:
        """The usage of each completed turn of a session, by the seq of its user message."""
        query = select(
            turn_usage.c.owner_id,
            turn_usage.c.chat_session_id,
            turn_usage.c.turn_seq,
            turn_usage.c.model_id,
            turn_usage.c.input_tokens,
            turn_usage.c.output_tokens,
            turn_usage.c.cost,
        ).where(turn_usage.c.chat_session_id == chat_session_id)
        async with self._transaction("loading a session's usage") as conn:
            rows = (await conn.execute(query)).all()
        return {row.turn_seq: TurnUsageRecord(*row) for row in rows}

    async def session_usage(self, chat_session_id: str) -> UsageTotals:
        query = select(*_TOTALS).where(turn_usage.c.chat_session_id == chat_session_id)
        async with self._transaction("summing a session's usage") as conn:
            return _totals(None, (await conn.execute(query)).one())

    async def owner_usage(self, owner_id: str) -> tuple[UsageTotals, list[UsageTotals]]:
        """One user's usage in all, and per model (most tokens first)."""
        per_model = (
            select(turn_usage.c.model_id, *_TOTALS)
            .where(turn_usage.c.owner_id == owner_id)
            .group_by(turn_usage.c.model_id)
        )
        overall = select(*_TOTALS).where(turn_usage.c.owner_id == owner_id)
        async with self._transaction("summing a user's usage") as conn:
            total = _totals(None, (await conn.execute(overall)).one())
            rows = (await conn.execute(per_model)).all()
        models = [_totals(row[0], row[1:]) for row in rows]
        models.sort(key=lambda t: (-(t.input_tokens + t.output_tokens), t.model_id or ""))
        return total, models

    async def usage_by_account(
        self, since: datetime | None = None, until: datetime | None = None
    ) -> list[AccountUsage]:
        """Every account's usage of turns completed in ``[since, until)`` (either bound
        open when None), most tokens first; accounts without such turns have zeros. One
        query: the accounts left-joined to their turns in the window, grouped by account."""
        window = [turn_usage.c.owner_id == users.c.id]
        if since is not None:
            window.append(turn_usage.c.created_at >= since)
        if until is not None:
            window.append(turn_usage.c.created_at < until)
        tokens_in, tokens_out = _TOTALS[1], _TOTALS[2]
        query = (
            select(users.c.id, users.c.username, *_TOTALS)
            .select_from(users.outerjoin(turn_usage, and_(*window)))
            .group_by(users.c.id, users.c.username, users.c.username_folded)
            .order_by((tokens_in + tokens_out).desc(), users.c.username_folded)
        )
        async with self._transaction("summing usage per account") as conn:
            rows = (await conn.execute(query)).all()
        return [AccountUsage(row[0], row[1], _totals(None, row[2:])) for row in rows]
