"""Every screen of the web UI at 1280×800 and 390×844, light and dark, English and Chinese:
no serious or critical axe-core finding, no sideways scrolling, and on a phone the session
list as a drawer, a full-width conversation and composer, dialogs that fit and touch targets
of at least 44 px. Screenshots go to ``$YOUYOU_UI_SCREENSHOTS`` (default
/tmp/youyou-ui-screens) to be looked at.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from fakes.openai_server import text_reply
from server_kit import Api, Workbench
from ui_kit import (
    OpenPage,
    Scheme,
    Size,
    assert_accessible,
    browser,
    no_horizontal_scroll,
    open_page,
    screenshot,
    shared_workbench,
    small_targets,
)

__all__ = ["browser", "open_page", "shared_workbench"]  # fixtures used by name

MARKDOWN = (
    "## Findings\n\nThe disk `/var` is **97 %** full; see <https://grafana.example/d/disk>.\n\n"
    "```bash\n# the largest directories first\ndu -xh /var | sort -rh | head -20\n```\n\n"
    "| mount | used |\n| --- | --- |\n| /var | 97 % |\n| /home | 41 % |\n"
)
CASES = [
    ("desktop", "light", "en-US"),
    ("desktop", "dark", "zh-CN"),
    ("phone", "light", "zh-CN"),
    ("phone", "dark", "en-US"),
]
LABELS = {
    "en-US": {
        "signIn": "Sign in",
        "sessions": "Sessions",
        "new": "New session",
        "config": "Configuration",
        "memories": "Memories",
        "create": "Create",
        "cancel": "Cancel",
        "send": "Send",
        "message": "Message",
        "nav": "Main",
        "account": "Account menu",
    },
    "zh-CN": {
        "signIn": "登录",
        "sessions": "会话列表",
        "new": "新建会话",
        "config": "配置",
        "memories": "长期记忆",
        "create": "创建",
        "cancel": "取消",
        "send": "发送",
        "message": "消息",
        "nav": "主导航",
        "account": "账户菜单",
    },
}


def seeded(wb: Workbench, name: str) -> tuple[Api, dict[str, str]]:
    api = wb.user(name)
    session = api.new_session(title="api-7 p99 latency since the 14:05 deploy on the eu-west pool")
    wb.model.enqueue(text_reply(MARKDOWN))
    api.send(session["id"], "Why is /var full on db-3?")
    return api, session


def check_screen(page: Page, name: str, size: Size) -> None:
    screenshot(page, name)
    assert no_horizontal_scroll(page), f"{name} scrolls sideways"
    assert_accessible(page)
    if size == "phone":
        assert small_targets(page) == [], name


@pytest.mark.parametrize(("size", "scheme", "locale"), CASES)
def test_every_screen(
    shared_workbench: Workbench, open_page: OpenPage, size: Size, scheme: Scheme, locale: str
) -> None:
    words = LABELS[locale]
    tag = f"{size}-{scheme}-{locale}"
    api, session = seeded(shared_workbench, f"screens-{tag}".lower())

    signin = open_page(shared_workbench.url, size=size, scheme=scheme, locale=locale)
    expect(signin.get_by_role("heading", name=words["signIn"])).to_be_visible()
    check_screen(signin, f"signin-{tag}", size)
    card = signin.locator(".auth-card").bounding_box()
    assert card is not None
    left, right = card["x"], signin.viewport_size["width"] - card["x"] - card["width"]  # type: ignore[index]
    assert abs(left - right) <= 2, "the sign-in card is centred"

    page = open_page(
        f"{shared_workbench.url}/#/chat/{session['id']}",
        user=api,
        size=size,
        scheme=scheme,
        locale=locale,
    )
    log = page.get_by_role("log")
    expect(log.locator("table")).to_be_visible()
    sidebar = page.get_by_role("complementary", name=re.compile("Sessions|会话"))
    if size == "phone":
        # the conversation and the composer take the whole width; the list is a drawer
        expect(sidebar).not_to_be_visible()
        for part in (".conversation", ".composer"):
            box = page.locator(part).bounding_box()
            assert box is not None and box["width"] >= 370, part
        send = page.get_by_role("button", name=words["send"], exact=True)
        box = send.bounding_box()
        assert (
            box is not None and box["x"] + box["width"] <= 390 and box["y"] + box["height"] <= 844
        )
        for link in page.get_by_role("navigation", name=words["nav"]).get_by_role("link").all():
            height = link.bounding_box()["height"]  # type: ignore[index]
            assert height <= 48, "navigation labels stay on one line"
    check_screen(page, f"chat-{tag}", size)

    if size == "phone":
        toggle = page.get_by_role("button", name=words["sessions"]).first
        toggle.click()
        expect(sidebar).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        check_screen(page, f"drawer-{tag}", size)
        sidebar.get_by_role("link").first.click()
        expect(sidebar).not_to_be_visible()
        page.get_by_role("button", name=words["sessions"]).first.click()
    sidebar.get_by_role("button", name=words["new"]).click()
    dialog = page.get_by_role("dialog", name=words["new"])
    expect(dialog).to_be_visible()
    box = dialog.bounding_box()
    width = page.viewport_size["width"]  # type: ignore[index]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    check_screen(page, f"new-session-{tag}", size)
    dialog.get_by_role("button", name=words["cancel"]).click()
    if size == "phone":
        page.keyboard.press("Escape")  # closes the drawer
        expect(sidebar).not_to_be_visible()

    page.get_by_role("link", name=words["config"]).click()
    expect(page.get_by_role("heading", name=words["config"], level=2)).to_be_visible()
    page.locator(".card").first.wait_for()
    check_screen(page, f"config-{tag}", size)

    page.get_by_role("link", name=words["memories"]).click()
    expect(page.get_by_role("heading", name=words["memories"], level=2)).to_be_visible()
    check_screen(page, f"memories-{tag}", size)
