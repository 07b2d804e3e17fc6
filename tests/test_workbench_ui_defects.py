"""Defects of the web UI found by trying it as an on-call engineer, each pinned by a browser
test: copying on a plain-HTTP host, thumbnails, several refused SKILL.md files, compacted
messages, language leaks, Markdown images, the context limit, unsaved configuration, tool
durations after a reload, the session list, and the sign-in form's errors.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, FilePayload, Page, expect

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Api, Workbench
from ui_kit import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    OpenPage,
    assert_accessible,
    browser,
    open_page,
    shared_workbench,
    wait_for,
)

__all__ = ["browser", "open_page", "shared_workbench"]  # fixtures used by name

TEAM_HOST = "oncall-team.test"


def png(width: int, height: int) -> bytes:
    """An opaque grey PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def payload(name: str, mime_type: str, buffer: bytes) -> FilePayload:
    return {"name": name, "mimeType": mime_type, "buffer": buffer}


def send(page: Page, text: str) -> None:
    box = page.get_by_role("textbox", name=re.compile("Message|消息"))
    box.fill(text)
    box.press("Enter")


def answer(page: Page):  # type: ignore[no-untyped-def]
    return page.get_by_role("article", name=re.compile("^Assistant answer")).last


@pytest.fixture(scope="module")
def team_browser(browser: Browser) -> Iterator[Browser]:
    """Chromium that resolves a team host name to this machine: a plain-HTTP origin that is
    not localhost, so the page is not a secure context and has no Clipboard API."""
    launched = browser.browser_type.launch(
        executable_path=str(CHROMIUM),
        args=[*CHROMIUM_FLAGS, f"--host-resolver-rules=MAP {TEAM_HOST} 127.0.0.1"],
    )
    yield launched
    launched.close()


# -- 4: copying ---------------------------------------------------------------------------------


def test_copy_works_on_a_plain_http_host_and_its_feedback_resets(
    shared_workbench: Workbench, team_browser: Browser
) -> None:
    wb = shared_workbench
    api = wb.user("copy-http")
    session = api.new_session()
    wb.model.enqueue(text_reply("Run:\n\n```bash\ndf -h /var\n```\n"))
    api.send(session["id"], "what to run?")
    port = wb.url.rsplit(":", 1)[1]
    context = team_browser.new_context(viewport={"width": 1280, "height": 800})
    me = api.data("GET", "/auth/me")
    context.add_init_script(
        "localStorage.setItem('youyou.auth', JSON.stringify("
        f"{{token: {api.token!r}, user: {{id: {me['id']!r}, username: {me['username']!r}}}}}));"
        "window.__copied = [];"
        "document.addEventListener('copy', () =>"
        " window.__copied.push(String(document.getSelection())));"
    )
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"http://{TEAM_HOST}:{port}/#/chat/{session['id']}")
    assert page.evaluate("() => [window.isSecureContext, typeof navigator.clipboard]") == [
        False,
        "undefined",
    ]
    copy = page.get_by_role("button", name="Copy code")
    copy.click()
    expect(copy).to_have_text("Copied")
    assert page.evaluate("() => window.__copied") == ["df -h /var"]
    expect(copy).to_have_text("Copy", timeout=5000)

    page.get_by_role("button", name="Copy as Markdown").click()
    assert page.evaluate("() => window.__copied")[-1] == "Run:\n\n```bash\ndf -h /var\n```"
    context.close()
    assert errors == []


# -- 7, 8, 9, 10, 12 -----------------------------------------------------------------------------


