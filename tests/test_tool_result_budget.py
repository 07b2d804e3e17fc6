"""A tool result too large for the model's window: the model sees its head and tail, the
ledger keeps all of it, the turn goes on (see docs/architecture.md, 'The system prompt and
requests')."""

from __future__ import annotations

import re
from typing import Any

from kernel_kit import RecordingTool, block_text, build_agent, model, text
from test_sessions_durable import assert_same, live_and_resumed, turn
from youyou import OutcomeStatus, ScriptedResponse, SessionHandle, TextBlock, ToolOutput
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.ledger import ToolResult
from youyou.domain.model import ChatRequest, ModelMessageRole
from youyou.domain.tool_result_view import (
    TOOL_RESULT_WINDOW_SHARE,
    fit_tool_result,
    tool_result_token_limit,
)

WINDOW = 8_000
LIMIT = int(WINDOW * TOOL_RESULT_WINDOW_SHARE)
COUNTER = ApproximateTokenCounter()
# ~1 MB of `kubectl describe`-like lines: ~250 000 tokens against an 8 000-token window.
BIG = "".join(
    f"{i:06d} Warning BackOff pod/api-{i % 97} restarting failed container\n" for i in range(16_000)
)
MARKER = re.compile(
    r"\[\.\.\. ([\d,]+) of ([\d,]+) characters \(([\d,]+) lines\) of this tool result"
)


def chars(number: str) -> int:
    return int(number.replace(",", ""))


def test_a_result_within_its_share_is_untouched() -> None:
    content = "x" * 4 * LIMIT  # exactly LIMIT tokens for the approximate counter
    assert fit_tool_result(content, LIMIT, COUNTER.count_text) is content


def test_a_large_result_keeps_whole_lines_from_both_ends_around_the_marker() -> None:
    clipped = fit_tool_result(BIG, LIMIT, COUNTER.count_text)
    assert COUNTER.count_text(clipped) <= LIMIT
    match = MARKER.search(clipped)
    assert match is not None
    head, tail = clipped[: match.start()].rstrip("\n"), clipped[clipped.index("...]") + 4 :]
    tail = tail.lstrip("\n")
    assert BIG.startswith(head + "\n") and BIG.endswith(tail)
    assert tail.startswith("0")  # the tail starts at a line start
    omitted = BIG[len(head) + 1 : len(BIG) - len(tail)]
    assert chars(match[1]) == len(omitted) and chars(match[2]) == len(BIG)
    assert chars(match[3]) == omitted.count("\n")
    assert "narrower query" in clipped
    assert len(clipped) > 0.8 * 4 * LIMIT  # most of the share is used, not just the marker
    assert fit_tool_result(BIG, LIMIT, COUNTER.count_text) == clipped  # deterministic


def test_a_share_smaller_than_the_marker_still_ends() -> None:
    clipped = fit_tool_result("y" * 10_000, 5, COUNTER.count_text)
    assert MARKER.search(clipped) is not None
    assert clipped.strip().startswith("[...") and clipped.strip().endswith("...]")  # no content


def tokens_of(request: ChatRequest) -> int:
    texts = [request.system_prompt]
    for message in request.messages:
        texts.extend(b.text for b in message.content if isinstance(b, TextBlock))
        texts.extend(f"{c.tool_name}{c.arguments}" for c in message.tool_calls)
    return sum(COUNTER.count_text(t) + 4 for t in texts)


async def describe(args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(content=BIG)


async def test_a_one_megabyte_result_on_a_small_window_ends_the_turn_normally() -> None:
    tool = RecordingTool("kubectl_describe", behaviour=describe)
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls([("c1", "kubectl_describe", {"x": 1})]),
            text("the api pods keep restarting"),
        ],
        models=[model("m1", window=WINDOW)],
        tools=[tool],
    )
    session = await agent.new_session()
    running = await session.send_message("why is the namespace unhealthy?")
    events = await running.collect()
    outcome = await running.join()
    assert outcome.status is OutcomeStatus.COMPLETED, outcome.error
    assert "context_compacted" not in [e.payload.type for e in events]
    # The ledger keeps the whole output.
    results = [e.payload for e in session.events if isinstance(e.payload, ToolResult)]
    assert [r.result.output.content for r in results] == [BIG]
    # The model got the head and the tail around the marker, within its share of the window.
    request = provider.requests[-1]
    (tool_message,) = [m for m in request.messages if m.role is ModelMessageRole.TOOL]
    shown = block_text(tool_message.content[0])
    assert MARKER.search(shown) is not None
    assert shown.startswith(BIG[:200]) and shown.endswith(BIG[-200:])
    assert COUNTER.count_text(shown) <= tool_result_token_limit(WINDOW)
    assert tokens_of(request) < WINDOW
    assert session.usage().tokens < WINDOW


async def test_a_resumed_session_shows_the_same_clipped_result(db_url: str) -> None:
    tool = RecordingTool("kubectl_describe", behaviour=describe)

    async def prepare(session: SessionHandle) -> None:
        assert await turn(session, "describe the namespace") is OutcomeStatus.COMPLETED

    live, resumed = await live_and_resumed(
        db_url,
        [ScriptedResponse.tool_calls([("c1", "kubectl_describe", {})]), text("restarts")],
        prepare,
        models=(model("m1", window=WINDOW),),
        tools=[tool],
    )
    assert_same(live, resumed)
    assert MARKER.search(resumed.next_request.model_dump_json()) is not None
