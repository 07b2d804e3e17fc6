"""Tool calls and results stay paired in every request, whatever history was cut away.

A property test drives the real context manager, truncation and request builder over random
histories: concurrent and serial tool batches, cancelled batches, interrupted calls, summaries
and truncations at random budgets, before a turn and inside one. See docs/architecture.md,
'Compaction'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_kit import RecordingTool, build_agent, model, text
from youyou import AgentConfig, CompactionPolicy, MemoryMode, ScriptedResponse, TurnOutcome
from youyou.application.compaction import truncation_boundary
from youyou.application.context_manager import ContextManager
from youyou.application.request_builder import ChatRequestBuilder, RequestBuildOptions
from youyou.application.token_estimator import MESSAGE_OVERHEAD_TOKENS, ContextTokenEstimator
from youyou.domain.content import TextBlock
from youyou.domain.context import CompactionMode, CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    SessionEventPayload,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.model import ChatRequest, ModelMessage, ModelMessageRole, ProviderErrorKind
from youyou.domain.templates import TOOL_INTERRUPTED, TOOL_SKIPPED_CANCELLED, TURN_ABORTED_MESSAGE
from youyou.domain.turn import TurnAugmentation

T = datetime(2026, 1, 1, tzinfo=UTC)


class CharCounter:
    """One token per character: cheap, and budgets are easy to reason about."""

    def count_text(self, text: str) -> int:
        return len(text)


async def sized(size: int) -> ToolOutput:
    return ToolOutput(content="r" * size)


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n)) or tag


class Session:
    """A ledger grown event by event, as the turn engine and the dispatcher write it."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.events: list[LedgerEvent] = []
        self.context = ContextManager(ContextTokenEstimator(CharCounter()), window)
        self.record: CompactionRecord | None = None
        self.calls = 0
        self.unanswered: list[ToolCall] = []

    def add(self, payload: SessionEventPayload) -> LedgerEvent:
        event = LedgerEvent(seq=len(self.events) + 1, timestamp=T, payload=payload)
        self.events.append(event)
        self.context.append(event)
        return event

    def call(self, size: int) -> ToolCall:
        self.calls += 1
        call = ToolCall(
            call=ToolCallRecord(
                call_id=f"c{self.calls}",
                tool_name="t",
                requested_arguments={"q": "x" * (size % 50)},
                effective_arguments={"q": "x" * (size % 50)},
            )
        )
        self.add(call)
        return call

    def answer(self, call: ToolCall, content: str, *, error: bool = False) -> None:
        record = ToolResultRecord(
            call_id=call.call.call_id,
            tool_name="t",
            output=ToolOutput(content=content, is_error=error),
        )
        self.add(ToolResult(result=record))

    def answer_interrupted(self) -> None:
        for call in self.unanswered:
            self.answer(call, TOOL_INTERRUPTED, error=True)
        self.unanswered = []

    def compact(self, before_seq: int | None, budget: int | None) -> None:
        """A summary (``budget`` None) or a truncation fallback keeping ``budget`` tokens."""
        messages = self.context.compactable(before_seq)
        if not messages:
            return
        tokens = self.context.estimator.message_tokens
        boundary = (
            messages[-1].source_seq
            if budget is None
            else truncation_boundary(messages, tokens, budget)
        )
        if boundary is None:
            return
        self.record = CompactionRecord(
            mode=CompactionMode.SUMMARY if budget is None else CompactionMode.TRUNCATION_FALLBACK,
            replaces_through_seq=boundary,
            summary_body="the summary" if budget is None else None,
        )
        self.add(Metadata(key=META_CONTEXT_COMPACTION, value=self.record.model_dump(mode="json")))
        self.context.rebuild(self.events, self.record)
        assert_cut_is_safe(self.events, boundary)

    def run_step(self, step: tuple[Any, ...], anchor: int) -> bool:
        """One model response of the turn; returns True if it ends the turn."""
        kind = step[0]
        if kind == "text":
            self.add(AssistantMessage(content=(TextBlock(text=words(step[1], "a")),)))
            return False
        if kind == "incomplete":
            status = MessageStatus.INCOMPLETE
            self.add(
                AssistantMessage(content=(TextBlock(text=words(step[1], "p")),), status=status)
            )
            return True
        if kind == "aborted":
            self.add(SystemMessage(content=TURN_ABORTED_MESSAGE))
            return False
        if kind == "interrupted":
            self.unanswered = [self.call(size) for size in step[1]]
            return True
        _, sizes, serial, lead, cancel_at, budget = step
        if lead:
            self.add(AssistantMessage(content=(TextBlock(text="let me look"),)))
        cancelled = cancel_at is not None and cancel_at < len(sizes)

        def output(index: int, size: int) -> str:
            return TOOL_SKIPPED_CANCELLED if cancelled and index >= cancel_at else "r" * size

        if serial:
            for index, size in enumerate(sizes):
                self.answer(self.call(size), output(index, size))
        else:
            calls = [self.call(size) for size in sizes]
            for index, (call, size) in enumerate(zip(calls, sizes, strict=True)):
                self.answer(call, output(index, size))
        if cancelled:
            return True
        if budget is not None:  # the size threshold after a tool batch
            self.compact(anchor, budget)
        return False

    def run_turn(self, compaction: int | str | None, steps: list[tuple[Any, ...]], n: int) -> int:
        """A turn as the engine runs it; returns the seq of its user message (the anchor)."""
        self.answer_interrupted()
        if compaction is not None:  # admission, before the user message
            self.compact(None, None if compaction == "summary" else int(compaction))
        anchor = self.add(UserMessage(content=(TextBlock(text=words(n, "u")),))).seq
        for step in steps:
            if self.run_step(step, anchor):
                return anchor
        self.add(AssistantMessage(content=(TextBlock(text=words(n, "f")),)))
        return anchor

    def request(self, context: ContextManager, anchor: int) -> ChatRequest:
        return ChatRequestBuilder().build(
            model=model(window=self.window),
            system_prompt="sys",
            context=context.build_request_context(TurnAugmentation(anchor)),
            tools=(),
            options=RequestBuildOptions(allow_tools=False),
        )


