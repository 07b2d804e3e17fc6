"""Waiting for a person's decision inside a running turn (see docs/approvals.md).

``ApprovalWaits`` belongs to a session runtime: the calls its running turn waits for in this
process, each settled once, by a person (``SessionHandle.decide_approval``), by the timeout or
by a cancel. ``ApprovalGate`` is what a tool batch needs: the policy rule and the waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from youyou.domain.approvals import (
    TIMEOUT_DECIDER,
    TIMEOUT_REASON,
    ApprovalDecision,
    PendingApproval,
    approval_reason,
)
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.hooks import AskApproval, SkipApproval
from youyou.domain.tool import ToolDescriptor


@dataclass(slots=True)
class ApprovalWait:
    """One call the running turn waits for."""

    request: PendingApproval
    # The decision, or None for a cancel; set once, by whoever comes first.
    settled: asyncio.Future[ApprovalDecision | None]
    # Set when the decision is in the ledger (or failed to get there).
    recorded: asyncio.Future[None]


class ApprovalWaits:
    """The calls the running turn waits for; an entry lives until the call has its result."""

    def __init__(self) -> None:
        self._waits: dict[str, ApprovalWait] = {}

    def open(self, request: PendingApproval) -> ApprovalWait:
        loop = asyncio.get_running_loop()
        wait = ApprovalWait(request, loop.create_future(), loop.create_future())
        self._waits[request.call_id] = wait
        return wait

    def get(self, call_id: str) -> ApprovalWait | None:
        return self._waits.get(call_id)

    def settled(self, call_id: str) -> bool:
        wait = self._waits.get(call_id)
        return wait is not None and wait.settled.done()

    def close(self, call_id: str) -> None:
        """The call has its result, or its turn ended: a decision still waiting to be
        recorded (the turn failed first) gets the error instead of waiting forever."""
        wait = self._waits.pop(call_id, None)
        if wait is None or wait.recorded.done():
            return
        if not wait.settled.done() or wait.settled.result() is None:
            wait.recorded.cancel()  # nobody waits for it
        else:
            wait.recorded.set_exception(
                AgentError(
                    ErrorCode.APPROVAL_ALREADY_DECIDED,
                    f"the turn of call {call_id} ended before the decision was recorded",
                    source=ErrorSource.TOOL_DISPATCHER,
                )
            )


def settle(wait: ApprovalWait, value: ApprovalDecision | None) -> bool:
    """Decide a waiting call; False if it was already decided (or cancelled)."""
    if wait.settled.done():
        return False
    wait.settled.set_result(value)
    return True


@dataclass(slots=True)
class ApprovalGate:
    """The approval side of one tool batch: which calls ask, and waiting for their decision.

    ``approved_tools`` is the session's set of tools approved for the rest of the session
    (shared: a decision with ``remember`` adds to it)."""

    waits: ApprovalWaits
    timeout_s: float
    clock: Callable[[], datetime]
    approved_tools: set[str] = field(default_factory=set)

    def reason(
        self, descriptor: ToolDescriptor, verdict: AskApproval | SkipApproval | None
    ) -> str | None:
        """Why this call must wait for a person, or None: a hook's ``AskApproval`` always asks,
        its ``SkipApproval`` never does; otherwise the tool's policy, unless a person approved
        the tool for the rest of the session."""
        if isinstance(verdict, AskApproval):
            return verdict.reason
        if isinstance(verdict, SkipApproval) or descriptor.name in self.approved_tools:
            return None
        return approval_reason(descriptor.approval, descriptor.mutating)

    def request(
        self, call_id: str, descriptor: ToolDescriptor, arguments: dict[str, object], reason: str
    ) -> PendingApproval:
        now = self.clock()
        expires = now + timedelta(seconds=self.timeout_s) if self.timeout_s > 0 else None
        return PendingApproval(
            call_id=call_id,
            tool_name=descriptor.name,
            arguments=arguments,
            server_id=descriptor.server_id,
            reason=reason,
            requested_at=now,
            expires_at=expires,
        )

    async def wait(self, wait: ApprovalWait, cancel: CancellationToken) -> ApprovalDecision | None:
        """The decision for ``wait``'s call: a person's, the timeout's denial, or None when the
        turn is cancelled first."""
        unsubscribe = cancel.on_cancel(lambda: settle(wait, None))
        try:
            expires = wait.request.expires_at
            timeout = None if expires is None else (expires - self.clock()).total_seconds()
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(wait.settled)
            except TimeoutError:
                settle(wait, self.timed_out(wait.request))
            return wait.settled.result()
        finally:
            unsubscribe()

    def timed_out(self, request: PendingApproval) -> ApprovalDecision:
        return ApprovalDecision(
            call_id=request.call_id,
            tool_name=request.tool_name,
            decision="deny",
            decided_by=TIMEOUT_DECIDER,
            decided_at=self.clock(),
            reason=TIMEOUT_REASON,
        )
