"""A session's title is set once, by its first user message, and never replaced."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kernel_kit import build_agent, model, text
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.content import ImageBlock, TextBlock
from youyou.domain.ledger import AssistantMessage, LedgerEvent, Metadata, UserMessage
from youyou.domain.session import UNTITLED_SESSION, SessionListQuery, SessionSummary, next_summary

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PROFILE = Metadata(key="session_profile", value={})
IMAGE = ImageBlock(mime_type="image/png", data_base64="AA==")


def title_after(*payloads: object) -> str:
    summary: SessionSummary | None = None
    for seq, payload in enumerate(payloads, start=1):
        event = LedgerEvent(seq=seq, timestamp=T0 + timedelta(seconds=seq), payload=payload)
        summary = next_summary(summary, "s1", event)
    assert summary is not None
    return summary.title


def said(words: str) -> UserMessage:
    return UserMessage(content=(TextBlock(text=words),))


ANSWER = AssistantMessage(content=(TextBlock(text="ok"),))


def test_a_first_message_with_only_skill_triggers_keeps_the_session_untitled() -> None:
    assert title_after(PROFILE, said("/only"), ANSWER, said("second")) == UNTITLED_SESSION


def test_a_first_message_that_reads_untitled_session_is_a_title_like_any_other() -> None:
    assert title_after(PROFILE, said(UNTITLED_SESSION), ANSWER, said("second")) == UNTITLED_SESSION


def test_an_image_only_first_message_keeps_the_session_untitled() -> None:
    first = UserMessage(content=(IMAGE,))
    assert title_after(PROFILE, first, ANSWER, said("second")) == UNTITLED_SESSION


def test_the_first_line_with_text_of_the_first_message_is_the_title() -> None:
    first = UserMessage(content=(IMAGE, TextBlock(text="  \n"), TextBlock(text="Disk full\nmore")))
    assert title_after(PROFILE, first, ANSWER, said("second")) == "Disk full"


async def test_the_title_survives_later_turns_and_a_resume(sqlite_url: str) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        agent, _ = await build_agent(
            [text("a1"), text("a2"), text("a3")],
            models=(model("m1"),),
            configure=lambda b: b.register_session_storage(storage),
        )
        session = await agent.new_session()
        await (await session.send_message(UNTITLED_SESSION)).join()
        await (await session.send_message("a real question")).join()
        await session.close()
        resumed = await agent.resume_session(session.session_id)
        await (await resumed.send_message("another question")).join()
        page = await storage.list_sessions(SessionListQuery())
        assert [s.title for s in page.items] == [UNTITLED_SESSION]
        assert resumed.summary is not None and resumed.summary.title == UNTITLED_SESSION
    finally:
        await storage.close()
