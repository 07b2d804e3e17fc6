"""What ``GET …/messages`` shows after a reload, over real HTTP on SQLite and PostgreSQL: each
message's time and each tool call's duration, as the live stream showed them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Workbench

StartWorkbench = Callable[..., Workbench]


def _tool_turn(wb: Workbench, call_id: str) -> None:
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls((call_id, "get_current_time", '{"timezone": "UTC"}'))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("It is late."),
    )


def test_tool_durations_and_message_times_survive_a_reload(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("hugo")
    sid = api.new_session()["id"]
    before = datetime.now(UTC)
    live = []
    for question in ("what time is it?", "and now?"):
        _tool_turn(wb, "call_1")  # the same call id in both turns, as some models do
        frames = api.send(sid, question)
        [end] = [f for f in frames if f.event == "tool_call_end"]
        live.append(end.data["durationMs"])
    history = api.data("GET", f"/chat/sessions/{sid}/messages")
    calls = [c for m in history for c in m["toolCalls"]]
    assert [c["callId"] for c in calls] == ["call_1", "call_1"]
    assert [c["durationMs"] for c in calls] == live
    assert all(isinstance(ms, int) and ms >= 0 for ms in live)
    times = [datetime.fromisoformat(m["createdAt"]) for m in history]
    assert times == sorted(times) and before <= times[0] <= datetime.now(UTC)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]


def test_clearing_a_session_forgets_its_tool_durations(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("hana")
    sid = api.new_session()["id"]
    _tool_turn(wb, "call_7")
    api.send(sid, "time?")
    api.data("DELETE", f"/chat/sessions/{sid}/messages")
    _tool_turn(wb, "call_7")
    frames = api.send(sid, "time again?")  # the new ledger's first turn has the same seq
    [end] = [f for f in frames if f.event == "tool_call_end"]
    [call] = [c for m in api.data("GET", f"/chat/sessions/{sid}/messages") for c in m["toolCalls"]]
    assert call["durationMs"] == end.data["durationMs"]
