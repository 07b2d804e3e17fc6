"""The workbench over real HTTP: auth, owner scope, configuration, sessions and SSE turns.

Every test runs against ``youyou serve`` in a subprocess, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Api, Workbench

StartWorkbench = Callable[..., Workbench]


def test_register_login_logout_and_token_rejected_after(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    anonymous = Api(wb.url)
    user = anonymous.data(
        "POST", "/auth/register", 201, json={"username": "alice", "password": "s3cret-pass"}
    )["user"]
    assert user["username"] == "alice"
    assert (
        anonymous.error(
            "POST", "/auth/register", 409, json={"username": "ALICE", "password": "s3cret-pass"}
        )["code"]
        == "AUTH_USERNAME_TAKEN"
    )
    wrong = anonymous.error(
        "POST", "/auth/login", 401, json={"username": "alice", "password": "nope-nope"}
    )
    assert wrong["code"] == "AUTH_INVALID_CREDENTIALS"
    login = anonymous.data(
        "POST", "/auth/login", json={"username": "alice", "password": "s3cret-pass"}
    )
    assert login["tokenType"] == "bearer"
    api = Api(wb.url, login["accessToken"])
    assert api.data("GET", "/auth/me")["id"] == user["id"]
    api.data("POST", "/auth/logout", 204)
    assert api.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert anonymous.error("GET", "/chat/sessions", 401)["code"] == "AUTH_UNAUTHENTICATED"


def test_failed_logins_are_rate_limited_with_retry_after(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nlogin_attempts = 3\nlogin_window_s = 60")
    wb.user("bob")
    body = {"username": "bob", "password": "wrong-password"}
    with httpx.Client(base_url=wb.url) as http:
        codes = [http.post("/auth/login", json=body).status_code for _ in range(3)]
        limited = http.post("/auth/login", json={"username": "bob", "password": "correct horse"})
    assert codes == [401, 401, 401]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"]["code"] == "AUTH_RATE_LIMITED"


def test_registration_can_be_turned_off(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nregistration = false")
    api = Api(wb.url)
    assert api.data("GET", "/auth/settings") == {
        "registration": False,
        "registrationMode": "closed",
        "sso": False,
        "ssoName": None,
        "passwordLogin": True,
    }
    error = api.error("POST", "/auth/register", 403, json={"username": "x", "password": "12345678"})
    assert error["code"] == "AUTH_REGISTRATION_DISABLED"


def test_errors_use_one_envelope_in_chinese_or_english(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("carol")
    zh = api.error(
        "POST",
        "/chat/prompts",
        400,
        json={"label": " ", "content": "x"},
        headers={"Accept-Language": "zh-CN"},
    )
    assert zh["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert "label" in zh["message"] and "请求参数无效" in zh["message"]
    en = api.error(
        "POST",
        "/chat/prompts",
        400,
        json={"label": "a", "content": "b", "extra": 1},
        headers={"Accept-Language": "en"},
    )
    assert en["message"].startswith("Invalid request argument") and "extra" in en["message"]
    wrong_type = api.error(
        "POST",
        "/chat/prompts",
        400,
        json={"label": 7, "content": "b"},
        headers={"Accept-Language": "en"},
    )
    assert wrong_type["code"] == "VALIDATION_INVALID_ARGUMENT" and "label" in wrong_type["message"]
    not_json = api.http.post(
        "/chat/prompts", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 400
    assert not_json.json()["error"]["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert api.error("GET", "/chat/sessions/nope", 404)["code"] == "NOT_FOUND"


def test_body_over_the_limit_is_413(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nmax_body_bytes = 1000")
    api = wb.user("dave")
    error = api.error("POST", "/chat/prompts", 413, json={"label": "a", "content": "x" * 2000})
    assert error["code"] == "PAYLOAD_TOO_LARGE"


def test_configuration_first_read_creates_default_prompt(start_workbench: StartWorkbench) -> None:
    api = start_workbench().user("erin")
    config = api.data("GET", "/chat/configuration")
    [default] = config["prompts"]
    assert default["isDefault"] is True
    assert config["selection"] == {"systemPromptId": default["id"], "skillIds": []}
    assert config["skills"] == []


def test_send_streams_sse_and_stores_history(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    wb.model.enqueue(OpenAIStream().text("Disk ", "is ", "full").finish().usage(30, 3).reply())
    api = wb.user("frank")
    session = api.new_session(title="db-1 disk")
    assert session["memory"]["mode"] == "every_30_turns"
    frames = api.send(session["id"], "Disk full on db-1, what now?")
    events = [f.event for f in frames]
    assert events[0] == "turn_started" and events[-1] == "turn_complete"
    assert [f.id for f in frames] == list(range(1, len(frames) + 1))
    text = "".join(f.data["text"] for f in frames if f.event == "text_delta")
    assert text == "Disk is full"
    complete = frames[-1].data
    assert complete["usage"]["inputTokens"] == 30
    assert complete["memory"]["contextWindowTokens"] == 128_000
    history = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[0]["seq"] == frames[0].data["userMessageSeq"]
    assert history[1]["content"] == [{"type": "text", "text": "Disk is full"}]
    assert history[1]["status"] == "complete"
    listed = api.data("GET", "/chat/sessions")
    assert listed["items"][0]["id"] == session["id"]
    assert listed["items"][0]["messageCount"] == 2


def test_other_users_session_is_403_and_unknown_is_404(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    owner, other = wb.user("gina"), wb.user("hank")
    session = owner.new_session()
    sid = session["id"]
    for method, path, body in [
        ("GET", f"/chat/sessions/{sid}", None),
        ("GET", f"/chat/sessions/{sid}/messages", None),
        ("DELETE", f"/chat/sessions/{sid}", None),
        ("PUT", f"/chat/sessions/{sid}/memory", {"mode": "manual"}),
        ("POST", f"/chat/sessions/{sid}/memory:compact", None),
        ("POST", f"/chat/sessions/{sid}/messages", {"content": "hi"}),
        ("POST", f"/chat/sessions/{sid}/cancel", None),
    ]:
        assert other.error(method, path, 403, json=body)["code"] == "FORBIDDEN", (method, path)
    assert other.data("GET", "/chat/sessions")["items"] == []
    owner.data("GET", f"/chat/sessions/{sid}")


def test_manual_mode_compacts_at_once(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api = wb.user("ivy")
    session = api.new_session()
    api.send(session["id"], "first question")
    wb.model.enqueue(text_reply("summary of the first exchange"))
    updated = api.data("PUT", f"/chat/sessions/{session['id']}/memory", json={"mode": "manual"})
    memory = updated["memory"]
    assert memory["mode"] == "manual"
    assert memory["summary"] == "summary of the first exchange"
    assert memory["compactedMessageCount"] == 2
    assert memory["canCompact"] is False
    assert memory["lastCompactedAt"] is not None
    history = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    assert [m["compacted"] for m in history] == [True, True]
    error = api.error("PUT", f"/chat/sessions/{session['id']}/memory", 400, json={"mode": "x"})
    assert error["code"] == "VALIDATION_INVALID_ARGUMENT"
