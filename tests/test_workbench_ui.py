"""The web UI in a real browser: Playwright drives Debian's Chromium against ``youyou serve``
with the fake OpenAI model behind it. Elements are found by role and accessible name.

Runs on SQLite only: the API suite covers PostgreSQL. Screenshots of every main screen, light
and dark, go to ``$YOUYOU_UI_SCREENSHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.sync_api import Browser, FilePayload, Page, expect, sync_playwright

from fakes.http_server import RecordedRequest, StreamReply
from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Api, Workbench

StartWorkbench = Callable[..., Workbench]
OpenPage = Callable[..., Page]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "correct horse"
TIMEOUT_MS = 30_000  # generous: a loaded 2-core machine runs the server, Chromium and the tests
GOOD_SKILL = b"""---
name: disk-triage
description: Find what fills a disk and free space safely.
---
# Disk triage

1. `df -h` to see which mount is full.
"""
BAD_SKILL = b"""---
name: Disk--Triage-
---
body
"""
# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """The UI suite runs on SQLite only."""
    return migrated_sqlite_url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is required in CI (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """``open_page(url, user=api)`` → a 1280×720 page, signed in as ``api``'s user if given.

    Uncaught script errors fail the test."""
    contexts = []
    errors: list[str] = []

    def open_(
        url: str,
        *,
        user: Api | None = None,
        locale: str = "en-US",
        scheme: Literal["light", "dark"] = "light",
    ) -> Page:
        context = browser.new_context(
            locale=locale, color_scheme=scheme, viewport={"width": 1280, "height": 720}
        )
        contexts.append(context)
        if user is not None:
            me = user.data("GET", "/auth/me")
            saved = json.dumps(json.dumps({"token": user.token, "user": me}))
            context.add_init_script(
                "if (!localStorage.getItem('youyou.auth'))"
                f" localStorage.setItem('youyou.auth', {saved});"
            )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert errors == []


def send(page: Page, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def answer(page: Page) -> Any:
    return page.get_by_role("article", name=re.compile("^Assistant answer")).last


def payload(name: str, mime_type: str, buffer: bytes) -> FilePayload:
    return {"name": name, "mimeType": mime_type, "buffer": buffer}


def slow_reply(*pieces: str, delay_s: float) -> StreamReply:
    return OpenAIStream().text(*pieces, delay_s=delay_s).finish().usage(10, 5).reply()


def wait_for(condition: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def screenshots_dir(tmp_path: Path) -> Path:
    path = Path(os.environ.get("YOUYOU_UI_SCREENSHOTS") or tmp_path / "screens")
    path.mkdir(parents=True, exist_ok=True)
    return path


# -- sign in ------------------------------------------------------------------------------------


def test_register_sign_out_and_sign_in_again(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    page = open_page(wb.url)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_role("button", name="No account yet? Register").click()
    page.get_by_role("textbox", name="Username").fill("ines")
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account and sign in").click()
    expect(page.get_by_role("link", name="Chat")).to_have_attribute("aria-current", "page")
    expect(page.get_by_text("ines")).to_be_visible()

    page.get_by_role("button", name="Sign out", exact=True).click()
    page.get_by_role("textbox", name="Username").fill("ines")
    page.get_by_role("textbox", name="Password").fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password")
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    sidebar = page.get_by_role("complementary", name="Sessions")
    expect(sidebar.get_by_role("button", name="New session")).to_be_visible()

    page.keyboard.press("Alt+n")
    dialog = page.get_by_role("dialog", name="New session")
    dialog.get_by_role("textbox", name="Title").fill("api-7 latency")
    expect(dialog.get_by_role("combobox", name="Model")).to_have_text(
        "fake-model (128,000-token context)"
    )
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="api-7 latency")).to_be_visible()
    expect(sidebar.get_by_role("link", name=re.compile("api-7 latency"))).to_have_attribute(
        "aria-current", "page"
    )


def test_a_refused_password_is_explained_and_sign_out_everywhere_ends_other_sessions(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    page = open_page(wb.url)
    page.get_by_role("button", name="No account yet? Register").click()
    page.get_by_role("textbox", name="Username").fill("olga")
    page.get_by_role("textbox", name="Password").fill("password1")
    page.get_by_role("button", name="Create account and sign in").click()
    expect(page.get_by_role("alert")).to_have_text(
        "This password is too common or too close to the username; choose another"
    )
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account and sign in").click()
    expect(page.get_by_text("olga")).to_be_visible()
    other_device = wb.signed_in("olga")

    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert other_device.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"


def test_registration_is_hidden_when_the_server_turns_it_off(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench(extra="[server]\nregistration = false")
    page = open_page(wb.url)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("Register"))).to_have_count(0)


def test_switching_to_english(start_workbench: StartWorkbench, open_page: OpenPage) -> None:
    wb = start_workbench()
    wb.user("jun")
    page = open_page(wb.url, locale="zh-CN")
    expect(page.get_by_role("heading", name="登录")).to_be_visible()
    page.get_by_role("combobox", name="语言 / Language").select_option("English")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_role("textbox", name="Username").fill("jun")
    page.get_by_role("textbox", name="Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    # The server answers in the UI's language too.
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password")


# -- chat ---------------------------------------------------------------------------------------


def test_streamed_markdown_is_highlighted_and_never_runs_html(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    wb.model.enqueue(
        OpenAIStream()
        .text(
            "Free space **first**. <script>window.pwned = 1</script>\n",
            '<img src=x onerror="window.pwned = 2">\n\n',
            "```python\ndef usage():\n    return 42\n```\n",
            "[bad](javascript:window.pwned=3) and [runbook](https://example.com/disk)",
        )
        .finish()
        .usage(10, 5)
        .reply()
    )
    api = wb.user("kim")
    session = api.new_session(title="db-1 disk full")
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    expect(page.get_by_role("heading", name="db-1 disk full")).to_be_visible()
    send(page, "Disk full on db-1")

    reply = answer(page)
    expect(reply.get_by_role("link", name="runbook")).to_have_attribute(
        "href", "https://example.com/disk"
    )
    expect(reply.get_by_role("link", name="runbook")).to_have_attribute(
        "rel", "noopener noreferrer"
    )
    expect(reply.locator("strong")).to_have_text("first")
    expect(reply.get_by_text("<script>window.pwned = 1</script>")).to_be_visible()
    expect(reply.get_by_text('<img src=x onerror="window.pwned = 2">')).to_be_visible()
    expect(reply.get_by_role("link", name="bad")).to_have_count(0)
    expect(reply.locator("img, script")).to_have_count(0)
    keywords = reply.locator("pre code .tok-kw")
    expect(keywords).to_have_text(["def", "return"])
    expect(reply.locator("pre code .tok-num")).to_have_text("42")
    assert page.evaluate("window.pwned") is None
    expect(page.get_by_role("article", name="Your message")).to_contain_text("Disk full on db-1")


def test_tool_call_card_shows_arguments_duration_and_output(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", '{"timezone": "Asia/Shanghai"}'))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("It is time to rotate the logs."),
    )
    api = wb.user("lena")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "What time is it in Shanghai?")
    expect(answer(page)).to_contain_text("It is time to rotate the logs.")
    card = page.get_by_role("group", name="Tool call get_current_time")
    expect(card).to_contain_text(re.compile(r"done · \d+ ms"))
    card.get_by_text("get_current_time").click()
    expect(card).to_contain_text('"timezone": "Asia/Shanghai"')
    expect(card).to_contain_text("+08:00")


def test_each_answer_shows_what_its_turn_used_live_and_after_a_reload(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench(model_keys="input_price_per_mtok = 2.5\noutput_price_per_mtok = 10")
    wb.model.enqueue(text_reply("Rotate the logs.", prompt=1200, completion=85))
    api = wb.user("uma")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "What now?")
    line = "1200 in · 85 out tokens · cost 0.003850"
    expect(answer(page)).to_contain_text("Rotate the logs.")
    expect(answer(page).locator(".answer-usage")).to_have_text(line)
    page.reload()
    expect(answer(page).locator(".answer-usage")).to_have_text(line)


def test_stop_button_and_escape_cancel_and_mark_the_answer_incomplete(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    pieces = ("Checking the disk", *[" …"] * 20)
    wb.model.enqueue(slow_reply(*pieces, delay_s=0.5), slow_reply(*pieces, delay_s=0.5))
    api = wb.user("mia")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)

    send(page, "first question")
    expect(answer(page)).to_contain_text("Checking the disk")
    page.get_by_role("button", name="Stop (Esc)").click()
    expect(answer(page)).to_contain_text("Incomplete answer")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()

    send(page, "second question")
    expect(answer(page)).to_contain_text("Checking the disk")
    page.keyboard.press("Escape")
    expect(page.get_by_role("article", name="Assistant answer (incomplete)")).to_have_count(2)

    page.reload()  # the stored history says the same
    expect(page.get_by_role("article", name="Assistant answer (incomplete)")).to_have_count(2)


def test_reload_mid_answer_reattaches_to_the_running_turn(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    wb.model.enqueue(slow_reply("alpha", " beta", " gamma", " omega", delay_s=0.6))
    api = wb.user("nico")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "long answer please")
    expect(answer(page)).to_contain_text("alpha")
    page.reload()
    expect(answer(page)).to_contain_text("alpha beta gamma omega")
    expect(page.get_by_role("article", name="Assistant answer")).to_have_count(1)
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def test_the_wait_for_the_model_is_shown_until_the_answer_starts(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench(extra="[agent]\nmodel_wait_notice_ms = 300")
    wb.model.enqueue(OpenAIStream().delay(2.0).text("finally").finish().usage(5, 2).reply())
    api = wb.user("wren")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "are you there?")
    status = page.get_by_role("status").filter(has_text="Waiting for the model")
    expect(status).to_have_text(re.compile(r"^Waiting for the model… 1 s$"))
    expect(answer(page)).to_contain_text("finally")
    expect(status).to_have_count(0)


def test_dropped_connection_reattaches_after_the_last_event(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    wb.model.enqueue(slow_reply("alpha", " beta", " gamma", " omega", delay_s=0.8))
    api = wb.user("noor")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "long answer please")
    expect(answer(page)).to_contain_text("alpha")
    # The next read of the answer's stream fails the way a dropped network does.
    page.evaluate(
        """() => {
            const read = ReadableStreamDefaultReader.prototype.read;
            ReadableStreamDefaultReader.prototype.read = function () {
                ReadableStreamDefaultReader.prototype.read = read;
                this.cancel();
                return Promise.reject(new TypeError("network error"));
            };
        }"""
    )
    # the body: the dim usage line under it follows once the turn is complete
    expect(answer(page).locator(".msg-body")).to_have_text(re.compile("alpha beta gamma omega$"))
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    assert f'GET /chat/sessions/{session["id"]}/stream HTTP/1.1" 200' in wb.server.log()


def test_draft_survives_reload_per_session_until_sent(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    api = wb.user("olga")
    first = api.new_session(title="first")
    api.new_session(title="second")
    page = open_page(f"{wb.url}/#/chat/{first['id']}", user=api)
    box = page.get_by_role("textbox", name="Message")
    box.fill("half-typed: check the replica lag")
    page.reload()
    expect(box).to_have_value("half-typed: check the replica lag")
    page.get_by_role("link", name="second").click()
    expect(page.get_by_role("heading", name="second")).to_be_visible()
    expect(box).to_have_value("")
    page.get_by_role("link", name="first").click()
    expect(box).to_have_value("half-typed: check the replica lag")
    box.press("Enter")
    expect(answer(page)).to_contain_text("ok")
    page.reload()
    expect(page.get_by_role("article", name="Your message")).to_contain_text("replica lag")
    expect(box).to_have_value("")


def test_attachments_are_checked_and_sent_as_content_blocks(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    # The text-file limit shown and checked is the server's configured message size.
    wb = start_workbench(extra="[server]\nmax_message_chars = 524288")
    api = wb.user("pia")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files(
        [
            payload("notes.log", "text/plain", b"disk at 99%\n"),
            payload("core.bin", "application/octet-stream", b"\0\1"),
            payload("graph.png", "image/png", PNG),
        ]
    )
    expect(page.get_by_role("alert")).to_contain_text(
        "core.bin: only images and text files can be attached."
    )
    composer = page.get_by_role("form", name="Write a message")
    composer.evaluate(
        """(form, png) => {
            const bytes = Uint8Array.from(atob(png), (c) => c.charCodeAt(0));
            const pasted = new DataTransfer();
            pasted.items.add(new File([bytes], "", { type: "image/png" }));
            form.querySelector("textarea").dispatchEvent(
                new ClipboardEvent("paste", { clipboardData: pasted, bubbles: true }));
            const dropped = new DataTransfer();
            const big = "x".repeat(600 * 1024);
            dropped.items.add(new File([big], "big.log", { type: "text/plain" }));
            form.dispatchEvent(new DragEvent("drop", { dataTransfer: dropped, bubbles: true }));
        }""",
        base64.b64encode(PNG).decode(),
    )
    expect(page.get_by_role("alert").filter(has_text="big.log")).to_have_text(
        re.compile("big.log is larger than 512.0 KB; not attached.")
    )
    expect(page.get_by_role("button", name="Remove attachment pasted image")).to_be_visible()
    expect(page.get_by_role("button", name="Remove attachment notes.log")).to_be_visible()
    expect(page.get_by_role("button", name="Remove attachment graph.png")).to_be_visible()
    send(page, "see attached")
    expect(answer(page)).to_contain_text("ok")
    mine = page.get_by_role("article", name="Your message")
    expect(mine.get_by_role("img", name="Attached image")).to_have_count(2)
    expect(mine).to_contain_text("notes.log")
    expect(page.get_by_role("button", name="Remove attachment notes.log")).to_have_count(0)
    body = json.dumps(wb.model.requests[-1].json)
    assert "disk at 99%" in body
    assert "data:image/png;base64," in body


def test_attaching_waits_until_the_session_has_loaded(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    """A file attached while a session loads was dropped when the session arrived."""
    wb = start_workbench()
    api = wb.user("ria")
    first, second = api.new_session(), api.new_session()
    page = open_page(f"{wb.url}/#/chat/{first['id']}", user=api)
    attach = page.get_by_role("button", name="Attach file")
    expect(attach).to_be_enabled()
    held: list[Any] = []
    page.route(f"**/chat/sessions/{second['id']}/messages", lambda route: held.append(route))
    page.evaluate("id => { location.hash = `#/chat/${id}`; }", second["id"])
    expect(attach).to_be_disabled()
    # The button is disabled at once; the messages request may leave a moment later, and a
    # route handler only runs while Playwright is pumping events, so wait inside the page.
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert len(held) == 1
    held[0].continue_()
    expect(attach).to_be_enabled()
    with page.expect_file_chooser() as chooser:
        attach.click()
    chooser.value.set_files([payload("notes.log", "text/plain", b"disk at 99%\n")])
    expect(page.get_by_role("button", name="Remove attachment notes.log")).to_be_visible()


def test_a_model_without_tool_use_is_said_to_have_no_tools(
    start_workbench: StartWorkbench, open_page: OpenPage, fake_model: Any
) -> None:
    plain = (
        '[[providers]]\nid = "plain"\ntype = "openai"\nbase_url = "{url}"\n\n'
        '[[providers.models]]\nid = "plain-model"\ndisplay_name = "Plain"\n'
        "context_window = 128000\n"
        'capabilities = ["streaming"]\n'
    )
    wb = start_workbench(extra=plain.format(url=fake_model.base_url))
    api = wb.user("uma")
    tooled = api.new_session(modelId="fake-model")
    plain_session = api.new_session(modelId="plain-model")
    page = open_page(f"{wb.url}/#/chat/{plain_session['id']}", user=api)
    region = page.get_by_role("region", name="Conversation")
    expect(region).to_contain_text("Plain · tools unavailable with this model")
    page.evaluate("id => { location.hash = `#/chat/${id}`; }", tooled["id"])
    expect(region).to_contain_text("fake-model")
    expect(region).not_to_contain_text("tools unavailable")


def test_session_list_searches_and_loads_more_on_scroll(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    api = wb.user("quinn")
    for n in range(1, 26):
        api.new_session(title=f"incident {n:02d}")
    page = open_page(wb.url, user=api)
    sessions = page.get_by_role("list", name="Sessions").get_by_role("link")
    expect(sessions).to_have_count(20)
    expect(sessions.first).to_have_text(re.compile("incident 25"))
    sessions.last.scroll_into_view_if_needed()
    expect(sessions).to_have_count(25)
    page.keyboard.press("Control+k")
    expect(page.get_by_role("searchbox", name="Search sessions")).to_be_focused()
    page.keyboard.type("incident 07")
    expect(sessions).to_have_count(1)
    expect(sessions).to_have_text(re.compile("incident 07"))


# -- context and memory -------------------------------------------------------------------------


def test_full_context_blocks_sending_until_compacted(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench(context_window=430)
    wb.model.enqueue(text_reply("x " * 300))
    api = wb.user("rosa")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "dump the logs")
    meter = page.get_by_role("meter", name="Context usage")
    expect(meter).to_have_attribute("aria-valuenow", re.compile(r"^9[5-9]"))
    expect(page.locator(".context-bar")).to_have_attribute("data-level", "danger")
    expect(page.get_by_role("alert")).to_contain_text("Compact the session memory to continue.")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_disabled()
    requests = len(wb.model.requests)
    send(page, "one more")
    expect(page.get_by_role("article", name="Your message")).to_have_count(1)
    assert len(wb.model.requests) == requests

    wb.model.enqueue(text_reply("Summary: the logs were dumped."))
    page.get_by_role("button", name="Compact now").click()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    expect(page.get_by_role("alert")).to_have_count(0)
    assert float(meter.get_attribute("aria-valuenow") or "100") < 95
    expect(page.get_by_role("article", name="Your message")).to_contain_text("Compacted")
    expect(page.get_by_role("textbox", name="Message")).to_have_value("one more")
    page.get_by_text("The 2 earlier messages were compacted").click()
    expect(page.get_by_text("Summary: the logs were dumped.")).to_be_visible()


def test_memory_mode_switch_is_saved(start_workbench: StartWorkbench, open_page: OpenPage) -> None:
    wb = start_workbench()
    api = wb.user("sam")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    mode = page.get_by_role("combobox", name="Memory mode")
    expect(mode).to_have_value("every_30_turns")
    mode.select_option("Manual")
    expect(page.get_by_role("status").filter(has_text="Memory mode is now: Manual")).to_be_visible()
    stored = api.data("GET", f"/chat/sessions/{session['id']}")
    assert stored["memory"]["mode"] == "manual"
    page.reload()
    expect(mode).to_have_value("manual")


def _extraction(request: RecordedRequest) -> Any:
    """The memory model's answer when asked to extract; "ok" to anything else."""
    if "long-term memory" in json.dumps(request.json["messages"][0]):
        mutation = {"op": "create", "content": "Runs the payments cluster", "reason": "role"}
        return text_reply(json.dumps({"mutations": [mutation]}))
    return text_reply("ok")


