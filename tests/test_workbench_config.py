"""The workbench's per-user configuration over real HTTP: prompts, SKILL.md uploads, the
active selection, and how each send assembles them, checked in what the fake model received.

Every test runs against ``youyou serve`` in a subprocess, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from fakes.openai_server import OpenAIStream, text_reply
from mcp_kit import DEMO
from server_kit import CLOSED_REGISTRATION, Api, Workbench, with_accounts
from youyou.domain.skill_messages import violation
from youyou.workbench.assembly import DEFAULT_PROMPT_CONTENTS, MANDATORY_CHAT_INSTRUCTIONS

StartWorkbench = Callable[..., Workbench]

LOG_BODY = "BODY-MARKER: grep the error lines first, then correlate them with deploys."


def skill_md(name: str, description: str, body: str = LOG_BODY) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\n{body}\n".encode()


def upload(api: Api, content: bytes, filename: str = "SKILL.md", **kwargs: Any) -> httpx.Response:
    files = {"file": (filename, content, "text/markdown")}
    return api.http.post("/chat/skills", files=files, **kwargs)


def add_skill(api: Api, name: str, description: str, body: str = LOG_BODY) -> dict[str, Any]:
    response = upload(api, skill_md(name, description, body))
    assert response.status_code == 201, response.text
    skill: dict[str, Any] = response.json()["data"]
    return skill


def select(api: Api, prompt_id: str, skill_ids: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = api.data(
        "PUT", "/chat/configuration", json={"systemPromptId": prompt_id, "skillIds": skill_ids}
    )
    return config


def selected_prompt(api: Api) -> str:
    prompt_id: str = api.data("GET", "/chat/configuration")["selection"]["systemPromptId"]
    return prompt_id


def run_sql(db_url: str, statement: str, **params: Any) -> None:
    """Change the database behind the server's back (as another tool or a race would)."""

    async def run() -> None:
        engine = create_async_engine(db_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(text(statement), params)
        finally:
            await engine.dispose()

    asyncio.run(run())


def system_message(wb: Workbench) -> str:
    first = wb.model.requests[-1].json["messages"][0]
    assert first["role"] == "system"
    content = first["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def before_mandatory(system: str) -> str:
    """What precedes the mandatory instructions: only the opening of their section."""
    return system[: system.index(MANDATORY_CHAT_INSTRUCTIONS)].strip()


def tool_names(wb: Workbench) -> list[str]:
    return [t["function"]["name"] for t in wb.model.requests[-1].json.get("tools", [])]


def rejected(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == "VALIDATION_INVALID_ARGUMENT"
    message: str = body["error"]["message"]
    return message


# -- prompts ---------------------------------------------------------------------------------


def test_prompt_create_update_delete_trims_fields(start_workbench: StartWorkbench) -> None:
    api = start_workbench().user("pam")
    created = api.data(
        "POST", "/chat/prompts", 201, json={"label": "  DB triage \n", "content": "\t Be brief.  "}
    )
    assert (created["label"], created["content"], created["isDefault"]) == (
        "DB triage",
        "Be brief.",
        False,
    )
    assert api.data("GET", f"/chat/prompts/{created['id']}") == created
    updated = api.data(
        "PUT", f"/chat/prompts/{created['id']}", json={"label": " Net ", "content": " Ping. "}
    )
    assert (updated["id"], updated["label"], updated["content"]) == (created["id"], "Net", "Ping.")
    listed = api.data("GET", "/chat/configuration")["prompts"]
    assert [p["label"] for p in listed] == ["Default prompt", "Net"]
    chinese = api.data("GET", "/chat/configuration", headers={"Accept-Language": "zh-CN"})[
        "prompts"
    ]
    assert [p["label"] for p in chinese] == ["默认提示词", "Net"]
    api.data("DELETE", f"/chat/prompts/{created['id']}", 204)
    assert api.error("GET", f"/chat/prompts/{created['id']}", 404)["code"] == "NOT_FOUND"
    assert api.error("DELETE", f"/chat/prompts/{created['id']}", 404)["code"] == "NOT_FOUND"
    assert [p["isDefault"] for p in api.data("GET", "/chat/configuration")["prompts"]] == [True]


def test_prompt_length_limits_name_the_field(start_workbench: StartWorkbench) -> None:
    api = start_workbench().user("quinn")
    # the limits apply after trimming: 160 / 12 000 characters are fine
    ok = api.data(
        "POST",
        "/chat/prompts",
        201,
        json={"label": " " + "l" * 160 + " ", "content": "c" * 12_000 + "\n"},
    )
    assert (len(ok["label"]), len(ok["content"])) == (160, 12_000)
    label = api.error("POST", "/chat/prompts", 400, json={"label": "l" * 161, "content": "c"})
    assert label["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert "label" in label["message"] and "content" not in label["message"]
    content = api.error(
        "PUT", f"/chat/prompts/{ok['id']}", 400, json={"label": "l", "content": "c" * 12_001}
    )
    assert "content" in content["message"] and "label" not in content["message"]
    blank = api.error("POST", "/chat/prompts", 400, json={"label": "ok", "content": " \n "})
    assert "content" in blank["message"]
    assert api.data("GET", f"/chat/prompts/{ok['id']}") == ok  # the bad update changed nothing


def test_another_users_prompt_is_404(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    owner, other = wb.user("rita"), wb.user("sam")
    prompt = owner.data("POST", "/chat/prompts", 201, json={"label": "mine", "content": "secret"})
    path = f"/chat/prompts/{prompt['id']}"
    assert other.error("GET", path, 404)["code"] == "NOT_FOUND"
    body = {"label": "stolen", "content": "x"}
    assert other.error("PUT", path, 404, json=body)["code"] == "NOT_FOUND"
    assert other.error("DELETE", path, 404)["code"] == "NOT_FOUND"
    assert "secret" not in json.dumps(other.data("GET", "/chat/configuration"))
    assert owner.data("GET", path) == prompt


def test_deleting_the_selected_prompt_falls_back_to_the_default(
    start_workbench: StartWorkbench,
) -> None:
    api = start_workbench().user("tess")
    default = api.data("GET", "/chat/configuration")["selection"]["systemPromptId"]
    mine = api.data("POST", "/chat/prompts", 201, json={"label": "mine", "content": "terse"})
    assert select(api, mine["id"], [])["selection"]["systemPromptId"] == mine["id"]
    api.data("DELETE", f"/chat/prompts/{mine['id']}", 204)
    config = api.data("GET", "/chat/configuration")
    assert config["selection"] == {"systemPromptId": default, "skillIds": []}
    # the default prompt itself can be deleted; the next read ensures it again
    api.data("DELETE", f"/chat/prompts/{default}", 204)
    again = api.data("GET", "/chat/configuration")
    [prompt] = again["prompts"]
    assert (prompt["id"], prompt["isDefault"], prompt["content"]) == (
        default,
        True,
        DEFAULT_PROMPT_CONTENTS["en"],  # the language asked for; English by default
    )
    assert again["selection"]["systemPromptId"] == default


# -- SKILL.md uploads ----------------------------------------------------------------------


def test_skill_upload_returns_the_asset_without_its_body(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api, other = wb.user("uma"), wb.user("vic")
    content = skill_md("log-analysis", "Analyse application logs.")
    response = upload(api, content)
    assert response.status_code == 201, response.text
    assert "BODY-MARKER" not in response.text
    skill = response.json()["data"]
    assert skill["filename"] == "SKILL.md"
    assert (skill["name"], skill["label"]) == ("log-analysis", "log-analysis")
    assert skill["description"] == skill["contentPreview"] == "Analyse application logs."
    assert skill["sizeBytes"] == len(content)
    config = api.http.get("/chat/configuration")
    assert "BODY-MARKER" not in config.text
    assert [s["id"] for s in config.json()["data"]["skills"]] == [skill["id"]]

    markdown = api.http.get(f"/chat/skills/{skill['id']}/content")
    assert markdown.status_code == 200
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.strip() == content.decode().strip()
    for method in ("GET", "DELETE"):
        path = f"/chat/skills/{skill['id']}" + ("/content" if method == "GET" else "")
        assert other.error(method, path, 404)["code"] == "NOT_FOUND"
    assert other.data("GET", "/chat/configuration")["skills"] == []


def test_skill_name_is_unique_per_owner(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    api, other = wb.user("wes"), wb.user("xia")
    add_skill(api, "disk-full", "Free disk space.")
    clash = upload(api, skill_md("disk-full", "Another description."))
    assert clash.status_code == 409
    assert clash.json()["error"]["code"] == "SKILL_NAME_CONFLICT"
    assert len(api.data("GET", "/chat/configuration")["skills"]) == 1
    theirs = add_skill(other, "disk-full", "Their own runbook.")
    assert theirs["description"] == "Their own runbook."


SINGLE_RULE_CASES = [
    ("skill.md", skill_md("ok", "d"), "skill.filename"),
    ("dir/SKILL.md", skill_md("ok", "d"), "skill.filename"),
    ("SKILL.md", b"", "skill.empty"),
    ("SKILL.md", skill_md("ok", "d", "x" * 65_537), "skill.too_large"),
    ("SKILL.md", b"---\nname: ok\ndescription: \xff\xfe\n---\nbody", "skill.encoding"),
    ("SKILL.md", b"# Runbook\n\nno frontmatter here", "skill.frontmatter_missing"),
    ("SKILL.md", b"---\n- name\n- description\n---\nbody", "skill.frontmatter_not_mapping"),
    ("SKILL.md", b"---\ndescription: d\n---\nbody", "skill.name_missing"),
    ("SKILL.md", skill_md("Log-Analysis", "d"), "skill.name_charset"),
    ("SKILL.md", skill_md("log--analysis", "d"), "skill.name_double_hyphen"),
    ("SKILL.md", skill_md("-log", "d"), "skill.name_hyphen_edge"),
    ("SKILL.md", skill_md("a" * 65, "d"), "skill.name_length"),
    ("SKILL.md", skill_md("ok", '""'), "skill.description_empty"),
    ("SKILL.md", skill_md("ok", "d" * 1025), "skill.description_too_long"),
]


def test_each_skill_md_rule_is_enforced_by_the_upload(start_workbench: StartWorkbench) -> None:
    api = start_workbench().user("yann")
    for filename, content, rule in SINGLE_RULE_CASES:
        expected = violation(rule, length=65 if rule == "skill.name_length" else 1025)
        zh = rejected(upload(api, content, filename, headers={"Accept-Language": "zh-CN"}))
        assert expected.message_zh in zh, (rule, zh)
        en = rejected(upload(api, content, filename, headers={"Accept-Language": "en"}))
        assert expected.message_en in en, (rule, en)
    assert api.data("GET", "/chat/configuration")["skills"] == []
    # the limits themselves are fine: 64-character name, 1024-character description
    edge = add_skill(api, "a" * 64, "d" * 1024)
    assert (len(edge["name"]), len(edge["description"])) == (64, 1024)


def test_a_file_breaking_several_rules_reports_all_of_them(
    start_workbench: StartWorkbench,
) -> None:
    api = start_workbench().user("zoe")
    content = b"---\nname: -Bad--Name\ndescription: '   '\n---\nbody"
    rules = [
        "skill.filename",
        "skill.name_charset",
        "skill.name_hyphen_edge",
        "skill.name_double_hyphen",
        "skill.description_empty",
    ]
    zh = rejected(upload(api, content, "skill.md", headers={"Accept-Language": "zh"}))
    en = rejected(upload(api, content, "skill.md", headers={"Accept-Language": "en-US,en"}))
    for rule in rules:
        assert violation(rule).message_zh in zh, rule
        assert violation(rule).message_en in en, rule
    assert zh.startswith("请求参数无效") and en.startswith("Invalid request argument")


def test_deleting_a_skill_removes_it_from_the_selection(start_workbench: StartWorkbench) -> None:
    api = start_workbench().user("abe")
    first = add_skill(api, "log-analysis", "Analyse logs.")
    second = add_skill(api, "disk-full", "Free disk space.")
    prompt = selected_prompt(api)
    select(api, prompt, [first["id"], second["id"]])
    api.data("DELETE", f"/chat/skills/{first['id']}", 204)
    config = api.data("GET", "/chat/configuration")
    assert config["selection"]["skillIds"] == [second["id"]]
    assert [s["id"] for s in config["skills"]] == [second["id"]]
    assert api.error("GET", f"/chat/skills/{first['id']}/content", 404)["code"] == "NOT_FOUND"
    assert api.error("DELETE", f"/chat/skills/{first['id']}", 404)["code"] == "NOT_FOUND"


# -- the selection -------------------------------------------------------------------------


def test_configuration_rejects_bad_ids_without_partial_writes(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api, other = wb.user("bea"), wb.user("cal")
    mine = add_skill(api, "log-analysis", "Analyse logs.")
    extra = add_skill(api, "disk-full", "Free disk space.")
    theirs = add_skill(other, "their-skill", "Not yours.")
    their_prompt = other.data("POST", "/chat/prompts", 201, json={"label": "t", "content": "t"})
    prompt = api.data("POST", "/chat/prompts", 201, json={"label": "p", "content": "p"})
    before = select(api, prompt["id"], [mine["id"]])["selection"]
    for body in [
        {"systemPromptId": "no-such-prompt", "skillIds": [extra["id"]]},
        {"systemPromptId": their_prompt["id"], "skillIds": []},
        {"systemPromptId": prompt["id"], "skillIds": [extra["id"], "no-such-skill"]},
        {"systemPromptId": prompt["id"], "skillIds": [extra["id"], theirs["id"]]},
    ]:
        error = api.error("PUT", "/chat/configuration", 400, json=body)
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT"
        assert api.data("GET", "/chat/configuration")["selection"] == before, body
    collapsed = select(api, prompt["id"], [extra["id"], mine["id"], extra["id"], mine["id"]])
    assert collapsed["selection"]["skillIds"] == [extra["id"], mine["id"]]


# -- assembly on every send ------------------------------------------------------------------


def test_each_send_assembles_instructions_prompt_and_skill_catalog(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("dan")
    session = api.new_session()
    api.send(session["id"], "hello")
    assert before_mandatory(system_message(wb)) == "<system_instructions>"
    assert DEFAULT_PROMPT_CONTENTS["en"] in system_message(wb)
    assert "## Available Skills" not in system_message(wb)
    assert "get_current_time" in tool_names(wb) and "load_skill" not in tool_names(wb)

    skill = add_skill(api, "log-analysis", "Analyse application logs.")
    add_skill(api, "unselected", "Never listed.")
    prompt = api.data(
        "POST", "/chat/prompts", 201, json={"label": "sre", "content": "PROMPT-ONE: be terse."}
    )
    select(api, prompt["id"], [skill["id"]])
    api.send(session["id"], "the api returns 500s")
    system = system_message(wb)
    assert before_mandatory(system) == "<system_instructions>"
    mandatory = system.index(MANDATORY_CHAT_INSTRUCTIONS)
    assert mandatory < system.index("PROMPT-ONE") < system.index("## Available Skills")
    assert "- **log-analysis**: Analyse application logs." in system
    assert "BODY-MARKER" not in system and "unselected" not in system
    assert not any(content in system for content in DEFAULT_PROMPT_CONTENTS.values())
    assert {"get_current_time", "load_skill"} <= set(tool_names(wb))

    # the prompt's new text is read on the next send; the selection was not saved again
    api.data("PUT", f"/chat/prompts/{prompt['id']}", json={"label": "sre", "content": "PROMPT-TWO"})
    api.send(session["id"], "and now?")
    assert "PROMPT-TWO" in system_message(wb) and "PROMPT-ONE" not in system_message(wb)


def test_stale_skill_ids_are_filtered_from_the_send_and_the_configuration(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    wb = start_workbench()
    api = wb.user("eve")
    gone = add_skill(api, "gone-skill", "Deleted behind the API's back.")
    kept = add_skill(api, "kept-skill", "Still here.")
    prompt = selected_prompt(api)
    select(api, prompt, [gone["id"], kept["id"]])
    run_sql(workbench_db, "DELETE FROM wb_skills WHERE id = :id", id=gone["id"])
    session = api.new_session()
    api.send(session["id"], "hello")
    assert "gone-skill" not in system_message(wb)
    assert "- **kept-skill**: Still here." in system_message(wb)
    assert api.data("GET", "/chat/configuration")["selection"]["skillIds"] == [kept["id"]]

    # an unknown id written into the selection row is dropped just the same
    ids = json.dumps(["no-such-skill"])
    run_sql(workbench_db, "UPDATE wb_selections SET skill_ids = :ids", ids=ids)
    api.send(session["id"], "again")
    assert "## Available Skills" not in system_message(wb)
    assert "load_skill" not in tool_names(wb)
    assert api.data("GET", "/chat/configuration")["selection"]["skillIds"] == []


def test_load_skill_shows_only_the_first_line_but_the_model_gets_the_body(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("fay")
    skill = add_skill(api, "log-analysis", "Analyse application logs.")
    select(api, selected_prompt(api), [skill["id"]])
    session = api.new_session()
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "load_skill", '{"skill_name":"log-analysis"}'))
        .finish("tool_calls")
        .reply(),
        text_reply("Grep the errors first."),
    )
    frames = api.send(session["id"], "the api returns 500s")
    [end] = [f for f in frames if f.event == "tool_call_end"]
    assert end.data["toolName"] == "load_skill"
    assert end.data["output"] == "Loaded skill: log-analysis"
    assert end.data["isError"] is False
    tool_message = wb.model.requests[-1].json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert tool_message["content"].startswith("Loaded skill: log-analysis")
    assert "BODY-MARKER" in tool_message["content"]
    history = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    [call] = [c for m in history for c in m["toolCalls"]]
    assert (call["callId"], call["output"]) == ("call_1", "Loaded skill: log-analysis")
    assert "BODY-MARKER" not in json.dumps(history)

    # a name outside the selection is "not available", listing what can be loaded
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_2", "load_skill", '{"skill_name":"other-skill"}'))
        .finish("tool_calls")
        .reply(),
        text_reply("I cannot load it."),
    )
    frames = api.send(session["id"], "use other-skill")
    [end] = [f for f in frames if f.event == "tool_call_end"]
    assert "not available" in end.data["output"] or "不可用" in end.data["output"]
    reply = wb.model.requests[-1].json["messages"][-1]["content"]
    assert "is not available" in reply and "log-analysis" in reply
    assert "BODY-MARKER" not in reply


def test_mcp_tools_are_offered_only_to_the_users_a_server_allows(
    start_workbench: StartWorkbench,
) -> None:
    demo = (
        '[[mcp_servers]]\nid = "demo"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(DEMO))}, "stdio"]\n'
        'users = ["alice"]\n'
    )
    wb = with_accounts(start_workbench, ("alice", "bob"), extra=CLOSED_REGISTRATION + demo)
    alice, bob = wb.signed_in("alice"), wb.signed_in("bob")
    bob.send(bob.new_session()["id"], "hello")
    assert not [name for name in tool_names(wb) if name.startswith("demo__")]

    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "demo__echo", '{"text":"PING-42"}'))
        .finish("tool_calls")
        .reply(),
        text_reply("It answered PING-42."),
    )
    frames = alice.send(alice.new_session()["id"], "echo PING-42 through the demo server")
    assert {"demo__echo", "demo__write_note", "get_current_time"} <= set(tool_names(wb))
    [end] = [f for f in frames if f.event == "tool_call_end"]
    assert (end.data["toolName"], end.data["output"], end.data["isError"]) == (
        "demo__echo",
        "PING-42",
        False,
    )
    tool_message = wb.model.requests[-1].json["messages"][-1]
    assert (tool_message["tool_call_id"], tool_message["content"]) == ("call_1", "PING-42")


def test_explicit_skill_injects_its_body_for_that_request_only(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("gil")
    skill = add_skill(api, "log-analysis", "Analyse application logs.")
    add_skill(api, "not-selected", "Uploaded, never selected.")
    select(api, selected_prompt(api), [skill["id"]])
    session = api.new_session()
    api.send(session["id"], "/log-analysis why 500s on api-7?")
    injected = json.dumps(wb.model.requests[-1].json["messages"], ensure_ascii=False)
    assert "<skill>" in injected and "BODY-MARKER" in injected
    api.send(session["id"], "thanks")
    assert "BODY-MARKER" not in json.dumps(wb.model.requests[-1].json["messages"])
    history = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    assert [m["role"] for m in history] == ["user", "assistant"] * 2
    assert "BODY-MARKER" not in json.dumps(history) and "<skill>" not in json.dumps(history)

    requests = len(wb.model.requests)
    for command in ("/no-such-skill help", "/not-selected help"):
        error = api.error(
            "POST", f"/chat/sessions/{session['id']}/messages", 400, json={"content": command}
        )
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT"
    assert len(wb.model.requests) == requests
    assert len(api.data("GET", f"/chat/sessions/{session['id']}/messages")) == 4
    assert api.data("GET", f"/chat/sessions/{session['id']}")["messageCount"] == 4


PLAIN_MODEL = (
    '[[providers]]\nid = "plain"\ntype = "openai"\nbase_url = "{url}"\nmax_attempts = 1\n\n'
    '[[providers.models]]\nid = "plain-model"\ncontext_window = 128000\n'
    'capabilities = ["streaming"]\n'
)


def test_a_model_without_tool_use_answers_without_tools_and_explicit_skills_still_work(
    start_workbench: StartWorkbench, fake_model: Any
) -> None:
    wb = start_workbench(extra=PLAIN_MODEL.format(url=fake_model.base_url))
    api = wb.user("noa")
    models = {m["id"]: m for m in api.data("GET", "/chat/models")}
    assert "tool_use" not in models["plain-model"]["capabilities"]
    skill = add_skill(api, "log-analysis", "Analyse application logs.")
    select(api, selected_prompt(api), [skill["id"]])
    session = api.new_session(modelId="plain-model")

    frames = api.send(session["id"], "what time is it?")
    assert frames[-1].event == "turn_complete", frames
    assert "tools" not in wb.model.requests[-1].json
    assert "load_skill" not in system_message(wb)  # no catalog that points at a missing tool

    frames = api.send(session["id"], "/log-analysis why 500s on api-7?")
    assert frames[-1].event == "turn_complete", frames
    request = wb.model.requests[-1].json
    assert "tools" not in request
    assert "BODY-MARKER" in json.dumps(request["messages"])
