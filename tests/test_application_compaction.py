"""Compaction triggers, hard limit and current-turn preservation.

See docs/architecture.md, 'Compaction'.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernel_kit import RecordingTool, block_text, build_agent, model, payload_types, text
from plugin_kit import ScriptedPlugin
from youyou import (
    AgentConfig,
    CompactionPolicy,
    ErrorCode,
    MemoryMode,
    OutcomeStatus,
    ScriptedResponse,
    SummaryFailurePolicy,
    TextBlock,
)
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.application.token_estimator import ContextTokenEstimator
from youyou.domain.context import CompactionMode, VisibleMessage, render_compaction_summary
from youyou.domain.hooks import HookKind
from youyou.domain.ledger import AssistantMessage, Metadata, UserMessage
from youyou.domain.model import ModelMessageRole, ProviderErrorKind


class CharCounter:
    """One token per character: makes threshold arithmetic exact."""

    def count_text(self, text: str) -> int:
        return len(text)


def candidate_tokens(message: str) -> int:
    estimator = ContextTokenEstimator(CharCounter())
    return estimator.message_tokens(
        VisibleMessage(None, UserMessage(content=(TextBlock(text=message),)))
    )


async def agent_with(
    responses: list[Any],
    *,
    window: int = 1000,
    mode: MemoryMode = MemoryMode.MANUAL,
    threshold: float = 0.8,
    failure: SummaryFailurePolicy = SummaryFailurePolicy.TRUNCATE,
    tools: list[Any] | None = None,
    every: int = 30,
    storage: Any = None,
    instructions: tuple[str, ...] = (),
    plugins: tuple[ScriptedPlugin, ...] = (),
) -> Any:
    config = AgentConfig(
        default_model="m1",
        compact_threshold=threshold,
        system_instructions=instructions,
        compaction=CompactionPolicy(mode=mode, every_n_turns=every, on_summary_failure=failure),
    )

    def configure(builder: Any) -> Any:
        builder.with_token_counter(lambda _: CharCounter())
        if storage is not None:
            builder.register_session_storage(storage)
        for plugin in plugins:
            builder.register_plugin(plugin, None)
        return builder

    return await build_agent(
        responses,
        models=[model("m1", window=window)],
        config=config,
        tools=tools or [],
        configure=configure,
    )


async def session_at(
    tokens: int, *, mode: MemoryMode, extra: list[Any] | None = None, **kwargs: Any
) -> tuple[Any, Any, Any]:
    """A session whose visible history is exactly ``tokens`` tokens."""
    probe = candidate_tokens("q")  # a 1-char user message
    answer_len = tokens - 2 * probe  # user "q" + assistant answer (same overhead)
    agent, provider = await agent_with(
        [text("a" * (answer_len + 1)), *(extra or [])], mode=mode, **kwargs
    )
    session = await agent.new_session()
    await (await session.send_message("q")).join()
    assert session.usage().tokens == tokens
    return agent, provider, session


@pytest.mark.parametrize(("delta", "compacts"), [(-1, False), (0, True), (1, True)])
async def test_context_percent_trigger_at_exactly_70_percent(delta: int, compacts: bool) -> None:
    message = "m" * 20
    history = 700 - candidate_tokens(message) + delta
    _, _provider, session = await session_at(
        history, mode=MemoryMode.CONTEXT_PERCENT, extra=[text("SUMMARY"), text("answer")]
    )
    turn = await session.send_message(message)
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert ("context_compacted" in payload_types(events)) is compacts
    if compacts:
        assert payload_types(events).index("context_compacted") < payload_types(events).index(
            "text_delta"
        )
        assert session.latest_compaction.mode is CompactionMode.SUMMARY


@pytest.mark.parametrize(("delta", "rejected"), [(-1, False), (0, True), (1, True)])
async def test_hard_limit_at_exactly_95_percent_rejects_before_writing(
    delta: int, rejected: bool
) -> None:
    message = "m" * 20
    history = 950 - candidate_tokens(message) + delta
    storage = InMemorySessionStorage()
    _, provider, session = await session_at(
        history, mode=MemoryMode.MANUAL, extra=[text("answer")], storage=storage
    )
    stored_before = len(await storage.load_events(session.session_id))
    turn = await session.send_message(message)
    events = await turn.collect()
    outcome = await turn.join()
    stored = await storage.load_events(session.session_id)
    if rejected:
        assert outcome.error is not None
        assert outcome.error.code is ErrorCode.CHAT_CONTEXT_LIMIT_REACHED
        assert payload_types(events) == ["error"]
        assert len(stored) == stored_before
        assert all(e.payload != UserMessage(content=(TextBlock(text=message),)) for e in stored)
        assert len(provider.requests) == 1  # never sent
    else:
        assert outcome.status is OutcomeStatus.COMPLETED
        assert len(stored) == stored_before + 2


async def test_hard_limit_after_one_compaction_never_compacts_the_summary_again() -> None:
    # history is compactable, but the new message alone is over the limit
    agent, provider = await agent_with(
        [text("a"), text("SUMMARY"), text("never")], mode=MemoryMode.CONTEXT_PERCENT
    )
    session = await agent.new_session()
    await (await session.send_message("hello")).join()
    turn = await session.send_message("z" * 960)
    events = await turn.collect()
    outcome = await turn.join()
    assert payload_types(events) == ["context_compacted", "error"]
    assert outcome.error is not None and outcome.error.code is ErrorCode.CHAT_CONTEXT_LIMIT_REACHED
    assert len(provider.requests) == 2  # the first answer and one summary request
    assert session.latest_compaction.mode is CompactionMode.SUMMARY


async def test_worked_example_sixty_messages_every_30_turns() -> None:
    answers = [text(f"answer {i}") for i in range(30)]
    storage = InMemorySessionStorage()
    agent, provider = await agent_with(
        [*answers, text("SUMMARY OF 30 TURNS"), text("answer 31")],
        window=100_000,
        mode=MemoryMode.EVERY_N_TURNS,
        storage=storage,
    )
    session = await agent.new_session()
    for i in range(30):
        await (await session.send_message(f"question {i}")).join()
    assert session.latest_compaction is None
    turn = await session.send_message("question 31")
    events = await turn.collect()
    assert "context_compacted" in payload_types(events)
    record = session.latest_compaction
    assert record is not None
    assert record.compacted_message_count == 60
    summary_request = provider.requests[-2]
    assert summary_request.tools == ()
    assert "question 0" in block_text(summary_request.messages[0].content[0])
    model_view = provider.requests[-1].messages
    assert [m.role for m in model_view] == [ModelMessageRole.SYSTEM, ModelMessageRole.USER]
    assert block_text(model_view[0].content[0]) == render_compaction_summary("SUMMARY OF 30 TURNS")
    assert block_text(model_view[1].content[0]) == "question 31"
    stored = await storage.load_events(session.session_id)
    messages = [e for e in stored if isinstance(e.payload, UserMessage | AssistantMessage)]
    assert len(messages) == 62  # full history kept: 61 + the new answer


async def test_29_turns_do_not_compact_in_every_30_turns_mode() -> None:
    agent, _ = await agent_with(
        [text(f"a{i}") for i in range(30)], window=100_000, mode=MemoryMode.EVERY_N_TURNS
    )
    session = await agent.new_session()
    for i in range(30):
        await (await session.send_message(f"q{i}")).join()
    assert session.latest_compaction is None


async def test_large_prompt_with_short_history_compacts_before_the_provider_errors() -> None:
    big_prompt = ("rule " * 300,)  # 1500 characters of system instructions
    agent, provider = await agent_with(
        [text("first"), text("SUMMARY"), text("second")],
        mode=MemoryMode.EVERY_N_TURNS,
        instructions=big_prompt,
        window=2000,
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    assert session.latest_compaction is None
    turn = await session.send_message("again " * 10)
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert "context_compacted" in payload_types(events)  # compact_threshold 0.8 of the request
    assert len(provider.requests) == 3


async def test_context_length_exceeded_retries_once_after_compaction() -> None:
    agent, provider = await agent_with(
        [
            text("first"),
            ScriptedResponse.error(ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED),
            text("SUMMARY"),
            text("after retry"),
        ],
        window=100_000,
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    turn = await session.send_message("more")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert payload_types(events).count("context_compacted") == 1
    assert block_text(provider.requests[-1].messages[0].content[0]).endswith("SUMMARY")


async def test_context_length_exceeded_twice_is_compact_error() -> None:
    err = ScriptedResponse.error(ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED)
    agent, _ = await agent_with([text("first"), err, text("SUMMARY"), err], window=100_000)
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    outcome = await (await session.send_message("more")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.COMPACT_ERROR


async def test_failed_summary_falls_back_to_truncation_by_default() -> None:
    agent, provider = await agent_with(
        [
            text("a" * 340),
            text("b" * 340),
            ScriptedResponse.error(ProviderErrorKind.PROVIDER),
            text("ok"),
        ],
        mode=MemoryMode.CONTEXT_PERCENT,
    )
    session = await agent.new_session()
    await (await session.send_message("1")).join()
    await (await session.send_message("2")).join()
    turn = await session.send_message("3")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    compacted = next(e.payload for e in events if e.payload.type == "context_compacted")
    record = session.latest_compaction
    assert record.mode is CompactionMode.TRUNCATION_FALLBACK == compacted.mode
    assert record.replaces_through_seq == compacted.replaces_through_seq
    assert record.summary_body is None
    assert record.replaces_through_seq == 2  # only the first user message was dropped
    sent = [block_text(m.content[0]) for m in provider.requests[-1].messages]
    assert sent == ["a" * 340, "2", "b" * 340, "3"]


async def test_fail_policy_keeps_the_boundary_and_stores_nothing() -> None:
    storage = InMemorySessionStorage()
    agent, _ = await agent_with(
        [text("a" * 340), text("b" * 340), text("   ")],
        mode=MemoryMode.CONTEXT_PERCENT,
        failure=SummaryFailurePolicy.FAIL,
        storage=storage,
    )
    session = await agent.new_session()
    await (await session.send_message("1")).join()
    await (await session.send_message("2")).join()
    before = len(await storage.load_events(session.session_id))
    outcome = await (await session.send_message("3")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.COMPACT_ERROR
    assert session.latest_compaction is None
    assert len(await storage.load_events(session.session_id)) == before


async def test_new_summary_merges_the_previous_one() -> None:
    agent, provider = await agent_with(
        [text("a1"), text("FIRST SUMMARY"), text("a2"), text("SECOND SUMMARY")]
    )
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    await session.compact()
    await (await session.send_message("q2")).join()
    await session.compact()
    merge_input = block_text(provider.requests[-1].messages[0].content[0])
    assert "FIRST SUMMARY" in merge_input and "q2" in merge_input and "q1" not in merge_input
    assert session.latest_compaction.summary_body == "SECOND SUMMARY"
    assert session.latest_compaction.compacted_message_count == 4


async def test_manual_mode_switch_compacts_at_once_and_never_twice_without_news() -> None:
    agent, provider = await agent_with([text("a1"), text("SUMMARY")], mode=MemoryMode.EVERY_N_TURNS)
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    usage = await session.set_memory_mode(MemoryMode.MANUAL)
    assert session.memory_mode is MemoryMode.MANUAL
    assert session.latest_compaction is not None
    assert usage.can_compact is False
    requests = len(provider.requests)
    again = await session.compact()  # nothing new: refresh only, no model call
    assert len(provider.requests) == requests
    assert again == usage
    assert 0 < usage.percent <= 100


async def test_manual_compaction_estimates_the_request_as_the_automatic_path_does() -> None:
    tap = ScriptedPlugin("tap", tapped=[HookKind.BEFORE_COMPACT])
    agent, provider = await agent_with(
        [text("a1"), text("SUMMARY")], instructions=("I" * 120,), plugins=(tap,)
    )
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    history = session.usage().tokens
    await session.compact()

    payload = tap.received(HookKind.BEFORE_COMPACT)[0]
    prompt = len(provider.requests[0].system_prompt)  # one token per character
    assert prompt > 120 and payload.history_estimated_tokens == history
    assert payload.request_estimated_tokens == history + prompt


async def test_compaction_in_a_tool_loop_keeps_the_current_turn() -> None:
    async def big(args: dict[str, Any]) -> Any:
        from youyou import ToolOutput

        return ToolOutput(content="r" * 350)

    tool = RecordingTool("fetch", behaviour=big)
    agent, provider = await agent_with(
        [
            text("old answer " * 20),
            ScriptedResponse.tool_calls([("c1", "fetch", {})]),
            ScriptedResponse.tool_calls([("c2", "fetch", {})]),
            text("SUMMARY"),
            text("final"),
        ],
        tools=[tool],
        mode=MemoryMode.EVERY_N_TURNS,
    )
    session = await agent.new_session()
    await (await session.send_message("earlier question")).join()
    turn = await session.send_message("investigate")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert "context_compacted" in payload_types(events)
    final_request = provider.requests[-1]
    texts = [getattr(m.content[0], "text", "") if m.content else "" for m in final_request.messages]
    assert "investigate" in texts  # the anchor survived
    assert "earlier question" not in texts
    assert [m.tool_call_id for m in final_request.messages if m.tool_call_id] == ["c1", "c2"]
    boundary = session.latest_compaction.replaces_through_seq
    anchor_seq = next(
        e.seq
        for e in session.events
        if isinstance(e.payload, UserMessage) and block_text(e.payload.content[0]) == "investigate"
    )
    assert boundary < anchor_seq


async def test_pinned_turn_alone_too_big_is_compact_error() -> None:
    async def huge(args: dict[str, Any]) -> Any:
        from youyou import ToolOutput

        return ToolOutput(content="r" * 240)  # each fits its share of the window, not all five

    tool = RecordingTool("fetch", behaviour=huge)
    agent, _ = await agent_with(
        [
            text("old"),
            ScriptedResponse.tool_calls([(f"c{i}", "fetch", {}) for i in range(5)]),
            text("SUMMARY"),
            text("never"),
        ],
        tools=[tool],
        mode=MemoryMode.EVERY_N_TURNS,
    )
    session = await agent.new_session()
    await (await session.send_message("earlier")).join()
    outcome = await (await session.send_message("investigate")).join()
    assert outcome.error is not None and outcome.error.code is ErrorCode.COMPACT_ERROR
    assert any(isinstance(e.payload, UserMessage) for e in session.events[-12:])


async def test_raw_events_stay_in_the_ledger_after_compaction() -> None:
    agent, _ = await agent_with([text("a1"), text("SUMMARY")])
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    await session.compact()
    kinds = [type(e.payload).__name__ for e in session.events]
    assert kinds == ["Metadata", "UserMessage", "AssistantMessage", "Metadata"]
    last = session.events[-1].payload
    assert isinstance(last, Metadata) and last.key == "context_compaction"


async def test_manual_compaction_with_a_failed_summary_truncates_everything() -> None:
    agent, provider = await agent_with(
        [text("a1"), text("a2"), ScriptedResponse.error(ProviderErrorKind.PROVIDER), text("a3")]
    )
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    await (await session.send_message("q2")).join()
    usage = await session.compact()
    record = session.latest_compaction
    assert record.mode is CompactionMode.TRUNCATION_FALLBACK
    assert record.compacted_message_count == 4
    assert usage.tokens == 0 and not usage.can_compact
    await (await session.send_message("q3")).join()
    assert [block_text(m.content[0]) for m in provider.requests[-1].messages] == ["q3"]


async def test_context_length_error_truncates_before_the_anchor_when_summary_fails() -> None:
    err = ScriptedResponse.error(ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED)
    failing_summary = ScriptedResponse.error(ProviderErrorKind.PROVIDER)
    agent, provider = await agent_with(
        [text("first"), err, failing_summary, text("after retry")], window=100_000
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    turn = await session.send_message("more")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    compacted = next(e.payload for e in events if e.payload.type == "context_compacted")
    assert compacted.mode is CompactionMode.TRUNCATION_FALLBACK
    assert [block_text(m.content[0]) for m in provider.requests[-1].messages] == ["more"]


async def test_compacted_events_are_released_from_memory_only_with_a_storage() -> None:
    storage = InMemorySessionStorage()
    agent, _ = await agent_with([text("a1"), text("a2"), text("SUMMARY")], storage=storage)
    session = await agent.new_session()
    await (await session.send_message("q1")).join()
    await (await session.send_message("q2")).join()
    await session.compact()
    boundary = session.latest_compaction.replaces_through_seq
    assert [e.seq for e in session.events] == [boundary + 1]  # only the compaction record
    stored = await storage.load_events(session.session_id)
    assert [e.seq for e in stored] == list(range(1, boundary + 2))  # nothing lost
    in_memory_only, _ = await agent_with([text("a1"), text("SUMMARY")])
    kept = await in_memory_only.new_session()
    await (await kept.send_message("q1")).join()
    await kept.compact()
    assert [e.seq for e in kept.events] == [1, 2, 3, 4]  # the in-memory ledger is the ledger
