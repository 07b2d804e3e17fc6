"""Shared pieces of the browser suites: Debian's Chromium through Playwright, one workbench
(SQLite, the fake OpenAI model) per test module, pages at the desktop or the phone size in a
language and colour scheme, the axe-core check and screenshots.

Each test signs up users of its own, so the tests of a module share the server without
seeing each other's sessions.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import Api, InProcessServer, Workbench, answer_ok, write_config

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
SIZES: dict[str, ViewportSize] = {
    "desktop": {"width": 1280, "height": 800},
    "phone": {"width": 390, "height": 844},
}
Size = Literal["desktop", "phone"]
Scheme = Literal["light", "dark"]
OpenPage = Callable[..., Page]
_AXE = Axe()


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


@pytest.fixture(scope="module")
def shared_workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    """One in-process workbench on SQLite for the whole module."""
    root = tmp_path_factory.mktemp("wb")
    with FakeOpenAIServer() as fake:
        fake.default = answer_ok
        url = f"sqlite+aiosqlite:///{root / 'youyou.db'}"
        server = InProcessServer(root, write_config(root, url, fake.base_url), free_port()).start()
        workbench = Workbench(server, fake)
        try:
            yield workbench
        finally:
            workbench.close()
            server.stop()


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """``open_page(url, user=api, size="phone", locale="zh-CN", scheme="dark")`` → a page,
    signed in as ``api``'s user if given. Uncaught script errors fail the test.
    ``clock=True`` installs Playwright's clock before the page loads: time runs as usual, and
    ``page.clock.fast_forward(ms)`` jumps ahead, firing the page's timers due by then (a toast
    that fades after 8 s is checked without waiting 8 s)."""
    contexts = []
    errors: list[str] = []

    def open_(
        url: str,
        *,
        user: Api | None = None,
        size: Size = "desktop",
        locale: str = "en-US",
        scheme: Scheme = "light",
        clock: bool = False,
        **context_options: Any,
    ) -> Page:
        context = browser.new_context(
            locale=locale, color_scheme=scheme, viewport=SIZES[size], **context_options
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
        if clock:
            page.clock.install()
        page.goto(url)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert errors == [], errors


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now."""
    results = _AXE.run(page)
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def assert_accessible(page: Page) -> None:
    found = serious_violations(page)
    assert found == [], found


def no_horizontal_scroll(page: Page) -> bool:
    return bool(
        page.evaluate(
            "() => document.documentElement.scrollWidth <= window.innerWidth"
            " && document.body.scrollWidth <= window.innerWidth"
        )
    )


def small_targets(page: Page) -> list[str]:
    """Visible buttons, links of the navigation and session list, and form fields smaller
    than 44×44 px (text inputs: less than 44 px high)."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(
              'button, select, input:not([type=checkbox]):not([type=radio]):not([type=file]),'
              + ' nav a, .session-list a, summary')]
            .filter((el) => el.offsetParent !== null && !el.closest('[inert]'))
            .filter((el) => {
              const box = el.getBoundingClientRect();
              if (box.width === 0 || box.height === 0) return false;
              const wide = el.matches('input, select, summary, .session-list a') ? 0 : 44;
              return box.height < 44 || box.width < wide;
            })
            .map((el) => `${el.tagName} ${el.getAttribute('aria-label') || el.textContent.trim()}`
              + ` ${Math.round(el.getBoundingClientRect().width)}x`
              + `${Math.round(el.getBoundingClientRect().height)}`)"""
    )
    return found


def screenshot(page: Page, name: str) -> Path:
    directory = Path(os.environ.get("YOUYOU_UI_SCREENSHOTS") or "/tmp/youyou-ui-screens")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled")
    return path


def wait_for(condition: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")
