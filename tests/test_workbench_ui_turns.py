"""Running turns in the web UI the way an incident uses them: Stop after a reload and in a
second tab (with Esc), a refused send that leaves the live stream alone, the streaming cursor
at the end of the line, toasts that fade and never cover Send/Stop, and the banner while the
server cannot be reached (the draft kept).
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, Route, expect

from fakes.http_server import StreamReply
from fakes.openai_server import OpenAIStream
from server_kit import Workbench
from ui_kit import OpenPage, browser, open_page, shared_workbench

__all__ = ["browser", "open_page", "shared_workbench"]  # fixtures used by name

STOP = re.compile(r"^Stop")


def slow_reply(pieces: int, delay_s: float) -> StreamReply:
    words = [f" word{i}" for i in range(pieces)]
    return OpenAIStream().text(*words, delay_s=delay_s).finish().usage(10, 5).reply()


def send(page: Page, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def answer(page: Page):  # type: ignore[no-untyped-def]
    return page.get_by_role("article", name=re.compile("^Assistant answer")).last


def test_stop_survives_a_reload_and_works_from_a_second_tab(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("turns-reload")
    session = api.new_session(title="reload")
    wb.model.enqueue(slow_reply(60, 0.4))
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "a long answer please")
    expect(answer(page)).to_contain_text("word2")

    page.reload()
    expect(answer(page)).to_contain_text("word5")
    stop = page.get_by_role("button", name=STOP)
    expect(stop).to_be_visible()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_hidden()
    expect(page.get_by_text("started in another tab")).to_be_hidden()  # this tab started it

    second = page.context.new_page()
    second.goto(f"{wb.url}/#/chat/{session['id']}")
    expect(answer(second)).to_contain_text("word8")
    expect(second.get_by_role("button", name=STOP)).to_be_visible()
    expect(second.get_by_text("started in another tab")).to_be_visible()
    second.get_by_role("textbox", name="Message").click()
    second.keyboard.press("Escape")

    for tab in (page, second):
        expect(answer(tab)).to_have_attribute("aria-label", "Assistant answer (incomplete)")
        expect(tab.get_by_role("button", name="Send", exact=True)).to_be_visible()
        expect(tab.locator(".cursor")).to_have_count(0)
    assert "word59" not in answer(page).inner_text()


def test_a_refused_send_keeps_following_the_running_turn(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("turns-refused")
    session = api.new_session(title="two tabs")
    watcher = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    expect(watcher.get_by_role("button", name="Send", exact=True)).to_be_enabled()

    # The watcher does not hear of the other turn from its session list: its send is the
    # first it learns of it (409, a turn is running).
    def no_news(route: Route) -> None:
        route.fulfill(json={"data": {"items": [], "nextCursor": None}, "requestId": "t"})

    watcher.route(re.compile(r".*/chat/sessions\?.*since=.*"), no_news)
    wb.model.enqueue(slow_reply(60, 0.4))
    writer = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(writer, "first question")
    expect(answer(writer)).to_contain_text("word2")

    send(watcher, "second question")
    expect(answer(watcher)).to_contain_text("word6")
    expect(watcher.get_by_role("button", name=STOP)).to_be_visible()
    expect(watcher.get_by_role("textbox", name="Message")).to_have_value("second question")

    writer.get_by_role("button", name=STOP).click()
    expect(answer(watcher)).to_have_attribute("aria-label", "Assistant answer (incomplete)")
    expect(watcher.locator(".cursor")).to_have_count(0)
    expect(watcher.get_by_role("button", name="Send", exact=True)).to_be_visible()


def test_the_streaming_cursor_ends_the_last_line(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("turns-cursor")
    session = api.new_session()
    wb.model.enqueue(slow_reply(30, 0.3))
    page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api)
    send(page, "go")
    expect(answer(page)).to_contain_text("word3")
    cursor = page.locator(".msg.streaming .cursor")
    expect(cursor).to_have_count(1)
    assert cursor.evaluate("(c) => c.parentElement.tagName") == "P"
    line = cursor.evaluate(
        """(c) => {
            const text = c.previousSibling, range = document.createRange();
            range.selectNodeContents(text);
            const rects = range.getClientRects(), last = rects[rects.length - 1];
            return Math.abs(last.top - c.getBoundingClientRect().top) < 4;
        }"""
    )
    assert line, "the cursor is on the line of the last word"
    page.keyboard.press("Escape")
    expect(page.locator(".cursor")).to_have_count(0)


def test_toasts_fade_and_never_cover_send(shared_workbench: Workbench, open_page: OpenPage) -> None:
    wb = shared_workbench
    api = wb.user("turns-toast")
    session = api.new_session()
    for size in ("desktop", "phone"):
        page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api, size=size, clock=True)
        expect(page.get_by_role("textbox", name="Message")).to_be_enabled()
        composer = page.get_by_role("form", name="Write a message")
        composer.evaluate(
            """(form) => {
                const data = new DataTransfer();
                const file = new File(["\\u0000"], "core.bin", { type: "application/x-core" });
                data.items.add(file);
                form.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true }));
            }"""
        )
        toast = page.get_by_role("alert").filter(has_text="core.bin")
        expect(toast).to_be_visible()
        box, button = toast.bounding_box(), page.get_by_role("button", name="Send").bounding_box()
        assert box is not None and button is not None
        overlap_x = (
            box["x"] < button["x"] + button["width"] and button["x"] < box["x"] + box["width"]
        )
        overlap_y = (
            box["y"] < button["y"] + button["height"] and button["y"] < box["y"] + box["height"]
        )
        assert not (overlap_x and overlap_y), f"the toast covers Send on {size}"
        page.clock.fast_forward(4_000)  # an error stays 8 s (a notice 4 s)
        expect(toast).to_be_visible()
        page.clock.fast_forward(5_000)
        expect(toast).to_have_count(0)


def test_an_unreachable_server_is_shown_and_the_draft_kept(
    shared_workbench: Workbench, open_page: OpenPage
) -> None:
    wb = shared_workbench
    api = wb.user("turns-offline")
    for locale, banner_text, back_text in (
        ("en-US", "Server unreachable — retrying", "Connected to the server again"),
        ("zh-CN", "无法连接服务器，正在重试", "已重新连接到服务器"),
    ):
        session = api.new_session()
        page = open_page(f"{wb.url}/#/chat/{session['id']}", user=api, locale=locale, clock=True)
        box = page.get_by_role("textbox")
        expect(box).to_be_enabled()

        def refuse(route: Route) -> None:
            route.abort("connectionrefused")

        page.route(re.compile(r".*/(chat|healthz).*"), refuse)
        box.fill("is the database up?")
        box.press("Enter")
        banner = page.locator(".banner")
        expect(banner).to_contain_text(banner_text)
        expect(box).to_have_value("is the database up?")
        expect(page.locator("form.composer button[type=submit]")).to_be_disabled()
        expect(page.get_by_text("Failed to fetch")).to_have_count(0)
        expect(page.get_by_role("article", name=re.compile("Your message|你的消息"))).to_have_count(
            0
        )

        page.unroute_all()
        page.clock.fast_forward(5_000)  # the longest pause between probes
        expect(banner).to_contain_text(back_text)
        page.clock.fast_forward(5_000)  # "back" shows for 4 s
        expect(banner).to_be_hidden()
        expect(page.locator("form.composer button[type=submit]")).to_be_enabled()
        box.press("Enter")
        expect(page.locator("article.assistant").last).to_contain_text("ok")
        expect(box).to_have_value("")
