"""Human approval of tool calls: the policy rule and the ledger's record of requests and
decisions (see docs/approvals.md).

A call that needs approval is recorded (``tool_call``), then its request
(``tool_approval_requested``); the decision (``tool_approval_decided``) and the result follow.
Everything a session knows about its approvals (what waits, what was decided, which tools were
approved for the rest of the session) is read back from these events, so a resumed session
equals the live one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
from youyou.domain.ledger_metadata import Record, read_metadata
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


def _origin_index(events: Sequence[LedgerEvent]) -> int:
    """Index of the last user message, -1 if there is none (searched from the end)."""
    for index in range(len(events) - 1, -1, -1):
        if type(events[index].payload) is UserMessage:
            return index
    return -1


def _last_turn(events: Sequence[LedgerEvent]) -> Sequence[LedgerEvent]:
    """The events since the last user message (open calls can only belong to it)."""
    return events[_origin_index(events) + 1 :]


def turn_origin(events: Sequence[LedgerEvent]) -> LedgerEvent | None:
    """The last user message: the turn a stopped one continues from."""
    index = _origin_index(events)
    return events[index] if index >= 0 else None


def _records(events: Iterable[LedgerEvent], key: str, model: type[Record]) -> Iterator[Record]:
    """The typed values of the metadata events with ``key``, in order."""
    for event in events:
        payload = event.payload
        if type(payload) is Metadata and payload.key == key:
            record = read_metadata(event, model)
            assert record is not None
            yield record


def open_approvals(events: Sequence[LedgerEvent]) -> tuple[OpenApproval, ...]:
    """The last turn's calls that asked for approval and have no result, in request order."""
    turn = _last_turn(events)
    calls: dict[str, ToolCall] = {}
    answered: set[str] = set()
    for event in turn:
        payload = event.payload
        if type(payload) is ToolCall:
            calls[payload.call.call_id] = payload
        elif type(payload) is ToolResult:
            answered.add(payload.result.call_id)
    requests = {r.call_id: r for r in _records(turn, META_APPROVAL_REQUESTED, PendingApproval)}
    decisions = {d.call_id: d for d in _records(turn, META_APPROVAL_DECIDED, ApprovalDecision)}
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
        r.call_id for r in _records(_last_turn(events), META_APPROVAL_REQUESTED, PendingApproval)
    }


def find_decision(events: Iterable[LedgerEvent], call_id: str) -> ApprovalDecision | None:
    for decision in _records(events, META_APPROVAL_DECIDED, ApprovalDecision):
        if decision.call_id == call_id:
            return decision
    return None


def was_requested(events: Iterable[LedgerEvent], call_id: str) -> bool:
    return any(
        r.call_id == call_id for r in _records(events, META_APPROVAL_REQUESTED, PendingApproval)
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
            remembered = read_metadata(event, RememberedTools)
            assert remembered is not None
            tools.update(remembered.tools)
        elif payload.key == META_APPROVAL_DECIDED:
            decision = read_metadata(event, ApprovalDecision)
            assert decision is not None
            if decision.decision == "approve" and decision.remember == "session":
                tools.add(decision.tool_name)
    return tools
