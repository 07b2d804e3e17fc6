"""Single sign-on in a real browser (Playwright, Debian's Chromium) against a real OpenID
Connect provider process (``oidc-provider-mock``): the sign-in screen's provider button, the
provider's page, the way back to the web UI that finishes the sign-on and opens the workbench;
a replayed answer or the provider's refusal is said on the sign-in screen; with password
sign-in turned off only the provider's button is left."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import Api, InProcessServer, Workbench, write_config

# The provider process and the browser fixtures, asked for by name.
from test_workbench_oidc import Provider, provider, sso_config  # noqa: F401
from test_workbench_ui import OpenPage, browser, open_page  # noqa: F401
from ui_kit import assert_accessible

SsoWorkbench = Callable[..., tuple[Workbench, Provider]]
NAME = "Acme ID"


@pytest.fixture
def sso_workbench(
    tmp_path: Path, sqlite_url: str, fake_model: FakeOpenAIServer, request: pytest.FixtureRequest
) -> Iterator[SsoWorkbench]:
    """``sso_workbench(password_login=…)`` → a server on SQLite whose ``redirect_uri`` is its
    own web UI (so its port is chosen before its configuration is written), and the provider
    process it trusts."""
    trusted: Provider = request.getfixturevalue("provider")
    started: list[Workbench] = []

    def start(*, password_login: bool = True) -> tuple[Workbench, Provider]:
        port = free_port()
        extra = sso_config(
            trusted,
            password_login=password_login,
            redirect=f"http://127.0.0.1:{port}/",
            extra=f'display_name = "{NAME}"\n',
        )
        root = tmp_path / f"wb{len(started)}"
        root.mkdir()
        config = write_config(root, sqlite_url, fake_model.base_url, extra=extra)
        workbench = Workbench(InProcessServer(root, config, port).start(), fake_model)
        started.append(workbench)
        return workbench, trusted

    yield start
    for workbench in started:
        workbench.close()
        workbench.server.stop()


def sign_in_at_provider(page: Page, sub: str) -> None:
    """What the user does on the provider's page: sign in as ``sub``."""
    page.locator("input[name=sub]").fill(sub)
    page.get_by_role("button", name="Authorize", exact=True).click()


def stored_auth(page: Page) -> dict[str, object] | None:
    saved = page.evaluate("() => localStorage.getItem('youyou.auth')")
    return json.loads(saved) if saved else None


def test_signing_in_with_the_provider_opens_the_workbench_and_a_replay_is_refused(
    sso_workbench: SsoWorkbench, request: pytest.FixtureRequest
) -> None:
    opened: OpenPage = request.getfixturevalue("open_page")
    wb, oidc = sso_workbench()
    oidc.user("u-1", preferred_username="zoe", groups=["sre"])
    page = opened(wb.url)
    expect(page.get_by_role("textbox", name="Username")).to_be_visible()  # passwords still work
    callbacks: list[str] = []
    page.on(
        "framenavigated",
        lambda frame: callbacks.append(frame.url) if "state=" in frame.url else None,
    )
    page.get_by_role("button", name=f"Sign in with {NAME}").click()
    page.wait_for_url(f"{oidc.issuer}/**")
    sign_in_at_provider(page, "u-1")

    expect(page.get_by_role("link", name="Chat")).to_have_attribute("aria-current", "page")
    expect(page.get_by_text("zoe", exact=True)).to_be_visible()
    assert "code=" not in page.url  # taken out of the address: a reload posts nothing
    saved = stored_auth(page)
    assert saved is not None
    me = Api(wb.url, str(saved["token"])).data("GET", "/auth/me")
    assert (me["username"], me["role"]) == ("zoe", "member")
    page.reload()
    expect(page.get_by_text("zoe", exact=True)).to_be_visible()

    assert [url for url in callbacks if url.startswith(wb.url)], callbacks
    replayed = opened(next(url for url in callbacks if url.startswith(wb.url)))
    expect(replayed.get_by_role("alert")).to_have_text("Single sign-on failed; sign in again")
    expect(replayed.get_by_role("heading", name="Sign in")).to_be_visible()
    assert stored_auth(replayed) is None


def test_without_password_sign_in_only_the_provider_button_is_shown(
    sso_workbench: SsoWorkbench, request: pytest.FixtureRequest
) -> None:
    opened: OpenPage = request.getfixturevalue("open_page")
    wb, oidc = sso_workbench(password_login=False)
    page = opened(wb.url)
    button = page.get_by_role("button", name=f"Sign in with {NAME}")
    expect(button).to_be_focused()
    expect(page.get_by_role("textbox")).to_have_count(0)
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_have_count(0)

    button.click()
    page.get_by_role("button", name="Deny").click()  # the provider sends back ?error=
    expect(page.get_by_role("alert")).to_contain_text(
        "The sign-in provider did not complete the sign-in"
    )
    assert "error=" not in page.url
    expect(page.get_by_role("textbox")).to_have_count(0)
    assert_accessible(page)

    oidc.user("u-2", preferred_username="carl")
    page.get_by_role("button", name=f"Sign in with {NAME}").click()
    sign_in_at_provider(page, "u-2")
    expect(page.get_by_text("carl", exact=True)).to_be_visible()