def assert_cut_is_safe(events: list[LedgerEvent], boundary: int) -> None:
    """No result kept without its call; no assistant message split from its tool calls."""
    messages = [e for e in events if not isinstance(e.payload, Metadata)]
    dropped_calls = {
        e.payload.call.call_id
        for e in messages
        if e.seq <= boundary and isinstance(e.payload, ToolCall)
    }
    kept = [e.payload for e in messages if e.seq > boundary]
    for payload in kept:
        if isinstance(payload, ToolResult):
            assert payload.result.call_id not in dropped_calls
    before = [e.payload for e in messages if e.seq <= boundary]
    if kept and before and isinstance(kept[0], ToolCall):
        assert not isinstance(before[-1], AssistantMessage | ToolCall)


def assert_calls_paired(messages: tuple[ModelMessage, ...]) -> None:
    """Each tool result follows its call's assistant message; each call has its result."""
    awaited: set[str] = set()
    for message in messages:
        if message.role is ModelMessageRole.TOOL:
            assert message.tool_call_id in awaited, f"orphan result {message.tool_call_id}"
            awaited.discard(message.tool_call_id)
            continue
        assert not awaited, f"calls without results: {sorted(awaited)}"
        if message.role is ModelMessageRole.ASSISTANT:
            awaited = {call.call_id for call in message.tool_calls}
    assert not awaited, f"calls without results: {sorted(awaited)}"


SIZES = st.lists(st.integers(0, 3_000), min_size=1, max_size=4)
BUDGET = st.integers(0, 8_000)
STEP = st.one_of(
    st.tuples(st.just("text"), st.integers(0, 40)),
    st.tuples(st.just("incomplete"), st.integers(0, 40)),
    st.tuples(st.just("aborted")),
    st.tuples(st.just("interrupted"), SIZES),
    st.tuples(
        st.just("batch"),
        SIZES,
        st.booleans(),  # serial (a mutating call) or concurrent
        st.booleans(),  # assistant text before the calls
        st.none() | st.integers(0, 3),  # cancelled from this call on
        st.none() | BUDGET,  # truncation inside the turn after the batch
    ),
)
TURN = st.tuples(
    st.none() | st.just("summary") | BUDGET,  # compaction at admission
    st.lists(STEP, max_size=5),
    st.integers(0, 30),
)


@settings(max_examples=2000, deadline=None)
@given(window=st.integers(200, 20_000), turns=st.lists(TURN, min_size=1, max_size=6))
def test_every_request_pairs_each_tool_result_with_its_call(
    window: int, turns: list[tuple[Any, list[tuple[Any, ...]], int]]
) -> None:
    session = Session(window)
    anchor = 0
    for compaction, steps, n in turns:
        anchor = session.run_turn(compaction, steps, n)
    session.answer_interrupted()  # as a resume or the next turn does
    live = session.request(session.context, anchor)
    assert_calls_paired(live.messages)
    # A resume rebuilds the same visible context and sends the same request.
    resumed = ContextManager(ContextTokenEstimator(CharCounter()), window)
    resumed.rebuild(session.events, session.record)
    assert resumed.state.visible_messages == session.context.state.visible_messages
    assert resumed.history_tokens == session.context.history_tokens
    assert session.request(resumed, anchor) == live


