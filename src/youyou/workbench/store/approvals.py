"""Tool calls that wait for a person's decision (``wb_tool_approvals``).

The process running a turn records each request as the kernel asks for it and each decision
as the kernel takes it (``record_request``, ``record_decision``). A decision sent to any
process is first *claimed* here (``claim_decision``): the first claim wins, so two people
deciding at once, or a decision racing the timeout, get one answer and a 409 for the other.
The process running the turn hands claimed decisions to the kernel (``decisions_to_apply``)
and marks them applied. A row is *settled* once the turn went past its call or ended, so
what is left unsettled belongs to a turn that still has to go on (a process died under it).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import and_, or_, select, update

from youyou.workbench.store.base import StoreBase, columns_of
from youyou.workbench.store.tables import tool_approvals


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    chat_session_id: str
    call_id: str
    tool_name: str
    arguments: str  # JSON
    server_id: str | None
    requested_at: datetime
    expires_at: datetime | None
    decision: str | None
    decided_by: str | None
    decided_at: datetime | None
    reason: str | None
    remember: str | None
    applied: bool
    settled: bool

    @property
    def argument_values(self) -> dict[str, Any]:
        loaded = json.loads(self.arguments)
        return loaded if isinstance(loaded, dict) else {}


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    server_id: str | None
    requested_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class Decision:
    decision: str
    decided_by: str
    decided_at: datetime
    reason: str | None = None
    remember: str | None = None


class Claim(Enum):
    CLAIMED = "claimed"
    NOT_FOUND = "not_found"
    DECIDED = "decided"


_APPROVAL = columns_of(tool_approvals, ApprovalRecord)
_KEY = (tool_approvals.c.chat_session_id, tool_approvals.c.call_id)


def _row(chat_session_id: str, call_id: str) -> Any:
    return and_(_KEY[0] == chat_session_id, _KEY[1] == call_id)


class ApprovalQueries(StoreBase):
    async def record_request(self, chat_session_id: str, request: ApprovalRequest) -> None:
        """A call now waits; a row of an earlier turn with the same call id is replaced."""
        values = {
            "chat_session_id": chat_session_id,
            "call_id": request.call_id,
            "tool_name": request.tool_name,
            "arguments": json.dumps(request.arguments, ensure_ascii=False),
            "server_id": request.server_id,
            "requested_at": request.requested_at,
            "expires_at": request.expires_at,
            "decision": None,
            "decided_by": None,
            "decided_at": None,
            "reason": None,
            "remember": None,
            "applied": False,
            "settled": False,
        }
        stmt = self._insert(tool_approvals).values(values)
        stmt = stmt.on_conflict_do_update(
            index_elements=list(_KEY),
            set_={name: stmt.excluded[name] for name in values if name not in _KEY_NAMES},
        )
        async with self._transaction("recording an approval request", write=True) as conn:
            await conn.execute(stmt)

    async def claim_decision(self, chat_session_id: str, call_id: str, decision: Decision) -> Claim:
        """The first decision of a waiting call, unless its time ran out; the later ones (and
        any for a call that no longer waits) are ``DECIDED``."""
        stmt = (
            update(tool_approvals)
            .where(
                _row(chat_session_id, call_id),
                tool_approvals.c.decision.is_(None),
                tool_approvals.c.settled.is_(False),
                or_(
                    tool_approvals.c.expires_at.is_(None),
                    tool_approvals.c.expires_at > decision.decided_at,
                ),
            )
            .values(**_decision_values(decision))
        )
        async with self._transaction("claiming an approval decision", write=True) as conn:
            if (await conn.execute(stmt)).rowcount == 1:
                return Claim.CLAIMED
            found = await conn.execute(select(_KEY[1]).where(_row(chat_session_id, call_id)))
            return Claim.NOT_FOUND if found.first() is None else Claim.DECIDED

    async def record_decision(self, chat_session_id: str, call_id: str, decision: Decision) -> None:
        """What the kernel decided (a person, the timeout): it stands over any claim."""
        stmt = (
            update(tool_approvals)
            .where(_row(chat_session_id, call_id))
            .values(**_decision_values(decision), applied=True)
        )
        async with self._transaction("recording an approval decision", write=True) as conn:
            await conn.execute(stmt)

    async def approval(self, chat_session_id: str, call_id: str) -> ApprovalRecord | None:
        query = select(*_APPROVAL).where(_row(chat_session_id, call_id))
        async with self._transaction("loading an approval") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else ApprovalRecord(*row)

    async def pending_approvals(
        self, chat_session_ids: Collection[str]
    ) -> dict[str, list[ApprovalRecord]]:
        """The calls of these sessions that wait for a decision, oldest first."""
        if not chat_session_ids:
            return {}
        query = (
            select(*_APPROVAL)
            .where(
                tool_approvals.c.settled.is_(False),
                tool_approvals.c.decision.is_(None),
                _KEY[0].in_(list(chat_session_ids)),
            )
            .order_by(tool_approvals.c.requested_at, _KEY[1])
        )
        found: dict[str, list[ApprovalRecord]] = {}
        async with self._transaction("listing pending approvals") as conn:
            for row in await conn.execute(query):
                record = ApprovalRecord(*row)
                found.setdefault(record.chat_session_id, []).append(record)
        return found

    async def decisions_to_apply(self, chat_session_ids: Collection[str]) -> list[ApprovalRecord]:
        """Decisions claimed for these sessions that their turn's kernel does not have yet."""
        if not chat_session_ids:
            return []
        query = select(*_APPROVAL).where(
            tool_approvals.c.settled.is_(False),
            tool_approvals.c.applied.is_(False),
            tool_approvals.c.decision.is_not(None),
            _KEY[0].in_(list(chat_session_ids)),
        )
        async with self._transaction("reading decisions to apply") as conn:
            return [ApprovalRecord(*row) for row in await conn.execute(query)]

    async def settle_approvals(self, chat_session_id: str, call_id: str | None = None) -> None:
        """One call of the session went past its approval; without ``call_id``, all of them
        (the turn ended)."""
        where = _KEY[0] == chat_session_id
        if call_id is not None:
            where = _row(chat_session_id, call_id)
        stmt = update(tool_approvals).where(where).values(settled=True)
        async with self._transaction("settling approvals", write=True) as conn:
            await conn.execute(stmt)

    async def unsettled_sessions(self, among: Collection[str] | None = None) -> set[str]:
        """Sessions (of ``among``, if given) whose turn still has a call waiting for, or going
        on after, a decision."""
        query = select(_KEY[0]).where(tool_approvals.c.settled.is_(False)).distinct()
        if among is not None:
            query = query.where(_KEY[0].in_(list(among)))
        async with self._transaction("finding turns that wait for approvals") as conn:
            return set((await conn.execute(query)).scalars())


_KEY_NAMES = frozenset(column.name for column in _KEY)


def _decision_values(decision: Decision) -> dict[str, Any]:
    return {
        "decision": decision.decision,
        "decided_by": decision.decided_by,
        "decided_at": decision.decided_at,
        "reason": decision.reason,
        "remember": decision.remember,
    }
