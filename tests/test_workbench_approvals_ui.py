"""The approval card in a real browser (Chromium through Playwright) on a desktop and a phone
screen: a call of ``mcp-server-time`` waits; the card shows the tool and its arguments in every
page of the session (after a reload too), Enter in the composer and Esc decide nothing, and
once approved in one page the card is gone in the other and the answer comes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from approval_kit import TOOL, asks_for_the_time, time_server
from fakes.openai_server import FakeOpenAIServer
from server_kit import Api, Workbench
from test_workbench_ui import CHROMIUM, CHROMIUM_FLAGS, TIMEOUT_MS

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """The UI runs on SQLite; the API tests cover PostgreSQL."""
    return migrated_sqlite_url


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is required in CI (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def signed_in_page(browser: Browser, url: str, user: Api, size: tuple[int, int]) -> Page:
    context = browser.new_context(locale="en-US", viewport={"width": size[0], "height": size[1]})
    me = user.data("GET", "/auth/me")
    saved = json.dumps(json.dumps({"token": user.token, "user": me}))
    context.add_init_script(
        f"if (!localStorage.getItem('youyou.auth')) localStorage.setItem('youyou.auth', {saved});"
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.errors = errors  # type: ignore[attr-defined]
    return page


@pytest.mark.parametrize("size", list(SIZES))
def test_the_approval_card_is_shown_everywhere_and_goes_once_decided(
    start_workbench: Callable[..., Workbench],
    fake_model: FakeOpenAIServer,
    chromium: Browser,
    tmp_path: Path,
    size: str,
) -> None:
    fake_model.default = asks_for_the_time
    wb = start_workbench(extra=time_server())
    alice = wb.user("alice")
    sid = alice.new_session()["id"]
    url = f"{wb.url}/#/chat/{sid}"
    first = signed_in_page(chromium, url, alice, SIZES[size])
    box = first.get_by_role("textbox", name="Message")
    box.fill("what time is it in Tokyo?")
    box.press("Enter")

    card = first.get_by_role("group", name=f"Approval needed: {TOOL}")
    expect(card).to_be_visible()
    expect(card).to_contain_text('"timezone": "Asia/Tokyo"')
    expect(card).to_contain_text("from MCP server time")
    second = signed_in_page(chromium, url, alice, SIZES[size])
    other_card = second.get_by_role("group", name=f"Approval needed: {TOOL}")
    expect(other_card).to_have_count(1)
    if size == "phone":  # the session list is a drawer there (the reload closes it)
        second.get_by_role("button", name="Sessions").first.click()
    listed = second.get_by_role("list", name="Sessions").get_by_role("link")
    expect(listed.filter(has_text="Waiting for approval")).to_have_count(1)
    second.reload()
    expect(other_card).to_have_count(1)

    # Enter in the composer and Esc anywhere decide nothing
    box.fill("send this instead")
    box.press("Enter")
    reason = card.get_by_role("textbox", name="Reason (optional)")
    reason.fill("checked the runbook")
    reason.press("Escape")
    reason.press("Enter")
    first.wait_for_timeout(500)
    assert alice.data("GET", f"/chat/sessions/{sid}")["pendingApprovals"], "still waiting"
    expect(card).to_be_visible()

    shots = Path(os.environ.get("YOUYOU_UI_SCREENSHOTS") or tmp_path)
    first.screenshot(path=str(shots / f"approval-card-{size}.png"))
    approve = card.get_by_role("button", name="Approve")
    approve.focus()
    first.keyboard.press("Space")
    expect(card).to_have_count(0)
    expect(other_card).to_have_count(0)
    for page in (first, second):
        answer = page.get_by_role("article", name="Assistant answer").last
        expect(answer).to_contain_text("Asia/Tokyo")
    second.reload()  # the stored tool card says who approved it
    expect(second.get_by_role("group", name=f"Tool call {TOOL}")).to_contain_text(
        "Approved by alice"
    )
    (decided,) = [
        call["approval"]
        for message in alice.data("GET", f"/chat/sessions/{sid}/messages")
        for call in message["toolCalls"]
    ]
    assert decided["decidedBy"] == "alice" and decided["decisionReason"] == "checked the runbook"
    assert first.errors == second.errors == []  # type: ignore[attr-defined]