# -- the cases the property found first ------------------------------------------------------


def test_truncation_never_cuts_between_the_calls_of_a_concurrent_batch() -> None:
    session = Session(100_000)
    session.add(UserMessage(content=(TextBlock(text="look"),)))
    first, second = session.call(0), session.call(0)
    session.answer(first, "r" * 50)
    session.answer(second, "r" * 50)
    session.add(AssistantMessage(content=(TextBlock(text="done"),)))
    messages = session.context.compactable(None)
    tokens = session.context.estimator.message_tokens
    # Room for everything from the second call on: the old cut kept the first result alone.
    budget = sum(tokens(vm) for vm in messages[2:])
    boundary = truncation_boundary(messages, tokens, budget)
    assert boundary == 5  # the whole batch goes: what is kept starts after its last result
    assert_cut_is_safe(session.events, 5)


def test_truncation_keeps_assistant_text_with_its_tool_calls() -> None:
    session = Session(100_000)
    session.add(UserMessage(content=(TextBlock(text="look"),)))
    session.add(AssistantMessage(content=(TextBlock(text="let me look " * 20),)))
    session.answer(session.call(0), "r")
    session.add(AssistantMessage(content=(TextBlock(text="done"),)))
    messages = session.context.compactable(None)
    tokens = session.context.estimator.message_tokens
    budget = sum(tokens(vm) for vm in messages[2:])
    assert truncation_boundary(messages, tokens, budget) == 4


def test_a_result_whose_call_is_behind_the_boundary_is_not_shown() -> None:
    """A session an older kernel cut inside a batch goes on: the stray result is left out."""
    session = Session(100_000)
    session.add(UserMessage(content=(TextBlock(text="look"),)))
    first, second = session.call(0), session.call(0)
    session.answer(first, "one")
    session.answer(second, "two")
    session.add(AssistantMessage(content=(TextBlock(text="done"),)))
    anchor = session.add(UserMessage(content=(TextBlock(text="next"),))).seq
    broken = CompactionRecord(mode=CompactionMode.TRUNCATION_FALLBACK, replaces_through_seq=2)
    session.context.rebuild(session.events, broken)
    shown = [vm.source_seq for vm in session.context.state.visible_messages]
    assert shown == [3, 5, 6, 7]  # the second call and its result, not the first result
    assert_calls_paired(session.request(session.context, anchor).messages)
    live = Session(100_000)
    for event in session.events[:2]:
        live.add(event.payload)
    live.context.rebuild(live.events, broken)
    for event in session.events[2:]:
        live.add(event.payload)
    assert live.context.state.visible_messages == session.context.state.visible_messages


async def test_a_truncated_session_sends_whole_tool_batches_to_the_model() -> None:
    """Through the public API: the summary fails, the fallback's budget ends inside a batch."""
    tool = RecordingTool("look", behaviour=lambda args: sized(args["x"]))
    config = AgentConfig(
        default_model="m1", compaction=CompactionPolicy(mode=MemoryMode.CONTEXT_PERCENT)
    )
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls([("c1", "look", {"x": 300}), ("c2", "look", {"x": 100})]),
            text("done"),
            ScriptedResponse.error(ProviderErrorKind.PROVIDER, "summarizer down"),
            text("next answer"),
        ],
        models=[model("m1", window=1_000)],
        config=config,
        tools=[tool],
        configure=lambda b: b.with_token_counter(lambda _: CharCounter()),
    )
    session = await agent.new_session()
    assert await (await session.send_message("q1")).join() == TurnOutcome.completed()
    # The summary fails; the fallback keeps what fits 699 tokens minus the prompt and the new
    # message. Size the message so that the longest fitting suffix starts at c2, between the
    # two calls of the batch.
    tokens = [
        ContextTokenEstimator(CharCounter()).message_tokens(vm) for vm in session.visible_messages()
    ]
    assert [type(vm.message) for vm in session.visible_messages()][1:3] == [ToolCall, ToolCall]
    prompt = len(provider.requests[0].system_prompt)
    message = "m" * (699 - prompt - sum(tokens[2:]) - MESSAGE_OVERHEAD_TOKENS)
    assert await (await session.send_message(message)).join() == TurnOutcome.completed()
    record = session.latest_compaction
    assert record is not None and record.mode is CompactionMode.TRUNCATION_FALLBACK
    request = provider.requests[-1]
    assert_calls_paired(request.messages)
    assert [m.tool_call_id for m in request.messages if m.tool_call_id] == []
