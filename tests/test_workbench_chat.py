"""Chat sessions and turns of the workbench over real HTTP: paging and search, SSE turns that
survive disconnects and can be re-attached, cancel, busy sessions, compaction and the context
hard limit, long-term memories, images, and the operations endpoints.

Every test runs against ``youyou serve`` in a subprocess, on SQLite and on PostgreSQL; the model
is the fake OpenAI server, whose requests show what each send assembled.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from fakes.http_server import RecordedRequest, Reply
from fakes.openai_server import OpenAIStream, openai_error, text_reply
from server_kit import Api, Frame, Workbench, parse_sse
from youyou.domain.memory_extraction import MEMORY_EXTRACTION_PROMPT

StartWorkbench = Callable[..., Workbench]

SLOW_PIECES = ("a", "b", "c", "d", "e", "f")


def slow_reply(delay_s: float = 0.5) -> Reply:
    """An answer streamed piece by piece, ``delay_s`` apart (about 2.5 s in all)."""
    return OpenAIStream().text(*SLOW_PIECES, delay_s=delay_s).finish().usage(10, 6).reply()


@contextmanager
def sending(api: Api, session_id: str, content: Any) -> Iterator[Iterator[Frame]]:
    """A send whose SSE frames the caller reads at its own pace (and may stop reading)."""
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": content}
    ) as response:
        assert response.status_code == 200, response.read().decode()
        yield (f for f in parse_sse(response.iter_lines()) if isinstance(f, Frame))


def until(frames: Iterator[Frame], event: str) -> list[Frame]:
    """Frames up to and including the first ``event``."""
    seen = []
    for frame in frames:
        seen.append(frame)
        if frame.event == event:
            return seen
    raise AssertionError(f"the stream ended without {event}: {[f.event for f in seen]}")


def wait_idle(api: Api, session_id: str, timeout_s: float = 15) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        session: dict[str, Any] = api.data("GET", f"/chat/sessions/{session_id}")
        if not session["running"]:
            return session
        assert time.monotonic() < deadline, "the turn did not end"
        time.sleep(0.1)


def messages(api: Api, session_id: str) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = api.data("GET", f"/chat/sessions/{session_id}/messages")
    return history


def text_of(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"])


def answer_text(frames: list[Frame]) -> str:
    return "".join(f.data["text"] for f in frames if f.event == "text_delta")


def is_summary_request(request: RecordedRequest) -> bool:
    return "Previous summary:" in request.body.decode()


# -- sessions ---------------------------------------------------------------------------------


def test_session_list_pages_and_searches(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api, other = wb.user("ann"), wb.user("ben")
    created = [
        api.new_session(title=f"Disk full on db-{i}" if i % 5 == 0 else f"incident {i}")
        for i in range(25)
    ]
    other.new_session(title="Disk full elsewhere")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 10, **({"cursor": cursor} if cursor else {})}
        page = api.data("GET", "/chat/sessions", params=params)
        seen += [s["id"] for s in page["items"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == [s["id"] for s in reversed(created)]  # newest first, no gap, no duplicate

    by_title = api.data("GET", "/chat/sessions", params={"q": "DISK FULL"})["items"]
    assert sorted(s["id"] for s in by_title) == sorted(
        s["id"] for s in created if s["title"].startswith("Disk")
    )
    target = created[7]["id"]
    by_id = api.data("GET", "/chat/sessions", params={"q": target[:13]})["items"]
    assert [s["id"] for s in by_id] == [target]
    assert api.data("GET", "/chat/sessions", params={"q": "no such thing"})["items"] == []

    bad = api.error("GET", "/chat/sessions", 400, params={"cursor": "not-a-cursor"})
    assert bad["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert api.error("GET", "/chat/sessions", 400, params={"limit": 0})["code"] == (
        "VALIDATION_INVALID_ARGUMENT"
    )


def test_get_and_delete_a_session(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("cat")
    session = api.new_session(title="to delete")
    api.send(session["id"], "hello")
    got = api.data("GET", f"/chat/sessions/{session['id']}")
    assert (got["id"], got["title"], got["messageCount"]) == (session["id"], "to delete", 2)
    assert got["modelId"] == "fake-model" and got["running"] is False
    api.data("DELETE", f"/chat/sessions/{session['id']}", 204)
    for path in ("", "/messages"):
        assert api.error("GET", f"/chat/sessions/{session['id']}{path}", 404)["code"] == (
            "NOT_FOUND"
        )
    assert api.data("GET", "/chat/sessions")["items"] == []


def test_clearing_history_resets_summary_boundary_and_tokens(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("dora")
    session = api.new_session()
    sid = session["id"]
    api.send(sid, "first question " * 50)
    wb.model.enqueue(text_reply("SUMMARY-BEFORE-CLEAR"))
    compacted = api.data("POST", f"/chat/sessions/{sid}/memory:compact")["memory"]
    assert compacted["summary"] == "SUMMARY-BEFORE-CLEAR"
    before = api.data("GET", f"/chat/sessions/{sid}")
    cleared = api.data("DELETE", f"/chat/sessions/{sid}/messages")
    assert cleared["id"] == sid and cleared["messageCount"] == 0
    memory = cleared["memory"]
    assert memory["summary"] is None and memory["lastCompactedAt"] is None
    assert memory["compactedMessageCount"] == 0 and memory["canCompact"] is False
    assert memory["contextTokens"] < before["memory"]["contextTokens"]
    assert messages(api, sid) == []
    frames = api.send(sid, "after clearing")
    assert frames[-1].event == "turn_complete"
    history = messages(api, sid)
    assert [(m["role"], m["compacted"]) for m in history] == [
        ("user", False),
        ("assistant", False),
    ]
    assert "SUMMARY-BEFORE-CLEAR" not in json.dumps(wb.model.requests[-1].json)


# -- compaction and the context limit ---------------------------------------------------------


def test_the_31st_send_compacts_60_messages_first(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("eli")
    sid = api.new_session()["id"]
    for i in range(30):
        assert api.send(sid, f"question {i}")[-1].event == "turn_complete"
    assert not any(is_summary_request(r) for r in wb.model.requests)
    wb.model.enqueue(text_reply("SUMMARY-OF-30-TURNS"), text_reply("answer ", "31"))
    frames = api.send(sid, "question 30")
    summary_request, answer_request = wb.model.requests[-2:]
    assert is_summary_request(summary_request) and "tools" not in summary_request.json
    assert "question 0" in summary_request.body.decode()
    assert "SUMMARY-OF-30-TURNS" in json.dumps(answer_request.json, ensure_ascii=False)

    events = [f.event for f in frames]
    assert events.index("context_compacted") < events.index("text_delta")
    assert answer_text(frames) == "answer 31"
    memory = frames[-1].data["memory"]
    assert memory["compactedMessageCount"] == 60
    assert memory["summary"] == "SUMMARY-OF-30-TURNS"
    assert memory["lastCompactedAt"] is not None
    session = api.data("GET", f"/chat/sessions/{sid}")
    assert session["memory"]["compactedMessageCount"] == 60
    assert session["messageCount"] == 62
    history = messages(api, sid)
    assert len(history) == 62
    assert [m["compacted"] for m in history] == [True] * 60 + [False] * 2
    assert text_of(history[0]) == "question 0" and text_of(history[-1]) == "answer 31"


def first_exchange(api: Api, sid: str) -> int:
    """One short exchange; returns the context tokens it leaves (prompt included)."""
    frames = api.send(sid, "hi")
    tokens: int = frames[-1].data["memory"]["contextTokens"]
    return tokens


def text_of_tokens(tokens: int) -> str:
    """Plain ASCII the fake model's (approximate) counter prices at ``tokens`` tokens."""
    return "abcd" * tokens


