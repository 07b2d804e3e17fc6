"""The Administration page in a real browser (Playwright, Debian's Chromium): accounts,
roles, disabling, invite links, groups and every account's usage, in English and Chinese;
members never see it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from fakes.openai_server import text_reply
from server_kit import Api, Workbench
from test_workbench_admin import with_admin

# The browser fixtures of the main UI suite, asked for by name (``pages``).
from test_workbench_ui import OpenPage, browser, open_page, screenshots_dir  # noqa: F401
from test_workbench_usage import PRICES

StartWorkbench = Callable[..., Workbench]
PASSWORD = "correct horse"
ADMINS = '[server]\nadmins = ["root"]\nopen_registration_with_access_lists = true\n'


@pytest.fixture
def workbench_db(migrated_sqlite_url: str) -> str:
    """The UI suite runs on SQLite only."""
    return migrated_sqlite_url


def admin_server(start: StartWorkbench, registration: str = "open") -> tuple[Workbench, Api]:
    signup = start()
    signup.user("root")
    signup.close()
    assert signup.server.stop() == 0
    wb = start(extra=f'{ADMINS}registration = "{registration}"\n')
    return wb, wb.signed_in("root")


def pages(request: pytest.FixtureRequest) -> OpenPage:
    opener: OpenPage = request.getfixturevalue("open_page")
    return opener


def login_status(wb: Workbench, username: str, password: str = PASSWORD) -> int:
    response = httpx.post(f"{wb.url}/auth/login", json={"username": username, "password": password})
    return response.status_code


def account(page: Page, name: str) -> Locator:
    return page.get_by_role("list", name="Accounts").get_by_role("listitem", name=name)


def test_an_administrator_manages_accounts_invites_and_groups(
    start_workbench: StartWorkbench, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    opened = pages(request)
    wb, root = admin_server(start_workbench, registration="invite")
    page = opened(wb.url, user=root)
    page.get_by_role("link", name="Administration").click()
    expect(page.get_by_role("heading", name="Administration")).to_be_visible()
    expect(account(page, "root")).to_contain_text("root (you)")
    expect(account(page, "root").get_by_role("button", name="Delete: root")).to_have_count(0)

    form = page.get_by_role("form", name="Add account")
    form.get_by_role("textbox", name="Username").fill("vera")
    form.get_by_role("textbox", name="Password").fill(PASSWORD)
    form.get_by_role("button", name="Add account").click()
    vera = account(page, "vera")
    expect(vera).to_contain_text("member · active")
    assert login_status(wb, "vera") == 200

    vera.get_by_role("button", name="Disable: vera").click()
    expect(vera).to_contain_text("member · disabled")
    assert login_status(wb, "vera") == 403
    vera.get_by_role("button", name="Enable: vera").click()
    expect(vera).to_contain_text("member · active")
    vera.get_by_role("button", name="Make administrator: vera").click()
    expect(vera).to_contain_text("administrator · active")

    vera.get_by_role("button", name="New password: vera").click()
    dialog = page.get_by_role("dialog", name="New password for vera")
    dialog.get_by_role("textbox", name="Password").fill("river-lantern-42")
    dialog.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="New password set for vera")).to_be_visible()
    assert login_status(wb, "vera", "river-lantern-42") == 200

    groups = page.get_by_role("form", name="Add group")
    groups.get_by_role("textbox", name="Group name").fill("sre")
    groups.get_by_role("button", name="Add group").click()
    sre = page.get_by_role("list", name="Groups").get_by_role("listitem", name="sre")
    expect(sre).to_contain_text("no members")
    sre.get_by_role("combobox", name="Add member: sre").select_option("vera")
    sre.get_by_role("button", name="Add member").click()
    expect(sre.get_by_role("button", name="Remove vera from sre")).to_be_visible()
    expect(vera).to_contain_text("groups: sre")
    page.screenshot(path=str(screenshots_dir(tmp_path) / "admin-light.png"))
    sre.get_by_role("button", name="Remove vera from sre").click()
    expect(sre).to_contain_text("no members")

    page.get_by_role("button", name="Create invite link").click()
    link = page.get_by_role("textbox", name="Invite link")
    expect(link).to_have_value(re.compile(r"/#invite=[\w-]+$"))
    invite_url = link.input_value()

    vera.get_by_role("button", name="Delete: vera").click()
    page.get_by_role("dialog", name="Delete account vera").get_by_role(
        "button", name="Delete"
    ).click()
    expect(page.get_by_role("status").filter(has_text="Deleted vera: 0 sessions")).to_be_visible()
    expect(vera).to_have_count(0)
    assert login_status(wb, "vera", "river-lantern-42") == 401

    newcomer = opened(invite_url)
    expect(newcomer.get_by_role("heading", name="Create an account")).to_be_visible()
    newcomer.get_by_role("textbox", name="Username").fill("walt")
    newcomer.get_by_role("textbox", name="Password").fill(PASSWORD)
    newcomer.get_by_role("button", name="Create account and sign in").click()
    expect(newcomer.get_by_text("walt")).to_be_visible()
    expect(newcomer.get_by_role("link", name="Administration")).to_have_count(0)
    again = opened(invite_url)  # a used link registers nobody else
    again.get_by_role("textbox", name="Username").fill("xena")
    again.get_by_role("textbox", name="Password").fill(PASSWORD)
    again.get_by_role("button", name="Create account and sign in").click()
    expect(again.get_by_role("alert")).to_contain_text("invite link is unknown, used or expired")


def test_members_never_see_the_page_and_chinese_administrators_do(
    start_workbench: StartWorkbench, request: pytest.FixtureRequest
) -> None:
    opened = pages(request)
    wb, root = admin_server(start_workbench)
    member = wb.user("yuki")
    page = opened(f"{wb.url}/#/admin", user=member)
    expect(page.get_by_role("link", name="Chat")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("link", name="Administration")).to_have_count(0)
    chinese = opened(f"{wb.url}/#/admin", user=root, locale="zh-CN")
    expect(chinese.get_by_role("link", name="管理")).to_have_attribute("aria-current", "page")
    expect(chinese.get_by_role("heading", name="账号")).to_be_visible()
    yuki = chinese.get_by_role("list", name="账号").get_by_role("listitem", name="yuki")
    yuki.get_by_role("button", name="停用: yuki").click()
    expect(yuki).to_contain_text("已停用")
    assert member.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"


def test_an_administrator_reads_usage_per_account_over_a_period(
    start_workbench: StartWorkbench, request: pytest.FixtureRequest
) -> None:
    opened = pages(request)
    wb, root = with_admin(start_workbench, model_keys=PRICES)
    vera = wb.user("vera")
    wb.model.enqueue(text_reply("ok", prompt=1200, completion=34))
    vera.send(vera.new_session()["id"], "hello")
    page = opened(f"{wb.url}/#/admin", user=root)
    table = page.get_by_role("table", name="Usage per account")

    def cells(name: str) -> Locator:
        return table.get_by_role("row").filter(has=page.get_by_role("rowheader", name=name))

    # 1200 in and 34 out at 2.5 and 10 per million tokens
    expect(cells("vera").get_by_role("cell")).to_have_text(["1", "1,200", "34", "0.003340"])
    expect(cells("root").get_by_role("cell")).to_have_text(["0", "0", "0", "—"])
    expect(cells("All accounts").get_by_role("cell")).to_have_text(["1", "1,200", "34", "0.003340"])

    period = page.get_by_role("form", name="Usage period")
    # days are the browser's: its today, whatever its time zone
    today = date.fromisoformat(page.evaluate("() => new Date().toLocaleDateString('sv')"))
    tomorrow = today + timedelta(days=1)
    period.get_by_label("From").fill(tomorrow.isoformat())
    period.get_by_role("button", name="Show").click()
    expect(cells("vera").get_by_role("cell")).to_have_text(["0", "0", "0", "—"])
    period.get_by_label("From").fill("")
    period.get_by_label("To").fill(today.isoformat())  # the last day counts whole
    period.get_by_role("button", name="Show").click()
    expect(cells("vera").get_by_role("cell")).to_have_text(["1", "1,200", "34", "0.003340"])
    period.get_by_label("From").fill(tomorrow.isoformat())
    period.get_by_label("To").fill((today - timedelta(days=1)).isoformat())
    period.get_by_role("button", name="Show").click()
    expect(page.get_by_role("alert")).to_contain_text("since is after until")
