"""Turn views: Markdown per finished paragraph, plain text for pipes, JSON lines."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from rich.console import Console

from youyou.cli.render import (
    JsonTurnView,
    PlainTurnView,
    RichTurnView,
    context_line,
    format_arguments,
    shorten,
    split_complete,
    tool_result_line,
)
from youyou.config import ModelPrice
from youyou.domain.context import CompactionMode
from youyou.domain.events import (
    AgentEvent,
    AgentEventPayload,
    ContextCompacted,
    ContextUsage,
    ErrorEvent,
    ModelWaiting,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolCallEnd,
    ToolCallStart,
    TurnCancelled,
    TurnComplete,
    TurnStarted,
)
from youyou.domain.ledger import ToolOutput
from youyou.domain.model import Usage


def _events(*payloads: AgentEventPayload) -> list[AgentEvent]:
    return [
        AgentEvent(
            session_id="s",
            turn_id="t",
            timestamp=datetime(2026, 1, 1, tzinfo=UTC),
            sequence=n,
            payload=p,
        )
        for n, p in enumerate(payloads, 1)
    ]


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=80, color_system=None), out


def test_split_complete_cuts_at_the_last_blank_line_outside_code_fences() -> None:
    assert split_complete("one\n\ntwo\n\nthr") == ("one\n\ntwo", "thr")
    assert split_complete("no break yet") == ("", "no break yet")
    fenced = "intro\n\n```\ncode\n\nmore code"
    assert split_complete(fenced) == ("intro", "```\ncode\n\nmore code")
    assert split_complete(fenced + "\n```\n\nafter") == (fenced + "\n```", "after")


def test_shorten_keeps_the_first_line_and_marks_cuts() -> None:
    assert shorten("short", 10) == "short"
    assert shorten("x" * 20, 10) == "x" * 9 + "…"
    assert shorten("first\nsecond", 50) == "first …"
    assert format_arguments({"timezone": "Asia/Shanghai"}) == '{"timezone":"Asia/Shanghai"}'


def test_tool_result_line_prefers_the_display_line() -> None:
    loaded = ToolOutput(content="Loaded skill: x\n\nlong body", metadata={"display": "Loaded"})
    assert tool_result_line(loaded) == "Loaded"
    assert tool_result_line(ToolOutput(content="a\nb")) == "a …"


def test_context_line_turns_yellow_at_70_and_red_at_95_percent() -> None:
    def style(tokens: int) -> str:
        return str(context_line(ContextUsage.of(tokens, 1000, True)).style)

    assert style(699) == "dim"
    assert style(700) == "yellow"
    assert style(949) == "yellow"
    assert style(950) == "red bold"
    assert (
        context_line(ContextUsage.of(1234, 32000, True)).plain
        == "context 1,234 / 32,000 tokens (3.9 %)"
    )


def test_rich_view_prints_markdown_reasoning_tools_and_usage() -> None:
    console, out = _console()
    view = RichTurnView(console)
    for event in _events(
        TurnStarted(user_message_seq=2),
        ReasoningDeltaEvent(text="checking the clock"),
        ToolCallStart(call_id="c1", tool_name="get_current_time", arguments={"timezone": "UTC"}),
        ToolCallEnd(
            call_id="c1",
            tool_name="get_current_time",
            output=ToolOutput(content="12:00\nmore"),
            duration_ms=7,
        ),
        ContextCompacted(mode=CompactionMode.SUMMARY, replaces_through_seq=9),
        TextDeltaEvent(text="It is **noon**.\n\n- a"),
        TextDeltaEvent(text="\n- b"),
        TurnComplete(usage=Usage(), context=ContextUsage.of(800, 1000, True)),
    ):
        view.handle(event)
    view.close()
    text = out.getvalue()
    assert "checking the clock" in text
    assert '✓ get_current_time {"timezone":"UTC"} · 7 ms → 12:00 …' in text
    assert "context compacted (summary): history through message #9" in text
    assert "It is noon." in text and "**" not in text
    assert "• a" in text and "• b" in text
    assert "context 800 / 1,000 tokens (80.0 %)" in text
    assert (
        text.index("checking the clock")
        < text.index("get_current_time")
        < text.index("It is noon.")
    )


def test_rich_view_keeps_a_cancelled_partial_answer_and_says_so() -> None:
    console, out = _console()
    view = RichTurnView(console)
    for event in _events(TextDeltaEvent(text="half an ans"), TurnCancelled()):
        view.handle(event)
    view.close()
    assert "half an ans" in out.getvalue()
    assert "cancelled: the answer above is incomplete" in out.getvalue()


def test_plain_view_streams_the_answer_on_stdout_and_notes_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PlainTurnView(out, err)
    for event in _events(
        TextDeltaEvent(text="part one, "),
        ToolCallEnd(call_id="c1", tool_name="t", output=ToolOutput(content="ok"), duration_ms=3),
        TextDeltaEvent(text="part two"),
        ErrorEvent(code="PROVIDER_ERROR", message="boom"),
    ):
        view.handle(event)
    view.close()
    assert out.getvalue() == "part one, \npart two\n"
    assert err.getvalue() == "[tool t ok 3 ms] ok\n✗ PROVIDER_ERROR: boom\n"


def test_plain_view_notes_each_wait_for_the_model_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PlainTurnView(out, err)
    for event in _events(
        ModelWaiting(elapsed_s=5), ModelWaiting(elapsed_s=10), TextDeltaEvent(text="late")
    ):
        view.handle(event)
    view.close()
    assert out.getvalue() == "late\n"
    assert err.getvalue() == "[waiting for the model… 5 s]\n[waiting for the model… 10 s]\n"


def test_json_view_writes_one_parseable_event_per_line() -> None:
    out = io.StringIO()
    view = JsonTurnView(out)
    events = _events(TurnStarted(user_message_seq=1), TextDeltaEvent(text="hé"))
    for event in events:
        view.handle(event)
    view.close()
    lines = out.getvalue().splitlines()
    assert [AgentEvent.model_validate(json.loads(line)) for line in lines] == events


def test_reasoning_collapses_to_one_line_unless_expanded() -> None:
    reasoning = "first I check the disk\nthen the inodes\nthen the logs"
    stream = (ReasoningDeltaEvent(text=reasoning), TextDeltaEvent(text="Answer."))
    console, out = _console()
    view = RichTurnView(console)
    for event in _events(*stream):
        view.handle(event)
    view.close()
    collapsed = out.getvalue()
    assert "▸ reasoning: first I check the disk  (3 lines · /reasoning to expand)" in collapsed
    assert "then the inodes" not in collapsed
    assert view.reasoning_log == reasoning
    console, out = _console()
    expanded = RichTurnView(console, expand_reasoning=True)
    for event in _events(*stream):
        expanded.handle(event)
    expanded.close()
    assert "then the inodes" in out.getvalue() and "▸ reasoning" not in out.getvalue()


def test_each_turn_ends_with_its_tokens_and_its_cost_when_the_model_has_prices() -> None:
    done = TurnComplete(
        usage=Usage(input_tokens=1200, output_tokens=85, total_tokens=1285),
        context=ContextUsage.of(800, 1000, True),
    )
    console, out = _console()
    priced = RichTurnView(console, price=ModelPrice(2.5, 10.0))
    for event in _events(TextDeltaEvent(text="ok"), done):
        priced.handle(event)
    priced.close()
    assert "context 800 / 1,000 tokens (80.0 %)  ·  turn 1,200 in / 85 out · cost 0.003850" in (
        out.getvalue()
    )
    assert priced.usage == done.usage
    console, out = _console()
    unpriced = RichTurnView(console)
    for event in _events(done):
        unpriced.handle(event)
    unpriced.close()
    assert "turn 1,200 in / 85 out" in out.getvalue() and "cost" not in out.getvalue()