def test_the_hard_limit_rejects_a_message_before_storing_it(
    start_workbench: StartWorkbench,
) -> None:
    window = 4000
    wb = start_workbench(context_window=window)
    api = wb.user("fred")
    sid = api.new_session()["id"]
    first_exchange(api, sid)
    before = messages(api, sid)
    long_text = text_of_tokens(window)
    frames = api.send(sid, long_text, headers={"Accept-Language": "zh-CN"})
    assert frames[-1].event == "error"
    assert frames[-1].data["code"] == "CHAT_CONTEXT_LIMIT_REACHED"
    assert frames[-1].data["message"].startswith("当前会话上下文已达到上限")
    assert "turn_started" not in [f.event for f in frames]
    english = api.send(sid, long_text, headers={"Accept-Language": "en"})
    assert [f.event for f in english] == ["error"]
    message = english[0].data["message"]
    assert message.startswith("The conversation has reached the context limit (")
    assert message.count("compact") == 1 and ".:" not in message  # said once, one sentence
    assert f"of {window:,} tokens" in message
    assert all(long_text not in r.body.decode() for r in wb.model.requests)
    after = messages(api, sid)
    assert [(m["seq"], m["role"], m["content"]) for m in after] == [
        (m["seq"], m["role"], m["content"]) for m in before
    ]
    assert api.data("GET", f"/chat/sessions/{sid}")["messageCount"] == 2
    # the session is not stuck: a message that fits is answered
    assert api.send(sid, "short again")[-1].event == "turn_complete"
    assert len(messages(api, sid)) == 4


