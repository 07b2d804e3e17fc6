"""Tool approvals through the real server (SQLite and PostgreSQL), the real MCP server
``mcp-server-time`` with ``approval = "always"`` and the fake OpenAI model: the waiting turn,
deciding over HTTP, the refusals, the timeout, cancel while waiting, the audit and metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from approval_kit import ASK, DENIED, TOOL, asks_for_the_time, decide, time_server, waiting_turn
from fakes.openai_server import FakeOpenAIServer
from server_kit import Api, StreamingSend, Workbench, try_send

Start = Callable[..., Workbench]


@pytest.fixture
def asking(fake_model: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_model.default = asks_for_the_time
    return fake_model


def session(api: Api, session_id: str) -> dict[str, Any]:
    found: dict[str, Any] = api.data("GET", f"/chat/sessions/{session_id}")
    return found


def tool_messages(model: FakeOpenAIServer) -> list[str]:
    """What the model read as tool results, over all its requests."""
    return [
        m["content"]
        for request in model.requests
        for m in request.json["messages"]
        if m["role"] == "tool"
    ]


def metric(wb: Workbench, name: str) -> float:
    text = Api(wb.url).http.get("/metrics").text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_an_approved_call_runs_and_the_turn_goes_on(start_workbench: Start, asking: Any) -> None:
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    assert asked["toolName"] == TOOL and asked["serverId"] == "time"
    assert asked["arguments"] == {"timezone": "Asia/Tokyo"} and asked["reason"]
    call_id = asked["callId"]

    shown = session(alice, sid)
    assert shown["running"] is True and shown["awaitingApproval"] is True
    (pending,) = shown["pendingApprovals"]
    assert (pending["callId"], pending["toolName"], pending["arguments"]) == (
        call_id,
        TOOL,
        {"timezone": "Asia/Tokyo"},
    )
    assert pending["requestedAt"] and pending["expiresAt"]
    listed = alice.data("GET", "/chat/sessions")["items"]
    assert [s["awaitingApproval"] for s in listed] == [True]
    status, _, code = try_send(alice, sid, "another question")
    assert (status, code) == (409, "TURN_BUSY")

    decided = decide(alice, sid, call_id, decision="approve")
    assert decided["callId"] == call_id and decided["decision"] == "approve"
    assert decided["decidedBy"] == "alice" and decided["decidedAt"]
    frames = turn.join(60)
    events = [f.event for f in frames]
    assert events.index("tool_approval_requested") < events.index("tool_approval_decided")
    assert events.index("tool_approval_decided") < events.index("tool_call_end")
    assert events[-1] == "turn_complete"
    (end,) = [f.data for f in frames if f.event == "tool_call_end"]
    assert end["isError"] is False and json.loads(end["output"])["timezone"] == "Asia/Tokyo"
    assert "Asia/Tokyo" in turn.text()  # the model read the tool's answer

    again = decide(alice, sid, call_id, 409, decision="deny")
    assert again["code"] == "APPROVAL_ALREADY_DECIDED"
    shown = session(alice, sid)
    assert shown["pendingApprovals"] == [] and shown["awaitingApproval"] is False
    again_asked = StreamingSend(alice, sid, ASK)  # without ``remember`` the next call asks
    again_asked.wait_for("tool_approval_requested", 60)
    alice.data("POST", f"/chat/sessions/{sid}/cancel")
    again_asked.join(60)


def test_a_denied_call_gives_the_model_the_denial_and_its_reason(
    start_workbench: Start, asking: FakeOpenAIServer
) -> None:
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    decided = decide(alice, sid, asked["callId"], decision="deny", reason="not during the freeze")
    assert decided["decision"] == "deny" and decided["reason"] == "not during the freeze"
    frames = turn.join(60)
    assert frames[-1].event == "turn_complete"
    (result,) = tool_messages(asking)
    assert DENIED in result and "not during the freeze" in result
    assert "not during the freeze" in turn.text()


def test_remember_approves_the_tool_for_the_rest_of_the_session(
    start_workbench: Start, asking: FakeOpenAIServer
) -> None:
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    decide(alice, sid, asked["callId"], decision="approve", remember="session")
    assert turn.join(60)[-1].event == "turn_complete"
    second = [f.event for f in alice.send(sid, ASK)]
    assert "tool_approval_requested" not in second and "tool_call_end" in second
    other = alice.new_session()["id"]  # another session asks again
    turn, _ = waiting_turn(alice, other)
    alice.data("POST", f"/chat/sessions/{other}/cancel")
    turn.join(60)


def test_refusals_403_404_409_422(start_workbench: Start, asking: Any) -> None:
    wb = start_workbench(extra=time_server())
    alice, mallory = wb.user("alice"), wb.user("mallory")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    call_id = asked["callId"]
    path = f"/chat/sessions/{sid}/approvals/{call_id}"

    assert mallory.error("POST", path, 403, json={"decision": "approve"})["code"] == "FORBIDDEN"
    missing = decide(alice, sid, "call_nope", 404, decision="approve")
    assert missing["code"] == "APPROVAL_NOT_FOUND"
    assert alice.error("POST", f"/chat/sessions/nope/approvals/{call_id}", 404, json={})
    bodies: list[Any] = [
        {"decision": "maybe"},
        {},
        {"decision": "approve", "remember": "forever"},
        {"decision": "approve", "extra": 1},
        [],
    ]
    for bad in bodies:
        error = alice.error("POST", path, 422, json=bad)
        assert error["code"] == "VALIDATION_UNPROCESSABLE", bad
    not_json = alice.error("POST", path, 422, content=b"approve")
    assert not_json["code"] == "VALIDATION_UNPROCESSABLE"
    assert session(alice, sid)["pendingApprovals"][0]["callId"] == call_id  # still waits

    decide(alice, sid, call_id, decision="approve")
    assert decide(alice, sid, call_id, 409, decision="approve")["code"] == (
        "APPROVAL_ALREADY_DECIDED"
    )
    assert turn.join(60)[-1].event == "turn_complete"


def test_of_two_decisions_at_once_the_first_wins_and_the_other_is_409(
    start_workbench: Start, asking: Any
) -> None:
    """The owner's laptop and phone decide the same call at the same moment."""
    wb = start_workbench(extra=time_server())
    laptop = wb.user("alice")
    phone = Api(wb.url, laptop.token)
    sid = laptop.new_session()["id"]
    turn, asked = waiting_turn(laptop, sid)
    path = f"/chat/sessions/{sid}/approvals/{asked['callId']}"
    with ThreadPoolExecutor(2) as pool:
        answers = list(
            pool.map(
                lambda pair: pair[0].http.post(path, json={"decision": pair[1]}),
                [(laptop, "approve"), (phone, "deny")],
            )
        )
    assert sorted(a.status_code for a in answers) == [200, 409]
    (won,) = [a.json()["data"]["decision"] for a in answers if a.status_code == 200]
    frames = turn.join(60)
    (decided,) = [f.data for f in frames if f.event == "tool_approval_decided"]
    assert decided["decision"] == won
    phone.close()