def test_thumbnails_keep_their_aspect_ratio(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    api = shared_workbench.user("thumbs")
    session = api.new_session()
    page = open_page(f"{shared_workbench.url}/#/chat/{session['id']}", user=api)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach file").click()
    chooser.value.set_files([payload("wide.png", "image/png", png(64, 40))])
    chip = page.locator(".chip-thumb")
    expect(chip).to_be_visible()
    send(page, "look")
    image = page.get_by_role("article", name="Your message").get_by_role("img")
    expect(image).to_be_visible()
    shown = image.bounding_box()
    assert shown is not None
    assert abs(shown["width"] / shown["height"] - 64 / 40) < 0.05, shown
    page.reload()
    image = page.get_by_role("article", name="Your message").get_by_role("img")
    expect(image).to_be_visible()
    shown = image.bounding_box()
    assert shown is not None and abs(shown["width"] / shown["height"] - 64 / 40) < 0.05


def test_each_refused_skill_file_is_named(shared_workbench: Workbench, open_page: OpenPage) -> None:
    api = shared_workbench.user("skills-two")
    page = open_page(f"{shared_workbench.url}/#/config", user=api)
    bad = [
        b"---\nname: Disk--Triage-\n---\nbody\n",
        b"---\nname: log_grep\ndescription: grep the logs\n---\nbody\n",
    ]
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Choose SKILL.md file").click()
    chooser.value.set_files([payload("SKILL.md", "text/markdown", text) for text in bad])
    refusals = page.locator(".refused > p")
    expect(refusals).to_have_text(
        [
            "File 1, SKILL.md (Disk--Triage-) was refused:",
            "File 2, SKILL.md (log_grep) was refused:",
        ]
    )
    expect(page.get_by_role("list", name="Rules File 2, SKILL.md (log_grep) fails")).to_be_visible()


def test_compacted_messages_keep_thin_borders_and_readable_contrast(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("compacted")
    session = api.new_session()
    api.send(session["id"], "first question")
    api.send(session["id"], "second question")
    wb.model.enqueue(text_reply("Summary: two questions were asked."))
    api.data("POST", f"/chat/sessions/{session['id']}/memory:compact")
    for scheme in ("light", "dark"):
        page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api, scheme=scheme)
        mine = page.locator("article.msg.user.compacted").first
        expect(mine).to_be_visible()
        widths = mine.evaluate(
            "(el) => ['Top', 'Left'].map((side) => getComputedStyle(el)[`border${side}Width`])"
        )
        assert widths == ["1px", "1px"]
        assert mine.evaluate("(el) => getComputedStyle(el).opacity") == "1"
        assert_accessible(page)


def test_markdown_images_are_links_without_a_stray_bang(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("images")
    session = api.new_session()
    wb.model.enqueue(text_reply("The graph: ![p99 latency](https://grafana.example/p99.png) here."))
    api.send(session["id"], "graph?")
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    link = answer(page).get_by_role("link", name="Image: p99 latency")
    expect(link).to_have_attribute("href", "https://grafana.example/p99.png")
    expect(answer(page).locator(".markdown")).to_have_text("The graph: Image: p99 latency here.")


# -- 11: language --------------------------------------------------------------------------------


def test_the_chinese_ui_sends_its_language_and_explains_in_chinese(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    page = open_page(shared_workbench.url, locale="zh-CN")
    languages: list[str] = []
    page.on(
        "request",
        lambda request: languages.append(request.headers.get("accept-language", "")),
    )
    page.get_by_role("button", name="还没有账号？注册").click()
    page.get_by_role("textbox", name="用户名").fill("lin")
    page.get_by_role("textbox", name="密码").fill("short")
    page.get_by_role("button", name="创建账号并登录").click()
    expect(page.get_by_role("alert")).to_have_text("密码至少需要 8 个字符。")
    page.get_by_role("textbox", name="用户名").fill("bad name!")
    page.get_by_role("textbox", name="密码").fill("a long enough secret")
    page.get_by_role("button", name="创建账号并登录").click()
    alert = page.get_by_role("alert")
    expect(alert).not_to_have_text("")
    assert not re.search(r"[A-Za-z]{4,} [a-z]{3,}", alert.inner_text()), alert.inner_text()
    assert languages and set(languages) == {"zh-CN"}


# -- 13: the context limit ----------------------------------------------------------------------


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """Tests with a workbench of their own run on SQLite only."""
    return migrated_sqlite_url


def test_the_context_bar_and_the_limit_refusal_agree_with_the_numbers(
    start_workbench: object, open_page: OpenPage
) -> None:
    wb: Workbench = start_workbench(context_window=430)  # type: ignore[operator]
    api = wb.user("limits")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)

    # A message the server refuses at the limit: one sentence, the message back in the box.
    huge = "tell me about " + "y " * 600
    send(page, huge)
    refusal = page.get_by_role("alert").filter(has_text="not sent")
    expect(refusal).to_contain_text(
        "The context is full, so the message was not sent (it is back in the message box)."
        " Compact the session memory or shorten the message, then send it again."
    )
    expect(page.get_by_role("textbox", name="Message")).to_have_value(huge.strip())

    wb.model.enqueue(text_reply("x " * 300))
    send(page, "dump the logs")
    usage = page.locator(".usage")
    notice = page.locator(".notice")
    expect(notice).to_be_visible()
    match = re.search(r"([\d,]+) / 430 tokens · (\d+)%", usage.inner_text())
    assert match is not None
    tokens, percent = int(match[1].replace(",", "")), int(match[2])
    assert percent == round(tokens * 100 / 430), usage.inner_text()
    expect(notice).to_contain_text(f"The context is {percent}% full")


# -- 14: unsaved configuration ------------------------------------------------------------------


def test_leaving_unsaved_configuration_asks_first(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    api = shared_workbench.user("unsaved")
    api.data("POST", "/chat/prompts", 201, json={"label": "terse", "content": "Be terse."})
    page = open_page(f"{shared_workbench.url}/#/config", user=api)
    page.get_by_role("radio", name="terse").check()
    expect(page.get_by_text("Unsaved changes")).to_be_visible()

    page.get_by_role("link", name="Chat").click()
    dialog = page.get_by_role("dialog", name="Leave this page?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Stay").click()
    expect(page).to_have_url(re.compile("#/config$"))
    expect(page.get_by_role("radio", name="terse")).to_be_checked()

    asked: list[str] = []

    def answer_dialog(dialog):  # type: ignore[no-untyped-def]
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", answer_dialog)
    page.get_by_role("radio", name="terse").click()  # a user gesture: beforeunload may ask
    page.evaluate("() => location.reload()")
    wait_for(lambda: asked == ["beforeunload"])
    expect(page.get_by_role("radio", name="terse")).to_be_checked()

    page.get_by_role("link", name="Memories").click()
    page.get_by_role("dialog", name="Leave this page?").get_by_role("button", name="Leave").click()
    expect(page.get_by_role("heading", name="Memories", level=2)).to_be_visible()


# -- 15: tool durations --------------------------------------------------------------------------


def test_tool_durations_survive_a_reload(shared_workbench: Workbench, open_page: OpenPage) -> None:
    wb = shared_workbench
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", '{"timezone": "UTC"}'))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("Noted."),
    )
    api = wb.user("durations")
    session = api.new_session()
    api.send(session["id"], "time?")
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    card = page.get_by_role("group", name="Tool call get_current_time")
    expect(card).to_contain_text(re.compile(r"done · \d+ ms"))


# -- 16: the session list ------------------------------------------------------------------------


def test_the_session_list_keeps_date_order_updates_live_and_shows_whole_titles(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    api = shared_workbench.user("listing")
    long_title = "checkout-api 5xx burst after the 03:10 config push to the payments cluster"
    older = api.new_session(title=long_title)
    api.new_session(title="newer")
    page = open_page(f"{shared_workbench.url}/#/chat/{older['id']}", user=api)
    sidebar = page.get_by_role("complementary", name="Sessions")
    titles = sidebar.locator(".session-title")
    expect(titles).to_have_text(["newer", long_title])
    expect(sidebar.get_by_role("link", name=re.compile("^checkout-api"))).to_have_attribute(
        "title", long_title
    )

    elsewhere = Api(shared_workbench.url, api.token)
    elsewhere.new_session(title="made on the phone")
    expect(titles).to_have_text(["made on the phone", "newer", long_title], timeout=15_000)
    elsewhere.close()


# -- 17: the sign-in form ------------------------------------------------------------------------


def test_sign_in_errors_belong_to_their_fields_and_say_how_long_to_wait(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    shared_workbench.user("signin-errors")
    page = open_page(shared_workbench.url)
    username, password = (page.get_by_role("textbox", name=n) for n in ("Username", "Password"))
    username.fill("signin-errors")
    password.fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password")
    for field in (username, password):
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_accessible_description(re.compile("Wrong username or password"))

    # After five failures the server refuses this username for a while (429, Retry-After):
    # the message says how long, and the button waits that long.
    for _ in range(4):
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_enabled()
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text(re.compile(r"try again in \d+ s"))
    expect(page.get_by_role("button", name="Sign in")).to_be_disabled()
