from datetime import UTC, datetime

import pytest

from youyou.domain.content import TextBlock
from youyou.domain.context import (
    CompactionMode,
    CompactionRecord,
    TurnCounter,
    VisibleMessage,
    project_event,
    project_ledger,
    rebuild_visible_messages,
    render_compaction_summary,
)
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.templates import COMPACT_SUMMARY_PREFIX, PHRASES, Language

ENGLISH_MARKER = PHRASES[Language.EN].incomplete_assistant_marker

T = datetime(2026, 1, 1, tzinfo=UTC)


def ev(seq: int, payload: object) -> LedgerEvent:
    return LedgerEvent(seq=seq, timestamp=T, payload=payload)


def user(t: str) -> UserMessage:
    return UserMessage(content=(TextBlock(text=t),))


def assistant(t: str, status: MessageStatus = MessageStatus.COMPLETE) -> AssistantMessage:
    return AssistantMessage(content=(TextBlock(text=t),), status=status)


EVENTS = [
    ev(1, Metadata(key="session_profile", value={})),
    ev(2, user("a")),
    ev(3, assistant("partial", MessageStatus.INCOMPLETE)),
    ev(4, Metadata(key="skill_invocations", value=[{"skill_name": "x"}])),
    ev(5, user("b")),
    ev(6, assistant("cut again", MessageStatus.INCOMPLETE)),
    ev(7, user("c")),
    ev(8, assistant("done")),
]


def test_without_compaction_every_message_with_incomplete_markers() -> None:
    visible = rebuild_visible_messages(EVENTS, None)
    assert [v.source_seq for v in visible] == [2, 3, None, 5, 6, None, 7, 8]
    markers = [v.message for v in visible if v.source_seq is None]
    assert markers == [SystemMessage(content=ENGLISH_MARKER)] * 2


def test_the_cancel_marker_is_the_one_given() -> None:
    chinese = PHRASES[Language.ZH].incomplete_assistant_marker
    visible = rebuild_visible_messages(EVENTS, None, chinese)
    markers = [v.message for v in visible if v.source_seq is None]
    assert markers == [SystemMessage(content=chinese)] * 2


def test_summary_compaction_replaces_the_prefix_with_one_synthetic_message() -> None:
    record = CompactionRecord(
        mode=CompactionMode.SUMMARY, replaces_through_seq=5, summary_body="they said a and b"
    )
    visible = rebuild_visible_messages(EVENTS, record)
    assert visible[0].source_seq is None
    assert visible[0].message == SystemMessage(
        content=render_compaction_summary("they said a and b")
    )
    assert render_compaction_summary("x") == f"{COMPACT_SUMMARY_PREFIX}\n\nx"
    assert [v.source_seq for v in visible[1:]] == [6, None, 7, 8]


def test_truncation_fallback_drops_the_prefix_without_a_summary() -> None:
    record = CompactionRecord(mode=CompactionMode.TRUNCATION_FALLBACK, replaces_through_seq=6)
    visible = rebuild_visible_messages(EVENTS, record)
    assert [v.source_seq for v in visible] == [7, 8]


def test_turn_counter_counts_final_complete_answers_only() -> None:
    counter = TurnCounter()
    call = ToolCall(
        call=ToolCallRecord(
            call_id="c", tool_name="t", requested_arguments={}, effective_arguments={}
        )
    )
    for payload in [
        user("1"),
        assistant("thinking"),
        call,
        assistant("final"),
        user("2"),
        assistant("cut", MessageStatus.INCOMPLETE),
        user("3"),
        assistant("ok"),
    ]:
        counter.feed(payload)
    assert counter.completed == 2


def _call(call_id: str) -> ToolCall:
    record = ToolCallRecord(
        call_id=call_id, tool_name="t", requested_arguments={}, effective_arguments={}
    )
    return ToolCall(call=record)


def _result(call_id: str) -> ToolResult:
    record = ToolResultRecord(call_id=call_id, tool_name="t", output=ToolOutput(content="r"))
    return ToolResult(result=record)


def test_project_event_appends_in_place_and_says_whether_it_contributed() -> None:
    into = [VisibleMessage(None, SystemMessage(content="already there"))]
    calls: set[str] = set()
    assert project_event(ev(2, user("a")), calls, into) is True
    assert project_event(ev(3, Metadata(key="k", value=1)), calls, into) is False
    assert project_event(ev(4, _result("orphan")), calls, into) is False  # its call is not visible
    assert project_event(ev(5, _call("c")), calls, into) is True
    assert calls == {"c"}
    assert project_event(ev(6, _result("c")), calls, into) is True
    assert project_event(ev(7, assistant("cut", MessageStatus.INCOMPLETE)), calls, into) is True
    assert [v.source_seq for v in into] == [None, 2, 5, 6, 7, None]
    assert into[-1].message == SystemMessage(content=ENGLISH_MARKER)


def test_project_ledger_counts_the_events_that_contributed_not_the_messages() -> None:
    projection = project_ledger(EVENTS, None)
    assert len(projection.visible) == 8  # two of them incomplete-answer markers
    assert projection.ledger_messages == 6


def test_a_visible_message_is_immutable() -> None:
    message = VisibleMessage(1, user("a"))
    with pytest.raises(AttributeError):
        message.source_seq = 2  # type: ignore[misc]
    assert (message.source_seq, message.message) == (1, user("a"))
