"""Approval cards of a turn no server process runs any more (its server stopped while the call
waited; a new server serves the page), in a real browser (Chromium through Playwright): no
stream brings their decisions, so the page re-reads what waits every 3 s and on focus; a card
whose decision answers 409 says so in its place; Stop and Esc cancel the stopped turn, on a
desktop and a phone screen, and Send comes back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from approval_kit import ASK, TOOL, asks_for_the_time, decide, time_server, waiting_turn
from fakes.openai_server import FakeOpenAIServer
from server_kit import Api, Workbench
from test_workbench_approvals_ui import SIZES, chromium, signed_in_page, workbench_db

__all__ = ["chromium", "workbench_db"]  # fixtures shared with the card's own UI test


@dataclass(frozen=True)
class Stopped:
    """Sessions whose turn waits for approval while no server process runs it."""

    wb: Workbench  # the server started after the one that ran the turns stopped
    alice: Api
    calls: dict[str, str]  # session id → the call that waits

    def url(self, sid: str) -> str:
        return f"{self.wb.url}/#/chat/{sid}"

    def shown(self, sid: str) -> dict[str, Any]:
        found: dict[str, Any] = self.alice.data("GET", f"/chat/sessions/{sid}")
        return found


def stopped_turns(
    start: Callable[..., Workbench], model: FakeOpenAIServer, count: int = 1
) -> Stopped:
    model.default = asks_for_the_time
    first = start(extra=time_server())
    alice = first.user("alice")
    turns, calls = [], {}
    for _ in range(count):
        sid = alice.new_session()["id"]
        turn, asked = waiting_turn(alice, sid)
        turns.append(turn)
        calls[sid] = asked["callId"]
    assert first.server.stop() == 0  # a graceful stop leaves the calls waiting
    for turn in turns:
        turn.join(30)
    second = start(extra=time_server())
    api = Api(second.url, alice.token)
    second.clients.append(api)
    return Stopped(second, api, calls)


# The page without its 3 s re-read of the cards (the session list's poll is 4 s): only the
# window's focus re-reads them.
NO_POLL = (
    "const every = window.setInterval;"
    " window.setInterval = (run, ms, ...args) => (ms === 3000 ? 0 : every(run, ms, ...args));"
)


def card_of(page: Page) -> Locator:
    return page.get_by_role("group", name=f"Approval needed: {TOOL}")


def no_error_toast(page: Page) -> None:
    expect(page.locator(".toast.error")).to_have_count(0)


def test_cards_without_a_stream_follow_a_decision_taken_in_another_page(
    start_workbench: Callable[..., Workbench], fake_model: FakeOpenAIServer, chromium: Browser
) -> None:
    stopped = stopped_turns(start_workbench, fake_model)
    (sid,) = stopped.calls
    watching = signed_in_page(chromium, stopped.url(sid), stopped.alice, SIZES["desktop"])
    deciding = signed_in_page(chromium, stopped.url(sid), stopped.alice, SIZES["desktop"])
    for page in (watching, deciding):
        expect(card_of(page)).to_have_count(1)
    card_of(deciding).get_by_role("button", name="Approve").click()
    # The watching page has no stream of the turn: its re-read (every 3 s) removes the card,
    # then it shows the answer of the turn the decision continued.
    expect(card_of(watching)).to_have_count(0, timeout=10_000)
    answer = watching.get_by_role("article", name="Assistant answer").last
    expect(answer).to_contain_text("Asia/Tokyo")
    expect(watching.get_by_role("button", name="Send", exact=True)).to_be_visible()
    no_error_toast(watching)
    assert watching.errors == deciding.errors == []  # type: ignore[attr-defined]


def test_focus_rereads_the_cards_and_a_409_leaves_a_note(
    start_workbench: Callable[..., Workbench], fake_model: FakeOpenAIServer, chromium: Browser
) -> None:
    stopped = stopped_turns(start_workbench, fake_model, 2)
    (denied, cancelled) = stopped.calls
    pages = {}
    for sid in stopped.calls:
        page = pages[sid] = signed_in_page(
            chromium, stopped.url(sid), stopped.alice, SIZES["desktop"]
        )
        page.add_init_script(NO_POLL)
        page.reload()
        expect(card_of(page)).to_have_count(1)

    # decided on another device while the page holds its card: Approve answers 409 (the
    # page cannot re-read the session meanwhile, or the focus of the click would drop the card)
    page = pages[denied]
    page.route(f"**/chat/sessions/{denied}", lambda route: route.abort())
    decide(stopped.alice, denied, stopped.calls[denied], decision="deny", reason="not now")
    card_of(page).get_by_role("button", name="Approve").click()
    note = page.get_by_role("status").filter(has_text="This call no longer waits")
    expect(note).to_be_visible()
    expect(card_of(page)).to_have_count(0)
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    no_error_toast(page)

    # cancelled on another device: the focus re-reads the session at once
    stopped.alice.data("POST", f"/chat/sessions/{cancelled}/cancel")
    page = pages[cancelled]
    page.wait_for_timeout(500)
    expect(card_of(page)).to_have_count(1)  # no timer runs: nothing has re-read it
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(card_of(page)).to_have_count(0)
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    no_error_toast(page)
    assert [p.errors for p in pages.values()] == [[], []]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("size", "how"), [("desktop", "click"), ("desktop", "esc"), ("phone", "click")]
)
def test_stop_cancels_a_turn_no_process_runs(
    start_workbench: Callable[..., Workbench],
    fake_model: FakeOpenAIServer,
    chromium: Browser,
    size: str,
    how: str,
) -> None:
    stopped = stopped_turns(start_workbench, fake_model)
    ((sid, call_id),) = stopped.calls.items()
    page = signed_in_page(chromium, stopped.url(sid), stopped.alice, SIZES[size])
    card = card_of(page)
    expect(card).to_have_count(1)
    stop = page.get_by_role("button", name="Stop")
    send = page.get_by_role("button", name="Send", exact=True)
    expect(stop).to_be_visible()
    expect(send).to_be_hidden()

    if how == "click":
        stop.click()
    else:
        page.get_by_role("textbox", name="Message").press("Escape")

    expect(card).to_have_count(0)
    expect(send).to_be_visible()
    expect(stop).to_be_hidden()
    shown = stopped.shown(sid)
    assert (shown["pendingApprovals"], shown["running"]) == ([], False)
    no_error_toast(page)
    # the session takes a message again: the model asks once more, with a new call
    box = page.get_by_role("textbox", name="Message")
    box.fill(ASK)
    box.press("Enter")
    expect(card).to_have_count(1)
    assert card.get_attribute("data-call-id") not in (None, call_id)
    assert page.errors == []  # type: ignore[attr-defined]