def test_memories_page_lists_and_deletes(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench(memory=True, extra="[agent]\nmemory_checkpoint_interval = 1")
    wb.model.default = _extraction
    api = wb.user("tara")
    session = api.new_session(title="payments outage")
    api.send(session["id"], "I run the payments cluster")
    wait_for(lambda: api.data("GET", "/chat/memories"))
    page = open_page(f"{wb.url}/#/memories", user=api)
    memories = page.get_by_role("list", name="Memories")
    expect(memories).to_contain_text("Runs the payments cluster")
    expect(memories.get_by_role("link", name="payments outage")).to_have_attribute(
        "href", f"#/chat/{session['id']}"
    )
    page.get_by_role("button", name="Delete memory: Runs the payments cluster").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(memories).to_have_text("No long-term memories yet.")
    assert api.data("GET", "/chat/memories") == []


# -- configuration ------------------------------------------------------------------------------


def test_configuration_prompts_skills_and_selection(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    api = wb.user("uma")
    page = open_page(f"{wb.url}/#/config", user=api)
    prompts = page.get_by_role("group", name="Active prompt")
    expect(prompts.get_by_role("listitem")).to_have_count(1)
    expect(prompts.get_by_role("listitem")).to_contain_text("Default")

    page.get_by_role("button", name="New prompt").click()
    dialog = page.get_by_role("dialog", name="New prompt")
    dialog.get_by_role("textbox", name="Name").fill("Runbook style")
    dialog.get_by_role("textbox", name="Content").fill("Answer as numbered runbook steps.")
    dialog.get_by_role("button", name="Save").click()
    expect(prompts.get_by_role("radio", name="Runbook style")).not_to_be_checked()

    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Choose SKILL.md file").click()
    chooser.value.set_files(payload("SKILL.md", "text/markdown", BAD_SKILL))
    rules = page.get_by_role("list", name="Rules SKILL.md (Disk--Triage-) fails").get_by_role(
        "listitem"
    )
    expect(rules).to_have_text(
        [
            "The skill name may only contain lowercase letters a-z, digits 0-9 and hyphens.",
            "The skill name must not start or end with a hyphen.",
            "The skill name must not contain two hyphens in a row (--).",
            "The frontmatter of SKILL.md has no description.",
        ]
    )

    page.get_by_role("group", name="Upload SKILL.md").evaluate(
        """(zone, text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], "SKILL.md", { type: "text/markdown" }));
            zone.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true }));
        }""",
        GOOD_SKILL.decode(),
    )
    skills = page.get_by_role("group", name="Skills available in chats")
    expect(skills.get_by_role("checkbox", name="disk-triage")).to_be_visible()
    expect(page.get_by_role("list", name="Rules SKILL.md (Disk--Triage-) fails")).to_have_count(0)

    page.get_by_role("button", name="View SKILL.md of disk-triage").click()
    viewer = page.get_by_role("dialog", name="SKILL.md of disk-triage")
    expect(viewer).to_contain_text("df -h")
    viewer.get_by_role("button", name="Close").click()

    prompts.get_by_role("radio", name="Runbook style").check()
    skills.get_by_role("checkbox", name="disk-triage").check()
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("button", name="Save selection").click()
    expect(page.get_by_text("Selection saved.")).to_be_visible()
    config = api.data("GET", "/chat/configuration")
    chosen = next(p for p in config["prompts"] if p["label"] == "Runbook style")
    assert config["selection"] == {
        "systemPromptId": chosen["id"],
        "skillIds": [config["skills"][0]["id"]],
    }

    page.get_by_role("button", name="Edit prompt Runbook style").click()
    editor = page.get_by_role("dialog", name="Edit prompt Runbook style")
    content = editor.get_by_role("textbox", name="Content")
    expect(content).to_have_value("Answer as numbered runbook steps.")
    content.fill("Answer as short numbered steps.")
    editor.get_by_role("button", name="Save").click()
    expect(prompts).to_contain_text("Answer as short numbered steps.")
    page.get_by_role("button", name="Delete prompt Runbook style").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(prompts.get_by_role("listitem")).to_have_count(1)
    expect(prompts.get_by_role("radio")).to_be_checked()  # the default takes over

    # `/` at the start of a message offers the selected skills.
    session = api.new_session()
    page.goto(f"{wb.url}/#/chat/{session['id']}")
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_be_editable()
    box.press_sequentially("/di")
    expect(page.get_by_role("listbox", name="Skills").get_by_role("option")).to_have_text(
        re.compile("/disk-triage")
    )
    box.press("Enter")
    expect(box).to_have_value("/disk-triage ")


# -- the pieces on their own, in the page ------------------------------------------------------


def test_stream_parser_and_markdown_in_the_page(
    start_workbench: StartWorkbench, open_page: OpenPage
) -> None:
    wb = start_workbench()
    page = open_page(wb.url)
    wire = (
        ": keep-alive\r\n\r\n"
        ": waiting for the model 3s\n\n"
        'id: 1\r\nevent: text_delta\r\ndata: {"text":"a\\nb"}\r\n\r\n'
        "id: 2\nevent: turn_complete\ndata: {}\n\n"
    )
    frames = page.evaluate(
        """async (wire) => {
            const { SseParser } = await import("/sse.js");
            const parser = new SseParser();
            const out = [];
            for (let i = 0; i < wire.length; i += 3) out.push(...parser.push(wire.slice(i, i + 3)));
            return out;
        }""",
        wire,
    )
    assert frames == [
        {"id": None, "event": "", "data": None, "note": "waiting for the model 3s"},
        {"id": 1, "event": "text_delta", "data": {"text": "a\nb"}},
        {"id": 2, "event": "turn_complete", "data": {}},
    ]
    rendered = page.evaluate(
        """async () => {
            const { renderMarkdown } = await import("/markdown.js");
            const box = document.createElement("div");
            box.append(renderMarkdown(
              "- one\\n  - nested `x_y`\\n\\n| a | b |\\n|---|--:|\\n| 1 | 2 |\\n\\n" +
              "snake_case_name and <https://example.com/a_b>\\n\\n```sh\\necho unclosed"));
            return {
              nested: box.querySelectorAll("ul ul li").length,
              cells: [...box.querySelectorAll("td")].map((td) => td.textContent),
              italics: box.querySelectorAll("em").length,
              link: box.querySelector("a").href,
              code: box.querySelector("pre code").textContent,
            };
        }"""
    )
    assert rendered == {
        "nested": 1,
        "cells": ["1", "2"],
        "italics": 0,
        "link": "https://example.com/a_b",
        "code": "echo unclosed",
    }


def test_screenshots_of_every_main_screen(
    start_workbench: StartWorkbench, open_page: OpenPage, tmp_path: Path
) -> None:
    """Sign-in, chat (live in light, from the history in dark), configuration with a refused
    upload, and memories; each screen has to show its content before it is taken."""
    wb = start_workbench(memory=True, extra="[agent]\nmemory_checkpoint_interval = 1")
    wb.model.default = _extraction
    wb.model.enqueue(
        OpenAIStream()
        .reasoning("The disk is full: find the biggest directories first.")
        .tool_calls(("call_1", "get_current_time", "{}"))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("Run this:\n\n```bash\n# biggest directories\n", "du -xh / | sort -h\n```"),
    )
    api = wb.user("vera")
    uploaded = api.http.post("/chat/skills", files={"file": ("SKILL.md", GOOD_SKILL)})
    assert uploaded.status_code == 201, uploaded.text
    session = api.new_session(title="db-1 disk full")
    out = screenshots_dir(tmp_path)
    schemes: tuple[Literal["light", "dark"], ...] = ("light", "dark")
    for scheme in schemes:
        page = open_page(wb.url, scheme=scheme)
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.screenshot(path=out / f"sign-in-{scheme}.png")

        page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api, scheme=scheme)
        if scheme == "light":
            send(page, "Disk full on db-1: **what now**?")
        expect(answer(page)).to_contain_text("biggest directories")
        card = page.get_by_role("group", name="Tool call get_current_time")
        card.get_by_text("get_current_time").click()
        expect(card.get_by_text("Output")).to_be_visible()
        page.screenshot(path=out / f"chat-{scheme}.png")

        page.get_by_role("link", name="Configuration").click()
        with page.expect_file_chooser() as chooser:
            page.get_by_role("button", name="Choose SKILL.md file").click()
        chooser.value.set_files(payload("SKILL.md", "text/markdown", BAD_SKILL))
        expect(
            page.get_by_role("list", name="Rules SKILL.md (Disk--Triage-) fails")
        ).to_be_visible()
        page.screenshot(path=out / f"configuration-{scheme}.png")

        wait_for(lambda: api.data("GET", "/chat/memories"))
        page.get_by_role("link", name="Memories").click()
        expect(page.get_by_text("Runs the payments cluster")).to_be_visible()
        page.screenshot(path=out / f"memories-{scheme}.png")
    assert len(list(out.glob("*.png"))) == 8