def test_context_70_percent_mode_compacts_before_answering(
    start_workbench: StartWorkbench,
) -> None:
    window = 4000
    wb = start_workbench(context_window=window)
    api = wb.user("gus")
    sid = api.new_session()["id"]
    switched = api.data("PUT", f"/chat/sessions/{sid}/memory", json={"mode": "context_70_percent"})
    assert switched["memory"]["mode"] == "context_70_percent"
    used = first_exchange(api, sid)
    assert used < window * 0.3
    wb.model.enqueue(text_reply("SUMMARY-AT-70"), text_reply("the answer"))
    # 75 % with the candidate: over the mode's 70 %, under the 80 % size trigger of every mode
    frames = api.send(sid, text_of_tokens(int(window * 0.75) - used))
    events = [f.event for f in frames]
    assert events[0] == "context_compacted", events
    assert events.index("context_compacted") < events.index("text_delta")
    assert is_summary_request(wb.model.requests[-2])
    memory = frames[-1].data["memory"]
    assert (memory["summary"], memory["compactedMessageCount"]) == ("SUMMARY-AT-70", 2)
    assert [m["compacted"] for m in messages(api, sid)] == [True, True, False, False]


def test_a_failed_summary_keeps_the_boundary(start_workbench: StartWorkbench) -> None:
    window = 4000
    wb = start_workbench(context_window=window)
    api = wb.user("hal")
    sid = api.new_session()["id"]
    api.data("PUT", f"/chat/sessions/{sid}/memory", json={"mode": "context_70_percent"})
    used = first_exchange(api, sid)
    wb.model.enqueue(openai_error(500, "summary model down", error_type="server_error"))
    frames = api.send(
        sid, text_of_tokens(int(window * 0.75) - used), headers={"Accept-Language": "zh-CN"}
    )
    assert [f.event for f in frames] == ["error"]
    assert frames[0].data["code"] == "MODEL_ERROR"
    assert frames[0].data["message"].startswith("模型调用失败")
    session = api.data("GET", f"/chat/sessions/{sid}")
    assert session["memory"]["summary"] is None
    assert session["memory"]["compactedMessageCount"] == 0
    assert session["messageCount"] == 2
    assert [m["compacted"] for m in messages(api, sid)] == [False, False]

    # asked for explicitly, the failure is an HTTP error and the boundary stays too
    wb.model.enqueue(openai_error(500, "summary model down", error_type="server_error"))
    error = api.error("POST", f"/chat/sessions/{sid}/memory:compact", 502)
    assert error["code"] == "MODEL_ERROR"
    memory = api.data("GET", f"/chat/sessions/{sid}")["memory"]
    assert (memory["summary"], memory["compactedMessageCount"], memory["canCompact"]) == (
        None,
        0,
        True,
    )


