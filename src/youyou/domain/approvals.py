"""Human approval of tool calls: the policy rule and the ledger's record of requests and
decisions (see docs/approvals.md).

A call that needs approval is recorded (``tool_call``), then its request
(``tool_approval_requested``); the decision (``tool_approval_decided``) and the result follow.
Everything a session knows about its approvals (what waits, what was decided, which tools were
approved for the rest of the session) is read back from these events, so a resumed session
equals the live one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from youyou.domain.ledger import (
    LedgerEvent,
    Metadata,
    ToolCall,
    ToolOutput,
    ToolResult,
    UserMessage,
)
from youyou.domain.synthetic_results import SyntheticReason, synthetic_output

ApprovalPolicy = Literal["never", "always", "mutating"]
Decision = Literal["approve", "deny"]
Remember = Literal["session"]

META_APPROVAL_REQUESTED = "tool_approval_requested"
META_APPROVAL_DECIDED = "tool_approval_decided"
META_APPROVALS_REMEMBERED = "tool_approvals_remembered"

TIMEOUT_DECIDER = "timeout"
TIMEOUT_REASON = "no decision in time"
POLICY_ALWAYS_REASON = "this tool always asks for approval"
POLICY_MUTATING_REASON = "this tool may change something"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PendingApproval(_Frozen):
    """A call waiting for a person (the value of a ``tool_approval_requested`` event).

    ``arguments`` are the ones the tool will receive; ``expires_at`` is None when the agent
    waits without limit (``approval_timeout_s = 0``)."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    server_id: str | None = None
    reason: str
    requested_at: datetime
    expires_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class ApprovalDecision(_Frozen):
    """What was decided for a call (the value of a ``tool_approval_decided`` event).

    ``remember="session"`` (approvals only) approves ``tool_name`` for the rest of the session.
    A timeout is a denial decided by ``TIMEOUT_DECIDER`` with ``TIMEOUT_REASON``."""

    call_id: str
    tool_name: str
    decision: Decision
    decided_by: str
    decided_at: datetime
    reason: str | None = None
    remember: Remember | None = None


class RememberedTools(_Frozen):
    """``tool_approvals_remembered``: every tool approved for the rest of the session so far,
    written again after a compaction so a resume that starts there still knows them."""

    tools: tuple[str, ...]


def approval_reason(policy: ApprovalPolicy, mutating: bool) -> str | None:
    """Why a call of a tool with ``policy`` must be approved, or None if it may run."""
    if policy == "always":
        return POLICY_ALWAYS_REASON
    if policy == "mutating" and mutating:
        return POLICY_MUTATING_REASON
    return None


def denied_output(decision: ApprovalDecision) -> ToolOutput:
    """The result the model reads for a denied call, with the reason, so it can explain or
    propose something else."""
    if decision.decided_by == TIMEOUT_DECIDER:
        text = f"[tool call not run: the user did not approve it ({TIMEOUT_REASON})]"
    elif decision.reason:
        text = f"[tool call not run: the user denied it: {decision.reason}]"
    else:
        text = "[tool call not run: the user denied it]"
    return synthetic_output(SyntheticReason.APPROVAL_DENIED, text)


@dataclass(frozen=True, slots=True)
class OpenApproval:
    """A call of the last turn that asked for approval and has no result yet."""

    call: ToolCall
    request: PendingApproval
    decision: ApprovalDecision | None


def _last_turn(events: Sequence[LedgerEvent]) -> Sequence[LedgerEvent]:
    """The events since the last user message (open calls can only belong to it)."""
    for index in range(len(events) - 1, -1, -1):
        if type(events[index].payload) is UserMessage:
            return events[index + 1 :]
    return events


def turn_origin(events: Sequence[LedgerEvent]) -> LedgerEvent | None:
    """The last user message: the turn a stopped one continues from."""
    for index in range(len(events) - 1, -1, -1):
        if type(events[index].payload) is UserMessage:
            return events[index]
    return None


def open_approvals(events: Sequence[LedgerEvent]) -> tuple[OpenApproval, ...]:
    """The last turn's calls that asked for approval and have no result, in request order."""
    calls: dict[str, ToolCall] = {}
    requests: dict[str, PendingApproval] = {}
    decisions: dict[str, ApprovalDecision] = {}
    answered: set[str] = set()
    for event in _last_turn(events):
        payload = event.payload
        if type(payload) is ToolCall:
            calls[payload.call.call_id] = payload
        elif type(payload) is ToolResult:
            answered.add(payload.result.call_id)
        elif type(payload) is Metadata and payload.key == META_APPROVAL_REQUESTED:
            request = PendingApproval.model_validate(payload.value)
            requests[request.call_id] = request
        elif type(payload) is Metadata and payload.key == META_APPROVAL_DECIDED:
            decision = ApprovalDecision.model_validate(payload.value)
            decisions[decision.call_id] = decision
    return tuple(
        OpenApproval(calls[call_id], request, decisions.get(call_id))
        for call_id, request in requests.items()
        if call_id not in answered and call_id in calls
    )


def waiting(opened: Iterable[OpenApproval], now: datetime) -> tuple[PendingApproval, ...]:
    """Requests still waiting for a person: undecided and not expired."""
    return tuple(o.request for o in opened if o.decision is None and not o.request.expired(now))


def asked_in_last_turn(events: Sequence[LedgerEvent]) -> set[str]:
    """Call ids of the last turn that asked for approval: a restart must not answer them as
    interrupted, since a person's decision still decides them."""
    return {
        str(payload.value["call_id"])
        for event in _last_turn(events)
        if type(payload := event.payload) is Metadata and payload.key == META_APPROVAL_REQUESTED
    }


def find_decision(events: Iterable[LedgerEvent], call_id: str) -> ApprovalDecision | None:
    for event in events:
        payload = event.payload
        if (
            type(payload) is Metadata
            and payload.key == META_APPROVAL_DECIDED
            and payload.value.get("call_id") == call_id
        ):
            return ApprovalDecision.model_validate(payload.value)
    return None


def was_requested(events: Iterable[LedgerEvent], call_id: str) -> bool:
    return any(
        type(payload := event.payload) is Metadata
        and payload.key == META_APPROVAL_REQUESTED
        and payload.value.get("call_id") == call_id
        for event in events
    )


def remembered_tools(events: Iterable[LedgerEvent]) -> set[str]:
    """Tools approved for the rest of the session, from the decisions and the record written
    after each compaction (the loaded suffix of a session is enough)."""
    tools: set[str] = set()
    for event in events:
        payload = event.payload
        if type(payload) is not Metadata:
            continue
        if payload.key == META_APPROVALS_REMEMBERED:
            tools.update(RememberedTools.model_validate(payload.value).tools)
        elif payload.key == META_APPROVAL_DECIDED:
            decision = ApprovalDecision.model_validate(payload.value)
            if decision.decision == "approve" and decision.remember == "session":
                tools.add(decision.tool_name)
    return tools
