"""Tool approvals in the kernel: a call waits for a person, who approves or denies it; timeout,
cancel, remember, mixed batches and plugin hooks (see docs/approvals.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kernel_kit import RecordingTool, Watch, build_agent, payload_as, text
from plugin_kit import ScriptedPlugin
from youyou import (
    AgentConfig,
    AgentError,
    AskApproval,
    Continue,
    ErrorCode,
    OutcomeStatus,
    ScriptedResponse,
    SessionHandle,
    SkipApproval,
)
from youyou.adapters.tools.builtin import CurrentTimeTool
from youyou.application.tool_dispatcher import CANCELLED_OUTPUT
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVAL_REQUESTED,
    POLICY_ALWAYS_REASON,
    POLICY_MUTATING_REASON,
    TIMEOUT_DECIDER,
    TIMEOUT_REASON,
)
from youyou.domain.events import ToolApprovalDecided, ToolApprovalRequested, ToolCallEnd
from youyou.domain.hooks import HookKind
from youyou.domain.ledger import Metadata, ToolResult


def calls(*items: tuple[str, str]) -> ScriptedResponse:
    return ScriptedResponse.tool_calls(
        [(cid, name, {"x": i}) for i, (cid, name) in enumerate(items)]
    )


def results(session: SessionHandle) -> dict[str, ToolResult]:
    return {
        e.payload.result.call_id: e.payload
        for e in session.events
        if isinstance(e.payload, ToolResult)
    }


def metadata(session: SessionHandle, key: str) -> list[dict[str, Any]]:
    return [
        e.payload.value
        for e in session.events
        if isinstance(e.payload, Metadata) and e.payload.key == key
    ]


async def waiting_session(
    tools: list[RecordingTool],
    responses: list[Any],
    *,
    config: AgentConfig | None = None,
    plugins: list[ScriptedPlugin] = (),  # type: ignore[assignment]
) -> tuple[SessionHandle, Watch, Any]:
    def configure(builder: Any) -> Any:
        for plugin in plugins:
            builder.register_plugin(plugin)
        return builder

    agent, provider = await build_agent(responses, tools=tools, config=config, configure=configure)
    session = await agent.new_session()
    return session, Watch(await session.send_message("go")), provider


async def test_an_approved_call_runs_after_the_decision_and_the_turn_completes() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    session, watch, provider = await waiting_session(
        [close], [calls(("c1", "close_ticket")), text("closed it")]
    )
    [requested] = await watch.until("tool_approval_requested")
    assert isinstance(requested, ToolApprovalRequested)
    assert (requested.call_id, requested.tool_name, requested.arguments) == (
        "c1",
        "close_ticket",
        {"x": 0},
    )
    assert requested.reason == POLICY_ALWAYS_REASON
    assert requested.expires_at is not None
    assert (requested.expires_at - requested.requested_at).total_seconds() == 900
    await asyncio.sleep(0.05)
    assert close.calls == []  # nothing runs before the decision
    [pending] = session.pending_approvals()
    assert pending.model_dump() == {k: v for k, v in requested.model_dump().items() if k != "type"}
    with pytest.raises(AgentError) as busy:
        await session.send_message("again")
    assert busy.value.code is ErrorCode.TURN_BUSY
    assert not session.can_continue_turn

    decision = await session.decide_approval("c1", "approve", decided_by="alice", reason="ok")
    assert (decision.decision, decision.decided_by, decision.reason) == ("approve", "alice", "ok")
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert close.calls == [{"x": 0}]
    assert session.pending_approvals() == ()
    [decided] = watch.of("tool_approval_decided")
    assert isinstance(decided, ToolApprovalDecided)
    assert decided.model_dump(exclude={"type"}) == decision.model_dump()
    kinds = [e.payload.type for e in watch.events]
    assert kinds.index("tool_approval_requested") < kinds.index("tool_approval_decided")
    assert kinds.index("tool_approval_decided") < kinds.index("tool_call_end")
    # The ledger holds the request and the decision, in that order, before the result.
    assert [m["call_id"] for m in metadata(session, META_APPROVAL_REQUESTED)] == ["c1"]
    assert metadata(session, META_APPROVAL_DECIDED)[0]["decided_by"] == "alice"
    assert not results(session)["c1"].result.output.is_error
    assert provider.requests[1].messages[-1].tool_call_id == "c1"
    with pytest.raises(AgentError) as again:
        await session.decide_approval("c1", "deny", decided_by="bob")
    assert again.value.code is ErrorCode.APPROVAL_ALREADY_DECIDED


async def test_a_denied_call_gives_the_model_the_reason_and_the_turn_goes_on() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="mutating")
    session, watch, provider = await waiting_session(
        [close], [calls(("c1", "close_ticket")), text("I did not close it")]
    )
    [requested] = await watch.until("tool_approval_requested")
    assert requested.reason == POLICY_MUTATING_REASON
    await session.decide_approval("c1", "deny", decided_by="bob", reason="customer still waits")
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert close.calls == []
    output = results(session)["c1"].result.output
    assert output.is_error
    assert "denied" in output.content and "customer still waits" in output.content
    assert output.metadata is not None and output.metadata["reason"] == "approval_denied"
    end = payload_as(watch.of("tool_call_end")[0], ToolCallEnd)
    assert end.output.content == output.content
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.tool_call_id == "c1"
    assert "customer still waits" in tool_message.content[0].text


async def test_decisions_that_do_not_fit_are_refused() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close], [calls(("c1", "close_ticket")), text("done")]
    )
    await watch.until("tool_approval_requested")
    with pytest.raises(AgentError) as unknown:
        await session.decide_approval("nope", "approve", decided_by="alice")
    assert unknown.value.code is ErrorCode.APPROVAL_NOT_FOUND
    with pytest.raises(AgentError) as deny_remember:
        await session.decide_approval("c1", "deny", decided_by="alice", remember="session")
    assert deny_remember.value.code is ErrorCode.INPUT_VALIDATION
    with pytest.raises(AgentError) as bad:
        await session.decide_approval("c1", "maybe", decided_by="alice")  # type: ignore[arg-type]
    assert bad.value.code is ErrorCode.INPUT_VALIDATION
    assert [p.call_id for p in session.pending_approvals()] == ["c1"]
    first, second = await asyncio.gather(
        session.decide_approval("c1", "approve", decided_by="alice"),
        session.decide_approval("c1", "deny", decided_by="bob"),
        return_exceptions=True,
    )
    assert not isinstance(first, BaseException) and first.decided_by == "alice"
    assert isinstance(second, AgentError)
    assert second.code is ErrorCode.APPROVAL_ALREADY_DECIDED
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert len(metadata(session, META_APPROVAL_DECIDED)) == 1


async def test_remember_session_approves_the_tool_for_the_rest_of_the_session() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    other = RecordingTool("page_someone", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close, other],
        [
            calls(("c1", "close_ticket")),
            text("first"),
            calls(("c2", "close_ticket"), ("c3", "page_someone")),
            text("second"),
        ],
    )
    await watch.until("tool_approval_requested")
    decision = await session.decide_approval(
        "c1", "approve", decided_by="alice", remember="session"
    )
    assert decision.remember == "session"
    assert await watch.done() is OutcomeStatus.COMPLETED
    second = Watch(await session.send_message("more"))
    [requested] = await second.until("tool_approval_requested")
    assert requested.call_id == "c3"  # the remembered tool ran without asking
    await asyncio.sleep(0.05)
    assert close.calls == [{"x": 0}, {"x": 0}]
    await session.decide_approval("c3", "approve", decided_by="alice")
    assert await second.done() is OutcomeStatus.COMPLETED
    assert other.calls == [{"x": 1}]


async def test_no_decision_in_time_counts_as_denied() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close],
        [calls(("c1", "close_ticket")), text("gave up")],
        config=AgentConfig(default_model="m1", approval_timeout_s=0.2),
    )
    [requested] = await watch.until("tool_approval_requested")
    assert requested.expires_at is not None
    assert await watch.done() is OutcomeStatus.COMPLETED
    [decided] = watch.of("tool_approval_decided")
    assert (decided.decision, decided.decided_by, decided.reason) == (
        "deny",
        TIMEOUT_DECIDER,
        TIMEOUT_REASON,
    )
    assert close.calls == []
    assert TIMEOUT_REASON in results(session)["c1"].result.output.content
    with pytest.raises(AgentError) as late:
        await session.decide_approval("c1", "approve", decided_by="alice")
    assert late.value.code is ErrorCode.APPROVAL_ALREADY_DECIDED


async def test_zero_timeout_waits_without_limit() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close],
        [calls(("c1", "close_ticket")), text("done")],
        config=AgentConfig(default_model="m1", approval_timeout_s=0),
    )
    [requested] = await watch.until("tool_approval_requested")
    assert requested.expires_at is None
    await asyncio.sleep(0.2)
    assert [p.call_id for p in session.pending_approvals()] == ["c1"]
    await session.decide_approval("c1", "approve", decided_by="alice")
    assert await watch.done() is OutcomeStatus.COMPLETED


async def test_cancel_while_waiting_answers_the_calls_as_cancelled() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    page = RecordingTool("page_someone", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close, page], [calls(("c1", "close_ticket"), ("c2", "page_someone")), text("x")]
    )
    await watch.until("tool_approval_requested", 2)
    assert [p.call_id for p in session.pending_approvals()] == ["c1", "c2"]
    session.cancel()
    assert await watch.done() is OutcomeStatus.CANCELLED
    assert close.calls == page.calls == []
    assert {c: r.result.output for c, r in results(session).items()} == {
        "c1": CANCELLED_OUTPUT,
        "c2": CANCELLED_OUTPUT,
    }
    assert metadata(session, META_APPROVAL_DECIDED) == []
    assert session.pending_approvals() == ()
    assert not session.can_continue_turn
    with pytest.raises(AgentError) as late:
        await session.decide_approval("c1", "approve", decided_by="alice")
    assert late.value.code is ErrorCode.APPROVAL_ALREADY_DECIDED


async def test_read_only_calls_go_ahead_while_mutating_calls_wait_in_order() -> None:
    reader = RecordingTool("reader", approval="mutating")  # read-only: never asks
    gated = RecordingTool("close_ticket", mutating=True, approval="mutating")
    plain = RecordingTool("append_note", mutating=True)  # mutating, policy "never"
    session, watch, provider = await waiting_session(
        [reader, gated, plain],
        [
            calls(
                ("c1", "close_ticket"), ("c2", "reader"), ("c3", "append_note"), ("c4", "reader")
            ),
            text("done"),
        ],
    )
    [requested] = await watch.until("tool_approval_requested")
    assert requested.call_id == "c1"
    ends = await watch.until("tool_call_end", 2)
    assert sorted(e.call_id for e in ends) == ["c2", "c4"]  # read-only calls went ahead
    assert plain.calls == []  # the mutating one keeps its place behind the waiting call
    assert set(results(session)) == {"c2", "c4"}
    starts = [e.call_id for e in watch.of("tool_call_start")]
    assert starts == ["c1", "c2", "c3", "c4"]  # every call was recorded first
    await session.decide_approval("c1", "approve", decided_by="alice")
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert gated.finished[0] <= plain.started[0]
    assert [e.call_id for e in watch.of("tool_call_end")] == ["c2", "c4", "c1", "c3"]
    # One assistant message carries the four calls; every one has its result.
    sent = provider.requests[1].messages
    assert [c.call_id for c in sent[-5].tool_calls] == ["c1", "c2", "c3", "c4"]
    assert sorted(m.tool_call_id or "" for m in sent[-4:]) == ["c1", "c2", "c3", "c4"]


async def test_a_read_only_tool_under_the_mutating_policy_never_asks() -> None:
    reader = RecordingTool("reader", approval="mutating")
    _, watch, _ = await waiting_session([reader], [calls(("c1", "reader")), text("done")])
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert watch.of("tool_approval_requested") == []
    assert reader.calls == [{"x": 0}]


async def test_kernel_tools_never_ask() -> None:
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "get_current_time", {})]), text("done")],
        tools=[CurrentTimeTool()],
    )
    session = await agent.new_session()
    events = await (await session.send_message("time?")).collect()
    assert not any(e.payload.type == "tool_approval_requested" for e in events)
    assert not results(session)["c1"].result.output.is_error


@pytest.mark.parametrize(
    ("approval", "replies", "asks", "reason"),
    [
        ("never", [AskApproval(reason="prod namespace")], True, "prod namespace"),
        ("always", [SkipApproval()], False, None),
        ("never", [SkipApproval(), AskApproval(reason="second says ask")], True, "second says ask"),
        ("always", [AskApproval(reason="first"), SkipApproval()], True, "first"),
    ],
)
async def test_before_tool_use_hooks_ask_or_skip(
    approval: Any, replies: list[Any], asks: bool, reason: str | None
) -> None:
    tool = RecordingTool("kubectl", mutating=True, approval=approval)
    plugins = [
        ScriptedPlugin(f"p{i}", replies={HookKind.BEFORE_TOOL_USE: reply})
        for i, reply in enumerate(replies)
    ]
    session, watch, _ = await waiting_session(
        [tool], [calls(("c1", "kubectl")), text("done")], plugins=plugins
    )
    if asks:
        [requested] = await watch.until("tool_approval_requested")
        assert requested.reason == reason
        await session.decide_approval("c1", "approve", decided_by="alice")
    assert await watch.done() is OutcomeStatus.COMPLETED
    assert bool(watch.of("tool_approval_requested")) is asks
    assert tool.calls == [{"x": 0}]


async def test_a_hook_asks_even_for_a_tool_remembered_for_the_session() -> None:
    tool = RecordingTool("kubectl", mutating=True, approval="always")
    plugin = ScriptedPlugin(
        "p",
        replies={
            HookKind.BEFORE_TOOL_USE: lambda payload: (
                AskApproval(reason="delete") if payload.call_id == "c3" else Continue()
            )
        },
    )
    session, watch, _ = await waiting_session(
        [tool],
        [
            calls(("c1", "kubectl")),
            text("one"),
            calls(("c2", "kubectl")),
            text("two"),
            calls(("c3", "kubectl")),
            text("three"),
        ],
        plugins=[plugin],
    )
    await watch.until("tool_approval_requested")
    await session.decide_approval("c1", "approve", decided_by="alice", remember="session")
    assert await watch.done() is OutcomeStatus.COMPLETED
    second = Watch(await session.send_message("again"))
    assert await second.done() is OutcomeStatus.COMPLETED
    assert second.of("tool_approval_requested") == []
    third = Watch(await session.send_message("delete it"))
    [requested] = await third.until("tool_approval_requested")
    assert requested.reason == "delete"
    await session.decide_approval("c3", "deny", decided_by="alice")
    assert await third.done() is OutcomeStatus.COMPLETED
    assert len(tool.calls) == 2


async def test_a_compaction_waits_for_the_decisions() -> None:
    close = RecordingTool("close_ticket", mutating=True, approval="always")
    session, watch, _ = await waiting_session(
        [close], [calls(("c1", "close_ticket")), text("done")]
    )
    await watch.until("tool_approval_requested")
    with pytest.raises(AgentError) as busy:
        await session.compact()
    assert busy.value.code is ErrorCode.TURN_BUSY
    await session.decide_approval("c1", "approve", decided_by="alice")
    assert await watch.done() is OutcomeStatus.COMPLETED


async def test_only_before_tool_use_may_ask_or_skip() -> None:
    plugin = ScriptedPlugin("p", replies={HookKind.TURN_START: SkipApproval()})
    agent, _ = await build_agent(
        [text("never sent")], configure=lambda builder: builder.register_plugin(plugin)
    )
    session = await agent.new_session()
    turn = await session.send_message("hi")
    outcome = await turn.join()
    assert outcome.status is OutcomeStatus.FAILED
    assert outcome.error is not None and outcome.error.code is ErrorCode.PLUGIN_ABORTED


def test_the_timeout_is_never_negative() -> None:
    with pytest.raises(AgentError) as bad:
        AgentConfig(default_model="m1", approval_timeout_s=-1)
    assert bad.value.code is ErrorCode.INVALID_CONFIG
    assert AgentConfig(default_model="m1").approval_timeout_s == 900