def test_no_decision_in_time_counts_as_denied(
    start_workbench: Start, asking: FakeOpenAIServer
) -> None:
    wb = start_workbench(extra=time_server(timeout_s=1))
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    frames = turn.join(60)
    (decided,) = [f.data for f in frames if f.event == "tool_approval_decided"]
    assert (decided["decision"], decided["decidedBy"]) == ("deny", "timeout")
    assert frames[-1].event == "turn_complete"
    assert "no decision in time" in tool_messages(asking)[0]
    late = decide(alice, sid, asked["callId"], 409, decision="approve")
    assert late["code"] == "APPROVAL_ALREADY_DECIDED"
    assert session(alice, sid)["pendingApprovals"] == []


def test_cancel_while_waiting_ends_the_turn_and_the_request(
    start_workbench: Start, asking: Any
) -> None:
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    turn, asked = waiting_turn(alice, sid)
    alice.data("POST", f"/chat/sessions/{sid}/cancel")
    assert turn.join(60)[-1].event == "turn_cancelled"
    shown = session(alice, sid)
    assert shown["pendingApprovals"] == [] and shown["running"] is False
    assert decide(alice, sid, asked["callId"], 409, decision="approve")["code"] == (
        "APPROVAL_ALREADY_DECIDED"
    )
    assert StreamingSend(alice, sid, ASK).wait_for("tool_approval_requested", 60)


def test_the_history_and_metrics_tell_who_decided_what_and_when(
    start_workbench: Start, asking: Any
) -> None:
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    for decision, reason in (("approve", None), ("deny", "wrong zone")):
        turn, asked = waiting_turn(alice, sid)
        decide(alice, sid, asked["callId"], decision=decision, reason=reason)
        assert turn.join(60)[-1].event == "turn_complete"

    calls = [
        call
        for message in alice.data("GET", f"/chat/sessions/{sid}/messages")
        for call in message["toolCalls"]
    ]
    approvals = [call["approval"] for call in calls]
    assert [a["decision"] for a in approvals] == ["approve", "deny"]
    assert [a["decidedBy"] for a in approvals] == ["alice", "alice"]
    assert approvals[1]["decisionReason"] == "wrong zone"
    assert all(a["requestedAt"] <= a["decidedAt"] for a in approvals)
    assert calls[0]["isError"] is False and "Asia/Tokyo" in calls[0]["output"]

    assert metric(wb, 'youyou_tool_approvals_total{decision="approve"}') == 1
    assert metric(wb, 'youyou_tool_approvals_total{decision="deny"}') == 1
    assert metric(wb, "youyou_tool_approval_wait_seconds_count") == 2