def test_compact_now_works_in_every_mode(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("ida")
    sid = api.new_session()["id"]
    requests = len(wb.model.requests)
    nothing = api.data("POST", f"/chat/sessions/{sid}/memory:compact")
    assert nothing["id"] == sid
    assert nothing["memory"]["summary"] is None and nothing["memory"]["lastCompactedAt"] is None
    assert len(wb.model.requests) == requests  # nothing to compact: no model request
    compacted = 0
    for n, mode in enumerate(["manual", "context_70_percent", "every_30_turns"], start=1):
        api.data("PUT", f"/chat/sessions/{sid}/memory", json={"mode": mode})
        api.send(sid, f"question in {mode}")
        wb.model.enqueue(text_reply(f"SUMMARY-{n}"))
        session = api.data("POST", f"/chat/sessions/{sid}/memory:compact")
        compacted += 2
        memory = session["memory"]
        assert memory["mode"] == mode
        assert (memory["summary"], memory["compactedMessageCount"]) == (f"SUMMARY-{n}", compacted)
        assert memory["canCompact"] is False and memory["lastCompactedAt"] is not None
        request = wb.model.requests[-1]
        assert is_summary_request(request) and "tools" not in request.json
        if n > 1:  # a new summary merges the previous one
            assert f"SUMMARY-{n - 1}" in request.body.decode()
        requests = len(wb.model.requests)
        again = api.data("POST", f"/chat/sessions/{sid}/memory:compact")["memory"]
        assert len(wb.model.requests) == requests
        assert (again["summary"], again["compactedMessageCount"]) == (f"SUMMARY-{n}", compacted)


# -- streams: cancel, disconnect, re-attach, busy --------------------------------------------


def test_cancel_stores_the_partial_answer_as_incomplete(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("jan")
    sid = api.new_session()["id"]
    canceller = Api(wb.url, api.token)
    idle = canceller.data("POST", f"/chat/sessions/{sid}/cancel")  # nothing running: still 200
    assert idle["id"] == sid and idle["running"] is False
    wb.model.enqueue(slow_reply())
    with sending(api, sid, "explain slowly") as frames:
        head = until(frames, "text_delta")
        canceller.data("POST", f"/chat/sessions/{sid}/cancel")
        rest = list(frames)
    canceller.close()
    assert rest[-1].event == "turn_cancelled"
    partial = answer_text(head + rest)
    assert partial and partial != "".join(SLOW_PIECES)
    assert wb.model.requests[-1].disconnected.wait(5), "the provider stream stayed open"
    history = messages(api, sid)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["status"] == "incomplete"
    assert text_of(history[1]) == partial
    assert api.send(sid, "next")[-1].event == "turn_complete"


def test_leaving_the_stream_does_not_cancel_the_turn(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("kim")
    sid = api.new_session()["id"]
    wb.model.enqueue(slow_reply(delay_s=0.3))
    with sending(api, sid, "long answer please") as frames:
        until(frames, "text_delta")
    # the client hung up after the first delta; the turn runs on
    session = wait_idle(api, sid)
    assert session["messageCount"] == 2
    history = messages(api, sid)
    assert history[1]["status"] == "complete"
    assert text_of(history[1]) == "".join(SLOW_PIECES)
    assert not wb.model.requests[-1].disconnected.is_set()


def test_reattach_replays_frames_after_last_event_id(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("lea")
    sid = api.new_session()["id"]
    second = Api(wb.url, api.token)
    wb.model.enqueue(slow_reply())
    with sending(api, sid, "stream it") as frames:
        head = until(frames, "text_delta")
        last = head[-1].id
        assert last is not None
        with second.http.stream(
            "GET", f"/chat/sessions/{sid}/stream", headers={"Last-Event-ID": str(last)}
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            replayed = [f for f in parse_sse(response.iter_lines()) if isinstance(f, Frame)]
        rest = list(frames)
    everything = head + rest
    assert [f.id for f in everything] == list(range(1, len(everything) + 1))
    assert [(f.id, f.event, f.data) for f in replayed] == [
        (f.id, f.event, f.data) for f in everything if f.id is not None and f.id > last
    ]
    assert replayed[-1].event == "turn_complete"
    after = second.http.get(f"/chat/sessions/{sid}/stream", headers={"Last-Event-ID": "0"})
    assert after.status_code == 204
    second.close()


def test_a_second_send_while_a_turn_runs_is_409(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("max")
    sid = api.new_session()["id"]
    second = Api(wb.url, api.token)
    wb.model.enqueue(slow_reply())
    with sending(api, sid, "first") as frames:
        until(frames, "text_delta")
        assert second.data("GET", f"/chat/sessions/{sid}")["running"] is True
        busy = second.http.post(f"/chat/sessions/{sid}/messages", json={"content": "second"})
        assert busy.status_code == 409
        assert busy.headers["content-type"].startswith("application/json")
        assert busy.json()["error"]["code"] == "TURN_BUSY"
        compact = second.error("POST", f"/chat/sessions/{sid}/memory:compact", 409)
        assert compact["code"] == "TURN_BUSY"
        rest = list(frames)
    second.close()
    assert rest[-1].event == "turn_complete"
    assert [text_of(m) for m in messages(api, sid) if m["role"] == "user"] == ["first"]


# -- long-term memories -------------------------------------------------------------------------


def remembering(request: RecordedRequest) -> Reply:
    """Extraction requests get one 'create' naming the user's codeword; chats get 'ok'."""
    body = request.json
    system = body["messages"][0]["content"] if body["messages"] else ""
    if system != MEMORY_EXTRACTION_PROMPT:
        return text_reply("ok")
    window = json.dumps(body["messages"][1:], ensure_ascii=False)
    word = next(w for w in ("ALPHA", "BRAVO") if w in window)
    mutation = {"op": "create", "content": f"{word} runs postgres 15", "reason": "said so"}
    return text_reply(json.dumps({"mutations": [mutation]}))


def wait_memories(api: Api, timeout_s: float = 20) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        items: list[dict[str, Any]] = api.data("GET", "/chat/memories")
        if items:
            return items
        assert time.monotonic() < deadline, "no memory was extracted"
        time.sleep(0.2)


def test_long_term_memories_are_per_user(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(memory=True, extra="[server]\nsession_idle_s = 1")
    wb.model.default = remembering
    alice, bob = wb.user("alice"), wb.user("bob")
    assert alice.data("GET", "/chat/memories") == []
    alice_session = alice.new_session()["id"]
    bob_session = bob.new_session()["id"]
    alice.send(alice_session, "remember: ALPHA runs postgres 15")
    bob.send(bob_session, "remember: BRAVO runs postgres 15")
    # idle sessions are closed, and closing extracts memories
    [mine] = wait_memories(alice)
    [theirs] = wait_memories(bob)
    assert mine["content"] == "ALPHA runs postgres 15"
    assert theirs["content"] == "BRAVO runs postgres 15"
    assert mine["sourceSessionId"] is not None
    assert alice.error("DELETE", f"/chat/memories/{theirs['id']}", 404)["code"] == "NOT_FOUND"
    assert bob.data("GET", "/chat/memories") == [theirs]
    alice.data("DELETE", f"/chat/memories/{mine['id']}", 204)
    assert alice.data("GET", "/chat/memories") == []
    assert alice.error("DELETE", f"/chat/memories/{mine['id']}", 404)["code"] == "NOT_FOUND"
    # the closed session resumes from the ledger on its next message
    assert alice.send(alice_session, "still there?")[-1].event == "turn_complete"
    assert len(messages(alice, alice_session)) == 4


def extraction_requests(wb: Workbench) -> list[RecordedRequest]:
    return [
        r
        for r in wb.model.requests
        if r.json.get("messages") and r.json["messages"][0]["content"] == MEMORY_EXTRACTION_PROMPT
    ]


def test_deleting_or_clearing_a_session_never_mines_it_for_memories(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(memory=True)
    wb.model.default = remembering
    api = wb.user("alice")
    deleted, cleared = api.new_session()["id"], api.new_session()["id"]
    api.send(deleted, "my vault code is 1234, ALPHA")
    api.send(cleared, "my vault code is 1234, BRAVO")
    api.data("DELETE", f"/chat/sessions/{deleted}", 204)
    api.data("DELETE", f"/chat/sessions/{cleared}/messages")
    assert extraction_requests(wb) == []
    assert api.data("GET", "/chat/memories") == []


def test_deleting_a_session_deletes_the_memories_extracted_from_it(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(memory=True, extra="[agent]\nmemory_checkpoint_interval = 1")
    wb.model.default = remembering
    api = wb.user("alice")
    doomed, kept = api.new_session()["id"], api.new_session()["id"]
    # the second extraction sees the first memory too: ``remembering`` takes ALPHA first
    api.send(doomed, "my vault code is BRAVO")
    api.send(kept, "my vault code is ALPHA")
    deadline = time.monotonic() + 20
    while len(api.data("GET", "/chat/memories")) < 2:
        assert time.monotonic() < deadline, "the checkpoints extracted no memories"
        time.sleep(0.2)
    api.data("DELETE", f"/chat/sessions/{doomed}", 204)
    [left] = api.data("GET", "/chat/memories")
    assert left["content"] == "ALPHA runs postgres 15"


# -- images ---------------------------------------------------------------------------------------

PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00"
    b"\x00\x00\x00IEND\xaeB`\x82"
).decode()


def test_a_png_block_reaches_the_model_and_a_fake_one_is_refused(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("ned")
    sid = api.new_session()["id"]
    image = {"type": "image", "mimeType": "image/png", "dataBase64": PNG}
    frames = api.send(sid, [{"type": "text", "text": "what is on this graph?"}, image])
    assert frames[-1].event == "turn_complete"
    user = wb.model.requests[-1].json["messages"][-1]
    assert user["role"] == "user"
    parts = user["content"]
    assert {"type": "text", "text": "what is on this graph?"} in parts
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert urls == [f"data:image/png;base64,{PNG}"]
    stored = messages(api, sid)[0]["content"]
    assert {"type": "image", "mimeType": "image/png", "dataBase64": PNG} in stored

    requests = len(wb.model.requests)
    for data in (b"GIF89a" + bytes(16), b"not an image at all"):
        block = {**image, "dataBase64": base64.b64encode(data).decode()}
        error = api.error("POST", f"/chat/sessions/{sid}/messages", 400, json={"content": [block]})
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert len(wb.model.requests) == requests
    assert len(messages(api, sid)) == 2


# -- operations ----------------------------------------------------------------------------------

ROUTES = {
    ("post", "/auth/register"),
    ("post", "/auth/login"),
    ("post", "/auth/logout"),
    ("post", "/auth/logout-all"),
    ("post", "/auth/password"),
    ("get", "/auth/me"),
    ("get", "/chat/configuration"),
    ("put", "/chat/configuration"),
    ("post", "/chat/prompts"),
    ("get", "/chat/prompts/{prompt_id}"),
    ("put", "/chat/prompts/{prompt_id}"),
    ("delete", "/chat/prompts/{prompt_id}"),
    ("post", "/chat/skills"),
    ("get", "/chat/skills/{skill_id}/content"),
    ("delete", "/chat/skills/{skill_id}"),
    ("get", "/chat/models"),
    ("get", "/chat/memories"),
    ("delete", "/chat/memories/{memory_id}"),
    ("post", "/chat/sessions"),
    ("get", "/chat/sessions"),
    ("get", "/chat/sessions/{session_id}"),
    ("delete", "/chat/sessions/{session_id}"),
    ("get", "/chat/sessions/{session_id}/messages"),
    ("post", "/chat/sessions/{session_id}/messages"),
    ("delete", "/chat/sessions/{session_id}/messages"),
    ("get", "/chat/sessions/{session_id}/stream"),
    ("post", "/chat/sessions/{session_id}/cancel"),
    ("put", "/chat/sessions/{session_id}/memory"),
    ("post", "/chat/sessions/{session_id}/memory:compact"),
    ("get", "/healthz"),
    ("get", "/metrics"),
}


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text ``text``."""
    for line in text.splitlines():
        match = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if match is None or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(match.group(3))
    raise AssertionError(f"no sample {name}{labels}")


def test_health_metrics_and_openapi(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("ola")
    sid = api.new_session()["id"]
    api.send(sid, "hello")
    health = httpx.get(f"{wb.url}/healthz")
    assert health.status_code == 200 and health.json()["data"] == {"status": "ok"}

    scrape = httpx.get(f"{wb.url}/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    body = scrape.text
    route = "/chat/sessions/{session_id}/messages"
    assert metric(body, "youyou_http_requests_total", route=route, method="POST", status="200") == 1
    assert metric(body, "youyou_http_requests_total", route="/healthz", status="200") >= 1
    assert session_id_free(body, sid)
    assert metric(body, "youyou_turns_total", outcome="completed") == 1
    assert metric(body, "youyou_time_to_first_event_seconds_count") == 1
    assert metric(body, "youyou_active_turn_streams") == 0

    document = httpx.get(f"{wb.url}/openapi.json").json()
    listed = {(method, path) for path, item in document["paths"].items() for method in item}
    assert listed >= ROUTES, sorted(ROUTES - listed)
    stream = document["paths"]["/chat/sessions/{session_id}/messages"]["post"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]


def test_the_wait_for_the_model_is_shown_as_comments_before_the_first_frame_of_the_answer(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(extra="[agent]\nmodel_wait_notice_ms = 200")
    api = wb.user("wei")
    session_id = api.new_session()["id"]
    wb.model.enqueue(OpenAIStream().delay(1.2).text("late").finish().usage(5, 2).reply())
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": "hurry"}
    ) as response:
        lines = list(response.iter_lines())
    notes = [i for i, line in enumerate(lines) if line.startswith(": waiting for the model ")]
    first_delta = lines.index("event: text_delta")
    assert len(notes) >= 3 and notes[-1] < first_delta, lines
    assert lines[notes[-1]] == ": waiting for the model 1s"
    frames = [f for f in parse_sse(iter(lines)) if isinstance(f, Frame)]
    assert [f.event for f in frames] == ["turn_started", "text_delta", "turn_complete"]


def session_id_free(metrics_text: str, session_id: str) -> bool:
    """Requests are counted by route template, never by the concrete path."""
    return session_id not in metrics_text


def test_a_quiet_stream_carries_keep_alive_comments_between_frames(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(extra="[server]\nkeepalive_s = 0.2")
    api = wb.user("kai")
    session_id = api.new_session()["id"]
    wb.model.enqueue(OpenAIStream().text("slow", "ly", delay_s=1.0).finish().usage(5, 2).reply())
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": "wait"}
    ) as response:
        lines = list(response.iter_lines())
    keepalives = [i for i, line in enumerate(lines) if line == ": keep-alive"]
    first_delta = next(i for i, line in enumerate(lines) if line == "event: text_delta")
    assert keepalives, lines
    assert any(i > first_delta for i in keepalives)  # inside the model's 1 s pauses
    frames = [f for f in parse_sse(iter(lines)) if isinstance(f, Frame)]
    assert [f.event for f in frames][-1] == "turn_complete"
    assert "".join(f.data["text"] for f in frames if f.event == "text_delta") == "slowly"
