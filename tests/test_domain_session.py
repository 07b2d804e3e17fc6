from datetime import UTC, datetime, timedelta

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    Metadata,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    UserMessage,
)
from youyou.domain.session import UNTITLED_SESSION, SessionSummary, next_summary

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(*payloads: object) -> SessionSummary:
    summary = None
    for seq, payload in enumerate(payloads, start=1):
        event = LedgerEvent(seq=seq, timestamp=T0 + timedelta(seconds=seq), payload=payload)
        summary = next_summary(summary, "s1", event)
    assert summary is not None
    return summary


PROFILE = Metadata(key="session_profile", value={})


def test_title_from_first_user_text_with_leading_skills_stripped() -> None:
    summary = run(
        PROFILE, UserMessage(content=(TextBlock(text="/triage /logs Disk full on db-1\nmore"),))
    )
    assert summary.title == "Disk full on db-1"


def test_title_from_file_text_keeps_skill_like_prefix() -> None:
    summary = run(PROFILE, UserMessage(content=(FileContentBlock(text="/commit notes\nx"),)))
    assert summary.title == "/commit notes"


def test_untitled_fallback_and_the_first_message_decides() -> None:
    assert run(PROFILE).title == UNTITLED_SESSION
    image = ImageBlock(mime_type="image/png", data_base64="AA==")
    summary = run(
        PROFILE,
        UserMessage(content=(TextBlock(text="first"),)),
        UserMessage(content=(TextBlock(text="second"),)),
    )
    assert summary.title == "first"
    summary = run(
        PROFILE,
        UserMessage(content=(image,)),
        UserMessage(content=(TextBlock(text="second"),)),
    )
    assert summary.title == UNTITLED_SESSION
    assert run(PROFILE, UserMessage(content=(TextBlock(text="/only"),))).title == UNTITLED_SESSION


def test_message_count_and_timestamps() -> None:
    call = ToolCall(
        call=ToolCallRecord(
            call_id="c", tool_name="t", requested_arguments={}, effective_arguments={}
        )
    )
    summary = run(
        PROFILE,
        UserMessage(content=(TextBlock(text="q"),)),
        call,
        AssistantMessage(content=(TextBlock(text="a"),)),
        SystemMessage(content="s"),
    )
    assert summary.message_count == 3
    assert summary.created_at == T0 + timedelta(seconds=1)
    assert summary.updated_at == T0 + timedelta(seconds=5)
