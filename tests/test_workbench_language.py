"""The server's messages follow ``Accept-Language`` over real HTTP (SQLite and PostgreSQL):
English unless the client prefers Chinese, request validation included, and a refusal that
says how long to wait names the wait."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from server_kit import Api, Workbench

StartWorkbench = Callable[..., Workbench]
ZH = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}
EN = {"Accept-Language": "en-GB,en;q=0.9"}


def test_validation_messages_are_english_by_default_and_chinese_when_asked(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    anonymous = Api(wb.url)
    short = {"username": "li", "password": "short"}
    default = anonymous.error("POST", "/auth/register", 400, json=short)["message"]
    assert default == (
        "Invalid request argument: password: String should have at least 8 characters"
    )
    assert anonymous.error("POST", "/auth/register", 400, json=short, headers=EN)["message"] == (
        default
    )
    chinese = anonymous.error("POST", "/auth/register", 400, json=short, headers=ZH)["message"]
    assert chinese == "请求参数无效：password：至少需要 8 个字符"
    extra = {"username": "li", "password": "long enough pw", "admin": True}
    assert anonymous.error("POST", "/auth/register", 400, json=extra, headers=ZH)["message"] == (
        "请求参数无效：admin：不允许此字段"
    )
    api = wb.user("lin")
    sid = api.new_session()["id"]
    problems = api.error("PATCH", f"/chat/sessions/{sid}", 400, json={"title": " "}, headers=ZH)[
        "message"
    ]
    assert problems == "请求参数无效：title：至少需要 1 个字符"
    export = api.error(
        "GET", f"/chat/sessions/{sid}/export", 400, params={"format": "pdf"}, headers=ZH
    )["message"]
    assert export.startswith("请求参数无效：query.format：应为 ") and "'md'" in export
    since = api.error("GET", "/chat/sessions", 400, params={"since": "soon"}, headers=ZH)
    assert "query.since：应为日期时间" in since["message"]
    assert api.error("GET", "/chat/sessions/nope", 404)["message"] == "Not found"
    assert api.error("GET", "/chat/sessions/nope", 404, headers=ZH)["message"] == "资源不存在"


def test_the_servers_own_details_follow_the_language(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nuser_prompts = 1\nmax_message_chars = 10\n")
    api = wb.user("mei")
    api.data("POST", "/chat/prompts", 201, json={"label": "one", "content": "c"})
    body = {"label": "two", "content": "c"}
    english = api.error("POST", "/chat/prompts", 429, json=body)["message"]
    assert english.endswith("you have 1 of your 1 prompts (user_prompts)")
    chinese = api.error("POST", "/chat/prompts", 429, json=body, headers=ZH)["message"]
    assert chinese == "已达到你在此服务器上的使用上限：你已有 1 个提示词，上限 1（user_prompts）"
    sid = api.new_session()["id"]
    path = f"/chat/sessions/{sid}/messages"
    too_long = api.error("POST", path, 413, json={"content": "x" * 11}, headers=ZH)["message"]
    assert too_long.endswith("一条消息最多 10 个字符的文本，这条有 11 个")


def test_the_default_prompt_is_named_in_the_readers_language(
    start_workbench: StartWorkbench,
) -> None:
    api = start_workbench().user("ning")
    [english] = api.data("GET", "/chat/configuration")["prompts"]
    [chinese] = api.data("GET", "/chat/configuration", headers=ZH)["prompts"]
    assert english["id"] == chinese["id"] and english["isDefault"]
    assert (english["label"], chinese["label"]) == ("Default prompt", "默认提示词")
    assert english["content"].startswith("You are an experienced SRE")
    assert chinese["content"].startswith("你是一名经验丰富的 SRE")
    renamed = api.data(
        "PUT", f"/chat/prompts/{english['id']}", json={"label": "Mine", "content": "Be terse."}
    )
    assert api.data("GET", f"/chat/prompts/{renamed['id']}", headers=ZH)["label"] == "Mine"


def test_a_rate_limited_login_says_how_long_to_wait(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nlogin_attempts = 2\nlogin_window_s = 120\n")
    wb.user("ola")
    wrong = {"username": "ola", "password": "wrong password"}
    with httpx.Client(base_url=wb.url) as http:
        assert [http.post("/auth/login", json=wrong).status_code for _ in range(2)] == [401, 401]
        english = http.post("/auth/login", json=wrong)
        chinese = http.post("/auth/login", json=wrong, headers=ZH)
    assert english.status_code == chinese.status_code == 429
    wait = int(english.headers["retry-after"])
    assert 1 <= wait <= 121
    assert english.json()["error"]["message"] == (
        f"Too many attempts from here; try again in {wait} s"
    )
    zh_wait = int(chinese.headers["retry-after"])
    assert chinese.json()["error"]["message"] == f"尝试次数过多，请在 {zh_wait} 秒后再试"
