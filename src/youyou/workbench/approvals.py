"""Tool approvals in the workbench: the index of what waits, decisions from any process.

The kernel records each request and decision in the session's ledger; the process running the
turn mirrors them into ``wb_tool_approvals`` (``observe``) before the client sees the frame,
so listing what waits never resumes a ledger. A decision sent to any process is claimed in
that table first (the first claim wins); the process running the turn hands claimed decisions
to its kernel (the hub's applier, at once for its own requests and every ``APPLY_POLL_S`` for
those of other processes), and the claimant waits until the kernel has it (``confirmed``): a
decision that lost to the timeout is a 409, not a 200.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from youyou.api.session import SessionHandle
from youyou.domain.approvals import ApprovalDecision, find_decision
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.events import ToolApprovalDecided, ToolApprovalRequested, ToolCallEnd
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.metrics import Metrics
from youyou.workbench.schemas import ApprovalOut, PendingApprovalOut
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.approvals import ApprovalRecord, ApprovalRequest, Decision

logger = logging.getLogger(__name__)

# How often a process running a waiting turn looks for decisions sent to other processes.
APPLY_POLL_S = 0.1
# How often a claimant looks whether the process running the turn has applied its decision,
# and for how long before it answers with the claim alone (the decision stands: it is applied
# when that process, or the one continuing the turn, next looks).
CONFIRM_POLL_S = 0.05
CONFIRM_WAIT_S = 10.0


@dataclass(slots=True)
class TurnApprovals:
    """The approvals of one turn running in this process."""

    waiting: set[str] = field(default_factory=set)  # call ids without a decision in the kernel
    asked: dict[str, datetime] = field(default_factory=dict)  # call id → requested at


def pending_out(record: ApprovalRecord) -> PendingApprovalOut:
    return PendingApprovalOut(
        call_id=record.call_id,
        tool_name=record.tool_name,
        arguments=record.argument_values,
        server_id=record.server_id,
        requested_at=record.requested_at,
        expires_at=record.expires_at,
    )


def decision_out(record: ApprovalRecord) -> ApprovalOut:
    assert record.decision is not None and record.decided_by is not None
    assert record.decided_at is not None
    return ApprovalOut.model_validate(
        {
            "call_id": record.call_id,
            "tool_name": record.tool_name,
            "decision": record.decision,
            "decided_by": record.decided_by,
            "decided_at": record.decided_at,
            "reason": record.reason,
            "remember": record.remember,
        }
    )


class ApprovalDesk:
    def __init__(self, store: WorkbenchStore, metrics: Metrics) -> None:
        self._store = store
        self._metrics = metrics

    async def observe(
        self,
        chat_id: str,
        turn: TurnApprovals,
        payload: ToolApprovalRequested | ToolApprovalDecided | ToolCallEnd,
    ) -> None:
        """Mirror a kernel event of the turn into the index (before its frame is sent)."""
        if isinstance(payload, ToolApprovalRequested):
            turn.waiting.add(payload.call_id)
            turn.asked[payload.call_id] = payload.requested_at
            request = ApprovalRequest(
                payload.call_id,
                payload.tool_name,
                payload.arguments,
                payload.server_id,
                payload.requested_at,
                payload.expires_at,
            )
            await self._store.record_request(chat_id, request)
        elif isinstance(payload, ToolApprovalDecided):
            turn.waiting.discard(payload.call_id)
            await self.record(chat_id, payload, turn.asked.get(payload.call_id))
        elif payload.call_id in turn.asked:
            await self._store.settle_approvals(chat_id, payload.call_id)

    async def record(
        self, chat_id: str, decided: ApprovalDecision, requested_at: datetime | None = None
    ) -> None:
        """A decision the kernel took (in a turn, or recorded while none ran), counted."""
        decision = Decision(
            decided.decision,
            decided.decided_by,
            decided.decided_at,
            decided.reason,
            decided.remember,
        )
        await self._store.record_decision(chat_id, decided.call_id, decision)
        self._metrics.approvals.labels(decision=decided.decision).inc()
        if requested_at is None:  # asked before this process took the turn over
            found = await self._store.approval(chat_id, decided.call_id)
            requested_at = found.requested_at if found else decided.decided_at
        waited = (decided.decided_at - requested_at).total_seconds()
        self._metrics.approval_wait.observe(max(waited, 0.0))

    async def apply_claimed(self, turns: Mapping[str, tuple[SessionHandle, TurnApprovals]]) -> None:
        """Hand the decisions claimed for these running turns to their kernel, each once; one
        that lost to the timeout or a cancel is dropped (the kernel's own decision is
        recorded by the turn)."""
        if not turns:
            return
        try:
            claimed = await self._store.decisions_to_apply(list(turns))
        except AgentError:
            logger.warning("reading approval decisions failed", exc_info=True)
            return
        for row in claimed:
            handle, turn = turns[row.chat_session_id]
            if row.call_id not in turn.waiting:
                continue
            turn.waiting.discard(row.call_id)  # applied once, whatever comes of it
            try:
                await _decide(handle, row)
            except AgentError as err:
                logger.info("approval of %s not applied: %s", row.call_id, err)

    async def record_claims(self, chat_id: str, handle: SessionHandle) -> None:
        """Decisions claimed while no process ran the session's stopped turn, into its
        ledger. A call the ledger has decided already (the process died before the index
        had it) takes the ledger's decision; an expired one is left to the turn's
        continuation, which writes the timeout's denial."""
        for row in await self._store.decisions_to_apply([chat_id]):
            try:
                decided = await _decide(handle, row)
            except AgentError as err:
                if err.code not in (
                    ErrorCode.APPROVAL_ALREADY_DECIDED,
                    ErrorCode.APPROVAL_NOT_FOUND,
                ):
                    raise
                found = find_decision(handle.events, row.call_id)
                if found is not None:
                    await self.record(chat_id, found)
                continue
            await self.record(chat_id, decided)

    async def turn_ended(self, chat_id: str, turn: TurnApprovals) -> None:
        """Whatever still waited was answered by the turn's end (a cancel)."""
        if turn.asked:
            try:
                await self._store.settle_approvals(chat_id)
            except AgentError:
                logger.warning("settling the approvals of %s failed", chat_id, exc_info=True)

    async def claim(self, chat_id: str, call_id: str, decision: Decision) -> None:
        claim = await self._store.claim_decision(chat_id, call_id, decision)
        if claim.value == "not_found":
            raise ApiError(ApiCode.APPROVAL_NOT_FOUND)
        if claim.value == "decided":
            raise ApiError(ApiCode.APPROVAL_ALREADY_DECIDED)

    async def confirmed(self, chat_id: str, call_id: str, claimed: Decision) -> ApprovalOut:
        """The decision once the turn's kernel has it; 409 if the kernel had another one (the
        timeout came first) or the turn ended before it got there."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CONFIRM_WAIT_S
        while True:
            record = await self._store.approval(chat_id, call_id)
            if record is None:
                raise ApiError(ApiCode.APPROVAL_NOT_FOUND)
            if record.applied or record.settled or loop.time() >= deadline:
                break
            await asyncio.sleep(CONFIRM_POLL_S)
        ours = (record.decision, record.decided_by, record.reason, record.remember) == (
            claimed.decision,
            claimed.decided_by,
            claimed.reason,
            claimed.remember,
        )
        if not ours or (record.settled and not record.applied):
            raise ApiError(ApiCode.APPROVAL_ALREADY_DECIDED)
        return decision_out(record)

    async def pending(self, chat_ids: Sequence[str]) -> dict[str, list[PendingApprovalOut]]:
        """What waits for a decision in these sessions; a request past its deadline counts as
        denied already (the turn's process, or the one continuing it, writes so)."""
        found = await self._store.pending_approvals(chat_ids)
        at = datetime.now(UTC)
        return {
            chat_id: [pending_out(r) for r in records if r.expires_at is None or r.expires_at > at]
            for chat_id, records in found.items()
        }


async def _decide(handle: SessionHandle, row: ApprovalRecord) -> ApprovalDecision:
    """A claimed decision to the session's kernel."""
    assert row.decision is not None and row.decided_by is not None
    return await handle.decide_approval(
        row.call_id,
        row.decision,  # type: ignore[arg-type]  # approve | deny, as the route validated
        decided_by=row.decided_by,
        reason=row.reason,
        remember=row.remember,  # type: ignore[arg-type]
    )
