"""What ``GET …/messages`` shows after a reload, over real HTTP on SQLite and PostgreSQL: each
message's time and each tool call's duration, as the live stream showed them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import httpx

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Api, Workbench

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


def _exported(api: Api, sid: str, file_format: str) -> httpx.Response:
    response = api.http.get(f"/chat/sessions/{sid}/export", params={"format": file_format})
    assert response.status_code == 200, response.text
    return response


def test_export_holds_messages_tool_calls_and_compactions_as_json_and_markdown(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("ines")
    sid = api.new_session(title="数据库 incident")["id"]
    _tool_turn(wb, "call_1")
    api.send(sid, "what time is it?")
    wb.model.enqueue(text_reply("SUMMARY: the clock was checked"))
    api.data("POST", f"/chat/sessions/{sid}/memory:compact")
    log = "line 1\n```\nnot a fence end\n```"
    api.send(
        sid,
        [
            {"type": "text", "text": "see the log"},
            {"type": "file", "fileName": "app.log", "text": log},
        ],
    )

    response = _exported(api, sid, "json")
    assert response.headers["content-type"].startswith("application/json")
    disposition = response.headers["content-disposition"]
    assert disposition.startswith(f'attachment; filename="youyou-{sid[:8]}-')
    assert ".json\"; filename*=UTF-8''%E6%95%B0%E6%8D%AE%E5%BA%93%20incident%20" in disposition
    document = response.json()
    assert (document["format"], document["version"]) == ("youyou.chat-session", 1)
    assert document["exportedBy"]["username"] == "ines"
    session = document["session"]
    assert (session["id"], session["title"], session["modelId"]) == (
        sid,
        "数据库 incident",
        "fake-model",
    )
    assert session["owner"]["username"] == "ines" and session["messageCount"] == 4
    messages = document["messages"]
    assert [(m["role"], m["author"], m["compacted"]) for m in messages] == [
        ("user", "ines", True),
        ("assistant", "assistant", True),
        ("user", "ines", False),
        ("assistant", "assistant", False),
    ]
    assert all(datetime.fromisoformat(m["createdAt"]) for m in messages)
    [call] = messages[1]["toolCalls"]
    assert call["toolName"] == "get_current_time" and call["arguments"] == {"timezone": "UTC"}
    assert call["output"] and call["isError"] is False and isinstance(call["durationMs"], int)
    assert messages[2]["content"][1] == {
        "type": "file",
        "fileName": "app.log",
        "mediaType": None,
        "text": log,
    }
    [compaction] = document["compactions"]
    assert compaction["summary"] == "SUMMARY: the clock was checked"
    assert compaction["replacesThroughSeq"] >= messages[1]["seq"]
    assert messages[1]["seq"] < compaction["seq"] < messages[2]["seq"]

    markdown = _exported(api, sid, "md")
    assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
    assert '.md"; filename*=' in markdown.headers["content-disposition"]
    text = markdown.text
    assert text.startswith("# 数据库 incident\n")
    assert f"- Session: `{sid}`" in text and "- Owner: ines" in text
    order = [
        text.index("### ines · "),
        text.index("#### Tool `get_current_time` · "),
        text.index('"timezone": "UTC"'),
        text.index("> SUMMARY: the clock was checked"),
        text.index("see the log"),
    ]
    assert order == sorted(order)
    assert "(compacted)" in text and " ms" in text
    assert f"````\n{log}\n````" in text  # the fence outlasts the backticks inside


def test_export_is_owner_scoped_and_checks_its_format(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    owner, other = wb.user("jack"), wb.user("jill")
    sid = owner.new_session(title="private")["id"]
    assert other.error("GET", f"/chat/sessions/{sid}/export", 403)["code"] == "FORBIDDEN"
    assert owner.error("GET", "/chat/sessions/nope/export", 404)["code"] == "NOT_FOUND"
    error = owner.error("GET", f"/chat/sessions/{sid}/export", 400, params={"format": "pdf"})
    assert error["code"] == "VALIDATION_INVALID_ARGUMENT" and "format" in error["message"]
    empty = owner.http.get(f"/chat/sessions/{sid}/export")  # Markdown by default
    assert empty.status_code == 200 and empty.text.startswith("# private\n")
    assert "## Conversation" in empty.text
