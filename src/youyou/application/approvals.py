"""Approval use cases of a session: what waits, deciding, whether a stopped turn may go on
(see docs/approvals.md)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from youyou.application.approval_gate import settle
from youyou.application.session_runtime import SessionRuntime
from youyou.application.session_service import SessionService
from youyou.application.tool_dispatcher import CANCELLED_OUTPUT
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    ApprovalDecision,
    Decision,
    PendingApproval,
    Remember,
    find_decision,
    open_approvals,
    waiting,
    was_requested,
)
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import ToolResult, ToolResultRecord
from youyou.domain.ledger_metadata import metadata_event


def _error(code: ErrorCode, message: str) -> AgentError:
    return AgentError(code, message, source=ErrorSource.SESSION_SERVICE)


def pending_approvals(runtime: SessionRuntime, now: datetime) -> tuple[PendingApproval, ...]:
    """Requests of the session's last turn still waiting for a person, in call order."""
    return tuple(
        request
        for request in waiting(open_approvals(runtime.events), now)
        if not runtime.approval_waits.settled(request.call_id)
        and request.call_id not in runtime.deciding
    )


def can_continue(runtime: SessionRuntime, now: datetime) -> bool:
    """A turn stopped while calls waited for approval, and none waits any more."""
    if runtime.is_running:
        return False
    opened = open_approvals(runtime.events)
    return bool(opened) and not waiting(opened, now)


def _already_decided(runtime: SessionRuntime, call_id: str) -> AgentError:
    decision = find_decision(runtime.events, call_id)
    if decision is not None:
        by = f"{decision.decision} by {decision.decided_by}"
        return _error(ErrorCode.APPROVAL_ALREADY_DECIDED, f"call {call_id} was decided ({by})")
    return _error(ErrorCode.APPROVAL_ALREADY_DECIDED, f"call {call_id} no longer waits")


async def decide(
    runtime: SessionRuntime,
    sessions: SessionService,
    now: datetime,
    call_id: str,
    decision: Decision,
    *,
    decided_by: str,
    reason: str | None,
    remember: Remember | None,
) -> ApprovalDecision:
    """Decide a waiting call. While its turn runs here, the turn records the decision and goes
    on; with no turn running (the process that ran it stopped), the decision is recorded and
    ``continue_turn`` goes on later. Returns once the decision is in the ledger."""
    if decision not in ("approve", "deny"):
        raise _error(ErrorCode.INPUT_VALIDATION, f"decision must be approve or deny: {decision!r}")
    if remember is not None and (remember != "session" or decision != "approve"):
        raise _error(ErrorCode.INPUT_VALIDATION, "remember='session' goes with an approval only")
    sessions.require_usable(runtime)

    def made(tool_name: str) -> ApprovalDecision:
        return ApprovalDecision(
            call_id=call_id,
            tool_name=tool_name,
            decision=decision,
            decided_by=decided_by,
            decided_at=now,
            reason=reason,
            remember=remember,
        )

    wait = runtime.approval_waits.get(call_id)
    if wait is not None:  # its turn runs here: the turn records it and goes on
        decided = made(wait.request.tool_name)
        if not settle(wait, decided):
            raise _already_decided(runtime, call_id)
        await asyncio.shield(wait.recorded)
        return decided
    if call_id in runtime.deciding:
        raise _already_decided(runtime, call_id)
    if runtime.is_running:
        _check_waits(runtime, call_id, now)
        raise _error(ErrorCode.TURN_BUSY, f"session {runtime.session_id} is running a turn")
    runtime.deciding.add(call_id)
    try:
        async with sessions.writing(runtime):  # may reload what another process appended
            decided = made(_check_waits(runtime, call_id, now).tool_name)
            await sessions.record(runtime, metadata_event(META_APPROVAL_DECIDED, decided))
    finally:
        runtime.deciding.discard(call_id)
    if decided.decision == "approve" and decided.remember == "session":
        runtime.approved_tools.add(decided.tool_name)
    return decided


async def cancel_stopped(runtime: SessionRuntime, sessions: SessionService) -> tuple[str, ...]:
    """End a turn that stopped (its process died, or the session was closed) while calls
    waited for approval, as a cancel of the running turn would have: every call of it without
    a result, decided or not, gets the cancelled result and no decision is recorded. Returns
    the call ids answered, () when no stopped turn waits."""
    sessions.require_usable(runtime)
    if runtime.is_running or runtime.deciding:
        raise _error(ErrorCode.TURN_BUSY, f"session {runtime.session_id} is running a turn")
    if not open_approvals(runtime.events):
        return ()
    async with sessions.writing(runtime):  # may reload what another process appended
        opened = open_approvals(runtime.events)
        answering = {item.request.call_id for item in opened}
        runtime.deciding.update(answering)  # a decision arriving meanwhile is too late
        try:
            for item in opened:
                call = item.call.call
                record = ToolResultRecord(
                    call_id=call.call_id, tool_name=call.tool_name, output=CANCELLED_OUTPUT
                )
                await sessions.record(runtime, ToolResult(result=record))
        finally:
            runtime.deciding.difference_update(answering)
    return tuple(item.request.call_id for item in opened)


def _check_waits(runtime: SessionRuntime, call_id: str, now: datetime) -> PendingApproval:
    """The request of ``call_id`` if it still waits for a person; otherwise the error why not."""
    for request in waiting(open_approvals(runtime.events), now):
        if request.call_id == call_id:
            return request
    if was_requested(runtime.events, call_id):
        raise _already_decided(runtime, call_id)
    raise _error(ErrorCode.APPROVAL_NOT_FOUND, f"no approval was asked for call {call_id}")
