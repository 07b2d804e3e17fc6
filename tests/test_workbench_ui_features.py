"""What every chat workbench offers, in the web UI: per answer copy as Markdown (see the
defects suite), Retry and Edit & resend; per session rename, delete with a confirmation and
export as Markdown and JSON; searching message text with the matching snippet; the time of
each message; and thresholds and limits as the server is configured.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from fakes.openai_server import OpenAIStream, openai_error, text_reply
from server_kit import Workbench
from ui_kit import OpenPage, browser, open_page, shared_workbench

__all__ = ["browser", "open_page", "shared_workbench"]  # fixtures used by name


def send(page: Page, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def answers(page: Page):  # type: ignore[no-untyped-def]
    return page.get_by_role("article", name=re.compile("^Assistant answer"))


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """Tests with a workbench of their own run on SQLite only."""
    return migrated_sqlite_url


def test_rename_export_and_delete_a_session(
    shared_workbench: Workbench, open_page: OpenPage, tmp_path: Path
) -> None:
    wb = shared_workbench
    api = wb.user("features-menu")
    session = api.new_session(title="disk alert")
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", '{"timezone": "UTC"}'))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("The disk fills with **logs**."),
    )
    api.send(session["id"], "why is /var full?")
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    sidebar = page.get_by_role("complementary", name="Sessions")
    menu = page.get_by_role("button", name="Session actions")

    menu.click()
    page.get_by_role("menuitem", name="Rename").click()
    dialog = page.get_by_role("dialog", name="Rename session")
    dialog.get_by_role("textbox", name="Title").fill("db-3 /var full")
    dialog.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="db-3 /var full")).to_be_visible()
    expect(sidebar.get_by_role("link", name="db-3 /var full")).to_be_visible()
    assert api.data("GET", f"/chat/sessions/{session['id']}")["title"] == "db-3 /var full"

    exported = {}
    for label, suffix in (("Export Markdown", "md"), ("Export JSON", "json")):
        menu.click()
        with page.expect_download() as download:
            page.get_by_role("menuitem", name=label).click()
        path = tmp_path / f"export.{suffix}"
        download.value.save_as(path)
        assert download.value.suggested_filename.endswith(f".{suffix}")
        exported[suffix] = path.read_text(encoding="utf-8")
    assert "why is /var full?" in exported["md"]
    assert "get_current_time" in exported["md"]
    assert "The disk fills with **logs**." in exported["md"]
    data = json.loads(exported["json"])
    assert "why is /var full?" in json.dumps(data)
    assert '"timezone"' in json.dumps(data)

    menu.click()
    page.get_by_role("menuitem", name="Delete session").click()
    confirm = page.get_by_role("dialog", name="Delete session")
    expect(confirm).to_contain_text("db-3 /var full")
    confirm.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name="db-3 /var full")).to_be_visible()
    menu.click()
    page.get_by_role("menuitem", name="Delete session").click()
    page.get_by_role("dialog", name="Delete session").get_by_role("button", name="Delete").click()
    expect(page).to_have_url(re.compile(r"#/chat$"))
    expect(sidebar.get_by_role("link", name=re.compile("db-3"))).to_have_count(0)
    api.error("GET", f"/chat/sessions/{session['id']}", 404)


def test_search_finds_message_text_and_shows_the_snippet(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("features-search")
    found = api.new_session(title="tuesday")
    api.send(found["id"], "the kafka consumer lag on orders-7 keeps growing")
    other = api.new_session(title="wednesday")
    api.send(other["id"], "nothing to see")
    page = open_page(wb.url, user=api)
    sidebar = page.get_by_role("complementary", name="Sessions")
    expect(sidebar.get_by_role("link")).to_have_count(2)
    sidebar.get_by_role("searchbox").fill("consumer lag")
    links = sidebar.get_by_role("link")
    expect(links).to_have_count(1)
    expect(links.first).to_contain_text("tuesday")
    expect(links.first.locator("mark")).to_have_text(["consumer", "lag"])


def test_retry_and_edit_and_resend(start_workbench: object, open_page: OpenPage) -> None:
    wb: Workbench = start_workbench()  # type: ignore[operator]
    wb.model.enqueue(openai_error(500, "upstream exploded", error_type="server_error"))
    api = wb.user("features-retry")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "check the pager queue")
    failed = answers(page).last
    expect(failed.locator(".msg-error")).to_be_visible()
    retry = failed.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()
    wb.model.enqueue(text_reply("The queue is empty."))
    retry.click()
    expect(answers(page).last).to_contain_text("The queue is empty.")
    expect(answers(page).last).to_contain_text("10 in · 5 out tokens")
    mine = page.get_by_role("article", name="Your message")
    expect(mine).to_have_count(2)
    expect(mine).to_have_text([re.compile("check the pager queue")] * 2)
    # the ledger is append-only: the failed turn stays, the retry is a new turn
    messages = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    assert [m["role"] for m in messages if m["role"] == "user"] == ["user", "user"]
    expect(answers(page).last.get_by_role("button", name="Retry")).to_be_hidden()

    mine.first.get_by_role("button", name="Edit & resend").click()
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_have_value("check the pager queue")
    expect(box).to_be_focused()


def test_each_message_shows_its_time(shared_workbench: Workbench, open_page: OpenPage) -> None:
    api = shared_workbench.user("features-time")
    session = api.new_session()
    api.send(session["id"], "what time was this?")
    stored = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    page = open_page(f"{shared_workbench.url}/#/chat/{session['id']}", user=api)
    mine = page.get_by_role("article", name="Your message")
    time = mine.locator("time")
    expect(time).to_be_hidden()
    mine.hover()
    expect(time).to_be_visible()
    assert time.get_attribute("datetime") == stored[0]["createdAt"]
    expect(time).to_have_text(re.compile(r"\d{1,2}:\d{2}"))


def test_thresholds_and_limits_are_the_servers(
    start_workbench: object, open_page: OpenPage
) -> None:
    wb: Workbench = start_workbench(  # type: ignore[operator]
        extra="[compaction]\nevery_n_turns = 12\ncontext_percent = 0.5\nhard_limit = 0.9"
    )
    api = wb.user("features-settings")
    session = api.new_session()
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    mode = page.get_by_role("combobox", name="Memory mode")
    expect(mode.locator("option")).to_have_text(
        ["Every 12 turns", "At 50% of the context", "Manual"]
    )
    signin = open_page(wb.url)
    signin.get_by_role("button", name="No account yet? Register").click()
    expect(signin.get_by_text(re.compile(r"at least \d+ characters"))).to_be_visible()
