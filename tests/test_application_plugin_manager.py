"""PluginManager: lifecycle order, declared vs tapped hooks, chains, failures, plugin_config,
and every row of the Abort matrix (docs/architecture.md, 'Plugin hooks') through a real agent.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernel_kit import RecordingTool, block_text, build_agent, model, payload_as, text
from plugin_kit import ScriptedPlugin, patch_arguments, run_turn, sections
from youyou import (
    AgentBuilder,
    AgentConfig,
    AgentError,
    EnvironmentContext,
    ErrorCode,
    ScriptedResponse,
)
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.application.plugin_manager import PluginManager
from youyou.domain.context import CompactionMode
from youyou.domain.events import ErrorEvent
from youyou.domain.hooks import (
    Abort,
    AfterToolUsePayload,
    BeforeCompactPayload,
    BeforeToolUsePayload,
    Continue,
    HookKind,
    SessionEndPayload,
    SessionTerminationMode,
    TurnEndPayload,
    TurnStartPayload,
)
from youyou.domain.ledger import Metadata, ToolOutput
from youyou.domain.lifecycle import LifecycleState
from youyou.domain.model import ModelMessageRole
from youyou.domain.session import SessionListQuery
from youyou.domain.turn import OutcomeStatus


def configure(*plugins: ScriptedPlugin, configs: dict[str, Any] | None = None) -> Any:
    def apply(builder: AgentBuilder) -> AgentBuilder:
        for plugin in plugins:
            builder.register_plugin(plugin, (configs or {}).get(plugin.plugin_id))
        return builder

    return apply


async def initialized(*plugins: ScriptedPlugin, config: Any = None) -> PluginManager:
    manager = PluginManager()
    await manager.initialize([(p, config) for p in plugins])
    return manager


# -- lifecycle -----------------------------------------------------------------------------


async def test_initialize_in_registration_order_and_shutdown_in_reverse() -> None:
    journal: list[str] = []
    a, b, c = (ScriptedPlugin(name, journal=journal) for name in "abc")
    b.shutdown_error = RuntimeError("b cannot stop")
    agent, _ = await build_agent(configure=configure(a, b, c))
    assert journal == ["init:a", "apply:a", "init:b", "apply:b", "init:c", "apply:c"]

    await agent.shutdown()

    assert journal[6:] == ["shutdown:c", "shutdown:b", "shutdown:a"]
    assert agent.lifecycle is LifecycleState.SHUTDOWN


@pytest.mark.parametrize(
    ("tapped", "declared"),
    [
        ({HookKind.TURN_START, HookKind.TURN_END}, {HookKind.TURN_START}),
        ({HookKind.TURN_START}, {HookKind.TURN_START, HookKind.SESSION_END}),
        (set(), {HookKind.BEFORE_COMPACT}),
    ],
)
async def test_declared_hooks_must_equal_tapped_hooks(
    tapped: set[HookKind], declared: set[HookKind]
) -> None:
    plugin = ScriptedPlugin("liar", tapped=tapped, declared=declared)
    with pytest.raises(AgentError) as caught:
        await build_agent(configure=configure(plugin))
    assert caught.value.code is ErrorCode.PLUGIN_INIT_FAILED
    assert "liar" in caught.value.message


@pytest.mark.parametrize("step", ["initialize", "apply"])
async def test_initialize_or_apply_raising_fails_the_build(step: str) -> None:
    boom = RuntimeError("no database")
    plugin = ScriptedPlugin(
        "fragile",
        init_error=boom if step == "initialize" else None,
        apply_error=boom if step == "apply" else None,
    )
    with pytest.raises(AgentError) as caught:
        await build_agent(configure=configure(plugin))
    assert caught.value.code is ErrorCode.PLUGIN_INIT_FAILED
    assert "fragile" in caught.value.message and "no database" in caught.value.message


@pytest.mark.parametrize("failure", ["initialize", "apply", "tapped"])
async def test_a_failed_build_shuts_the_initialized_plugins_down_in_reverse(failure: str) -> None:
    journal: list[str] = []
    boom = RuntimeError("boom")
    a, b = ScriptedPlugin("a", journal=journal), ScriptedPlugin("b", journal=journal)
    c = ScriptedPlugin(
        "c",
        journal=journal,
        init_error=boom if failure == "initialize" else None,
        apply_error=boom if failure == "apply" else None,
        declared={HookKind.TURN_END} if failure == "tapped" else None,
    )
    with pytest.raises(AgentError) as caught:
        await build_agent(configure=configure(a, b, c))
    assert caught.value.code is ErrorCode.PLUGIN_INIT_FAILED
    shut = [entry for entry in journal if entry.startswith("shutdown:")]
    initialized_c = failure != "initialize"
    assert shut == (["shutdown:c"] if initialized_c else []) + ["shutdown:b", "shutdown:a"]


async def test_each_plugin_gets_its_own_config_at_initialize() -> None:
    a, b = ScriptedPlugin("a"), ScriptedPlugin("b")
    await build_agent(configure=configure(a, b, configs={"a": {"k": 1}, "b": ["x"]}))
    assert a.configs == [{"k": 1}] and b.configs == [["x"]]


# -- chains --------------------------------------------------------------------------------


async def test_handlers_run_in_plugin_registration_order() -> None:
    journal: list[str] = []
    plugins = [
        ScriptedPlugin(name, {HookKind.SESSION_START: Continue()}, journal=journal)
        for name in ("z", "a", "m")
    ]
    manager = await initialized(*plugins)
    journal.clear()

    assert await manager.session_start("s1", "m1") is None
    assert journal == ["z:session_start", "a:session_start", "m:session_start"]


async def test_first_abort_stops_the_chain() -> None:
    journal: list[str] = []
    first = ScriptedPlugin("first", {HookKind.TURN_START: sections("one")}, journal=journal)
    veto = ScriptedPlugin("veto", {HookKind.TURN_START: Abort("no")}, journal=journal)
    never = ScriptedPlugin("never", {HookKind.TURN_START: sections("two")}, journal=journal)
    manager = await initialized(first, veto, never)
    journal.clear()

    outcome = await manager.turn_start(lambda cfg, s: TurnStartPayload("s", "t", (), (), s, cfg))

    assert outcome.abort == Abort("no")
    assert journal == ["first:turn_start", "veto:turn_start"]
    assert never.payloads == []


async def test_first_abort_stops_an_observe_chain() -> None:
    veto = ScriptedPlugin("veto", {HookKind.SESSION_END: Abort("keep it")})
    never = ScriptedPlugin("never", {HookKind.SESSION_END: Continue()})
    manager = await initialized(veto, never)
    abort = await manager.session_end(
        lambda cfg: SessionEndPayload("s", 0, SessionTerminationMode.CLOSE, cfg)
    )
    assert abort == Abort("keep it") and never.payloads == []


_PAYLOADS: dict[HookKind, Any] = {
    HookKind.SESSION_END: lambda m: m.session_end(
        lambda cfg: SessionEndPayload("s", 0, SessionTerminationMode.CLOSE, cfg)
    ),
    HookKind.SESSION_START: lambda m: m.session_start("s", "m1"),
    HookKind.TURN_START: lambda m: m.turn_start(
        lambda cfg, s: TurnStartPayload("s", "t", (), (), s, cfg)
    ),
    HookKind.TURN_END: lambda m: m.turn_end(
        lambda cfg: TurnEndPayload("s", "t", (), 0, False, cfg)
    ),
    HookKind.BEFORE_TOOL_USE: lambda m: m.before_tool_use(
        lambda cfg, cur: BeforeToolUsePayload("s", "t", "c", "tool", {}, cur, cfg), {}
    ),
    HookKind.AFTER_TOOL_USE: lambda m: m.after_tool_use(
        lambda cfg: AfterToolUsePayload(
            "s", "t", "c", "tool", {}, ToolOutput(content=""), 0, True, cfg
        )
    ),
    HookKind.BEFORE_COMPACT: lambda m: m.before_compact(
        lambda cfg: BeforeCompactPayload("s", 1, 1, 1, cfg)
    ),
}


@pytest.mark.parametrize("kind", list(HookKind))
async def test_a_raising_hook_is_a_plugin_aborted_error_naming_the_plugin(kind: HookKind) -> None:
    calm = ScriptedPlugin("calm", {kind: Continue()})
    broken = ScriptedPlugin("broken", {kind: KeyError("missing key")})
    after = ScriptedPlugin("after", {kind: Continue()})
    manager = await initialized(calm, broken, after)

    with pytest.raises(AgentError) as caught:
        await _PAYLOADS[kind](manager)

    assert caught.value.code is ErrorCode.PLUGIN_ABORTED
    assert "'broken'" in caught.value.message and kind.value in caught.value.message
    assert "missing key" in caught.value.message
    assert len(calm.payloads) == 1 and after.payloads == []


@pytest.mark.parametrize(
    ("kind", "reply"),
    [
        (HookKind.SESSION_END, lambda _: None),  # a handler that forgot to return
        (HookKind.TURN_END, lambda _: sections("observe hooks cannot patch")),
        (HookKind.TURN_START, lambda _: patch_arguments({"x": 1})),  # the wrong patch type
        (HookKind.BEFORE_TOOL_USE, lambda _: sections("wrong")),
        (HookKind.BEFORE_COMPACT, lambda _: "ok"),
    ],
)
async def test_an_invalid_hook_result_is_a_plugin_aborted_error(kind: HookKind, reply: Any) -> None:
    manager = await initialized(ScriptedPlugin("sloppy", {kind: reply}))
    with pytest.raises(AgentError) as caught:
        await _PAYLOADS[kind](manager)
    assert caught.value.code is ErrorCode.PLUGIN_ABORTED
    assert "'sloppy'" in caught.value.message and "returned" in caught.value.message


async def test_a_raising_turn_start_hook_fails_the_turn_with_an_error_event() -> None:
    plugin = ScriptedPlugin("broken", {HookKind.TURN_START: ValueError("bad state")})
    agent, provider = await build_agent([text("unused")], configure=configure(plugin))
    session = await agent.new_session()
    events, outcome = await run_turn(session, "hi")

    assert outcome.status is OutcomeStatus.FAILED and outcome.error is not None
    assert outcome.error.code is ErrorCode.PLUGIN_ABORTED and "broken" in outcome.error.message
    assert [e.payload.code for e in events if isinstance(e.payload, ErrorEvent)] == [
        "PLUGIN_ABORTED"
    ]
    assert provider.requests == []


async def test_plugin_config_reaches_every_payload_of_every_hook() -> None:
    tool = RecordingTool("probe")
    a = ScriptedPlugin("a", dict.fromkeys(HookKind, Continue()))
    b = ScriptedPlugin("b", dict.fromkeys(HookKind, Continue()))
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "probe", {"x": 1})]), text("done"), text("summary")],
        tools=[tool],
        configure=configure(a, b, configs={"a": {"token": "A"}, "b": {"token": "B"}}),
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    await session.compact()
    await session.close()

    for plugin, config in ((a, {"token": "A"}), (b, {"token": "B"})):
        assert {kind for kind, _ in plugin.payloads} == set(HookKind)
        assert all(p.plugin_config == config for _, p in plugin.payloads)


async def test_active_plugin_info_is_rendered_in_the_system_prompt() -> None:
    a = ScriptedPlugin("audit", description="records every tool call")
    b = ScriptedPlugin("guard", description="blocks dangerous commands")
    agent, provider = await build_agent([text("ok")], configure=configure(a, b))
    session = await agent.new_session()
    await (await session.send_message("hi")).join()

    assert provider.requests[0].system_prompt.endswith(
        "## Plugins\n\n### Active plugins\n"
        "- audit (Plugin audit): records every tool call\n"
        "- guard (Plugin guard): blocks dangerous commands"
    )


async def test_no_plugin_section_without_plugins() -> None:
    agent, provider = await build_agent(
        [text("ok")], config=AgentConfig(default_model="m1", system_instructions=("be brief",))
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    assert "be brief" in provider.requests[0].system_prompt
    assert "Plugins" not in provider.requests[0].system_prompt


async def test_before_tool_use_patches_chain_in_registration_order() -> None:
    tool = RecordingTool("probe")
    first = ScriptedPlugin("first", {HookKind.BEFORE_TOOL_USE: patch_arguments({"x": 2})})
    second = ScriptedPlugin(
        "second",
        {
            HookKind.BEFORE_TOOL_USE: lambda p: patch_arguments(
                {"x": p.current_arguments["x"] * 10, "y": "added"}
            )
        },
    )
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "probe", {"x": 1})]), text("done")],
        tools=[tool],
        configure=configure(first, second),
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    events = await turn.collect()

    seen = second.received(HookKind.BEFORE_TOOL_USE)[0]
    assert seen.requested_arguments == {"x": 1} and seen.current_arguments == {"x": 2}
    assert first.received(HookKind.BEFORE_TOOL_USE)[0].current_arguments == {"x": 1}
    effective = {"x": 20, "y": "added"}
    start = next(e.payload for e in events if e.payload.type == "tool_call_start")
    ledger_call = next(e.payload.call for e in session.events if e.payload.kind == "tool_call")
    assert start.arguments == effective
    assert ledger_call.effective_arguments == effective
    assert ledger_call.requested_arguments == {"x": 1}
    assert tool.calls == [effective]
    replay = provider.requests[1].messages[1].tool_calls[0]
    assert replay.arguments == effective


async def test_before_tool_use_in_place_edits_never_reach_the_ledger_or_the_tool() -> None:
    """Hooks get copies: only a ContinueWith patch changes the arguments, never an edit."""
    tool = RecordingTool("probe")

    def vandal(payload: BeforeToolUsePayload) -> Continue:
        payload.requested_arguments["x"] = 666
        payload.requested_arguments["filter"]["level"] = "debug"
        payload.current_arguments["filter"]["level"] = "trace"
        payload.current_arguments["extra"] = True
        return Continue()

    def patcher(payload: BeforeToolUsePayload) -> Any:
        patched = {**payload.current_arguments, "x": payload.current_arguments["x"] + 1}
        patched["filter"]["level"] = "warn"  # nested: shared with current_arguments
        return patch_arguments(patched)

    first = ScriptedPlugin("vandal", {HookKind.BEFORE_TOOL_USE: vandal})
    second = ScriptedPlugin("patcher", {HookKind.BEFORE_TOOL_USE: patcher})
    sent = {"x": 1, "filter": {"level": "error"}}
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "probe", sent)]), text("done")],
        tools=[tool],
        configure=configure(first, second),
    )
    session = await agent.new_session()
    await run_turn(session, "go")

    model_sent = {"x": 1, "filter": {"level": "error"}}
    effective = {"x": 2, "filter": {"level": "warn"}}
    seen = second.received(HookKind.BEFORE_TOOL_USE)[0]
    assert seen.requested_arguments == model_sent and seen.current_arguments["x"] == 1
    ledger_call = next(e.payload.call for e in session.events if e.payload.kind == "tool_call")
    assert ledger_call.requested_arguments == model_sent
    assert ledger_call.effective_arguments == effective
    assert tool.calls == [effective]


async def test_after_tool_use_edits_of_effective_arguments_never_reach_the_ledger() -> None:
    tool = RecordingTool("probe")

    def vandal(payload: AfterToolUsePayload) -> Continue:
        payload.effective_arguments["x"] = 666
        payload.effective_arguments["filter"]["level"] = "debug"
        return Continue()

    plugin = ScriptedPlugin("vandal", {HookKind.AFTER_TOOL_USE: vandal})
    sent = {"x": 1, "filter": {"level": "error"}}
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "probe", sent)]), text("done")],
        tools=[tool],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    await run_turn(session, "go")

    ledger_call = next(e.payload.call for e in session.events if e.payload.kind == "tool_call")
    model_sent = {"x": 1, "filter": {"level": "error"}}
    assert ledger_call.requested_arguments == ledger_call.effective_arguments == model_sent
    assert provider.requests[1].messages[1].tool_calls[0].arguments == model_sent


# -- Abort matrix, one row at a time -------------------------------------------------------


class FailingDeleteStorage(InMemorySessionStorage):
    async def delete_session(self, session_id: str) -> None:
        raise OSError("disk is read-only")


def abort_once(reason: str) -> Any:
    """Abort the first call, continue afterwards."""
    calls: list[object] = []

    def reply(payload: object) -> Continue | Abort:
        calls.append(payload)
        return Abort(reason) if len(calls) == 1 else Continue()

    return reply


async def test_session_start_abort_frees_the_slot_without_storage() -> None:
    plugin = ScriptedPlugin("gate", {HookKind.SESSION_START: abort_once("not today")})
    agent, _ = await build_agent(configure=configure(plugin))

    with pytest.raises(AgentError) as caught:
        await agent.new_session()

    assert caught.value.code is ErrorCode.PLUGIN_ABORTED
    assert "not today" in caught.value.message
    session = await agent.new_session()  # max_active_sessions=1: the slot was released
    assert not session.is_closed


@pytest.mark.parametrize("failure", [Abort("rejected"), RuntimeError("rejected")])
async def test_session_start_runs_after_the_profile_is_durable_and_abort_deletes_it(
    failure: Abort | RuntimeError,
) -> None:
    storage = InMemorySessionStorage()
    profile_kinds: list[str] = []

    async def inspect_storage(payload: Any) -> Abort:
        head = await storage.load_head(payload.session_id)
        profile_kinds.append(payload_as(head.profile.payload, Metadata).key)
        if isinstance(failure, Exception):
            raise failure
        return failure

    plugin = ScriptedPlugin("gate", {HookKind.SESSION_START: inspect_storage})
    agent, _ = await build_agent(
        configure=lambda b: configure(plugin)(b.register_session_storage(storage))
    )

    with pytest.raises(AgentError) as caught:
        await agent.new_session()

    assert caught.value.code is ErrorCode.PLUGIN_ABORTED and "rejected" in caught.value.message
    assert profile_kinds == ["session_profile"]
    session_id = plugin.received(HookKind.SESSION_START)[0].session_id
    assert (await storage.list_sessions(SessionListQuery())).items == ()
    with pytest.raises(AgentError):
        await storage.load_head(session_id)


async def test_session_start_abort_with_a_failing_delete_is_a_storage_error() -> None:
    storage = FailingDeleteStorage()
    plugin = ScriptedPlugin("gate", {HookKind.SESSION_START: abort_once("rejected")})
    agent, _ = await build_agent(
        configure=lambda b: configure(plugin)(b.register_session_storage(storage))
    )

    with pytest.raises(AgentError) as caught:
        await agent.new_session()

    assert caught.value.code is ErrorCode.STORAGE_ERROR
    assert "disk is read-only" in caught.value.message
    assert not (await agent.new_session()).is_closed


async def test_turn_start_abort_fails_the_turn_before_the_user_message() -> None:
    plugin = ScriptedPlugin("gate", {HookKind.TURN_START: abort_once("quota exceeded")})
    agent, provider = await build_agent([text("second")], configure=configure(plugin))
    session = await agent.new_session()

    events, outcome = await run_turn(session, "first")

    assert outcome.status is OutcomeStatus.FAILED and outcome.error is not None
    assert outcome.error.code is ErrorCode.PLUGIN_ABORTED
    assert "quota exceeded" in outcome.error.message
    assert [e.payload.type for e in events] == ["error"]
    assert payload_as(events[0].payload, ErrorEvent).code == "PLUGIN_ABORTED"
    assert [e.payload.kind for e in session.events] == ["metadata"]
    assert provider.requests == []
    # The reason is not persisted, and the session stays usable.
    assert all("quota" not in str(e.payload) for e in session.events)
    assert (await (await session.send_message("again")).join()).status is OutcomeStatus.COMPLETED


async def test_turn_start_patches_append_dynamic_sections_at_the_end_of_the_prompt() -> None:
    first = ScriptedPlugin("first", {HookKind.TURN_START: sections("## Today\nsunny", "A2")})
    second = ScriptedPlugin("second", {HookKind.TURN_START: sections("B1")})
    environment = EnvironmentContext(
        cwd="/w", shell="bash", current_date="2026-01-02", timezone="UTC"
    )
    agent, provider = await build_agent(
        [text("ok")],
        config=AgentConfig(default_model="m1", environment_context=environment),
        configure=configure(first, second),
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()

    assert second.received(HookKind.TURN_START)[0].dynamic_sections == ("## Today\nsunny", "A2")
    prompt = provider.requests[0].system_prompt
    assert prompt.endswith("</environment_context>\n\n## Today\nsunny\n\nA2\n\nB1")


async def test_turn_end_abort_keeps_the_answer_and_skips_the_checkpoint() -> None:
    plugin = ScriptedPlugin("gate", {HookKind.TURN_END: Abort("audit failed")})
    agent, provider = await build_agent(
        [text("the answer"), text('{"mutations": []}')],
        config=AgentConfig(default_model="m1", memory_checkpoint_interval=1),
        configure=lambda b: configure(plugin)(b.register_memory_storage(InMemoryMemoryStorage())),
    )
    session = await agent.new_session()
    events, outcome = await run_turn(session, "question")
    await session.close(extract_memories=False)  # waits for any scheduled checkpoint

    assert outcome.status is OutcomeStatus.FAILED and outcome.error is not None
    assert outcome.error.code is ErrorCode.PLUGIN_ABORTED
    assert events[-1].payload.type == "error"
    assert [e.payload.kind for e in session.events] == [
        "metadata",
        "user_message",
        "assistant_message",
    ]
    payload = plugin.received(HookKind.TURN_END)[0]
    assert payload.assistant_output[0].text == "the answer" and not payload.cancelled
    assert len(provider.requests) == 1  # no extraction request


async def test_turn_end_continue_runs_the_checkpoint() -> None:
    """Control for the row above: the same setup without the abort does checkpoint."""
    plugin = ScriptedPlugin("gate", {HookKind.TURN_END: Continue()})
    agent, provider = await build_agent(
        [text("the answer"), text('{"mutations": []}')],
        config=AgentConfig(default_model="m1", memory_checkpoint_interval=1),
        configure=lambda b: configure(plugin)(b.register_memory_storage(InMemoryMemoryStorage())),
    )
    session = await agent.new_session()
    assert (await (await session.send_message("q")).join()).status is OutcomeStatus.COMPLETED
    await session.close()  # waits for the scheduled checkpoint and writes it
    assert payload_as(session.events[-1].payload, Metadata).key == "memory_checkpoint"
    assert len(provider.requests) == 2


async def test_before_tool_use_abort_feeds_a_synthetic_error_back_to_the_model() -> None:
    tool = RecordingTool("rm")
    plugin = ScriptedPlugin("guard", {HookKind.BEFORE_TOOL_USE: Abort("rm is forbidden")})
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "rm", {"x": 1})]), text("I could not")],
        tools=[tool],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    events, outcome = await run_turn(session, "clean up")

    assert outcome.status is OutcomeStatus.COMPLETED
    assert tool.calls == []
    assert not any(isinstance(e.payload, ErrorEvent) for e in events)
    end = next(e.payload for e in events if e.payload.type == "tool_call_end")
    assert end.call_id == "c1" and end.output.is_error
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.role is ModelMessageRole.TOOL and tool_message.tool_call_id == "c1"
    assert "rm is forbidden" in block_text(tool_message.content[0])
    kinds = [e.payload.kind for e in session.events]
    assert kinds == ["metadata", "user_message", "tool_call", "tool_result", "assistant_message"]


async def test_after_tool_use_abort_in_a_concurrent_batch_ends_with_one_tool_free_request() -> None:
    slow, fast, mid = (
        RecordingTool("slow", delay=0.06),
        RecordingTool("fast", delay=0.01),
        RecordingTool("mid", delay=0.03),
    )
    plugin = ScriptedPlugin("stopper", {HookKind.AFTER_TOOL_USE: abort_once("enough tools")})
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls(
                [("c1", "slow", {}), ("c2", "fast", {}), ("c3", "mid", {})]
            ),
            text("wrapping up"),
        ],
        tools=[slow, fast, mid],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    turn = await session.send_message("go")
    await turn.collect()
    outcome = await turn.join()

    assert outcome.status is OutcomeStatus.COMPLETED
    assert (len(slow.calls), len(fast.calls), len(mid.calls)) == (1, 1, 1)
    assert max(t.started[0] for t in (slow, fast, mid)) < min(
        t.finished[0] for t in (slow, fast, mid)
    )  # all were in flight together
    results = [e.payload.result.call_id for e in session.events if e.payload.kind == "tool_result"]
    assert results == ["c1", "c2", "c3"]
    assert len(provider.requests) == 2
    assert provider.requests[0].tools and provider.requests[-1].tools == ()
    assert [m.tool_call_id for m in provider.requests[-1].messages[-3:]] == ["c1", "c2", "c3"]


async def test_after_tool_use_abort_then_more_tool_calls_is_plugin_aborted() -> None:
    tool = RecordingTool("probe")
    plugin = ScriptedPlugin("stopper", {HookKind.AFTER_TOOL_USE: Abort("stop")})
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls([("c1", "probe", {})]),
            ScriptedResponse.tool_calls([("c2", "probe", {})]),
        ],
        tools=[tool],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("go")).join()

    assert outcome.error is not None and outcome.error.code is ErrorCode.PLUGIN_ABORTED
    assert len(tool.calls) == 1 and provider.requests[-1].tools == ()


async def test_before_compact_abort_goes_to_truncation_fallback() -> None:
    plugin = ScriptedPlugin("keep", {HookKind.BEFORE_COMPACT: Abort("no summaries")})
    agent, provider = await build_agent(
        [text("short answer"), text("second answer")],
        models=[model(window=1000)],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    await (await session.send_message("word " * 680)).join()  # ~850 tokens of history
    turn = await session.send_message("next")
    events = await turn.collect()

    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    compacted = [e.payload for e in events if e.payload.type == "context_compacted"]
    assert [c.mode for c in compacted] == [CompactionMode.TRUNCATION_FALLBACK]
    assert len(provider.requests) == 2  # no summary request was sent
    payload = plugin.received(HookKind.BEFORE_COMPACT)[0]
    assert payload.request_estimated_tokens > payload.history_estimated_tokens >= 850
    assert block_text(provider.requests[1].messages[0].content[0]) == "short answer"


@pytest.mark.parametrize("reply", [Abort("unsaved work"), RuntimeError("unsaved work")])
async def test_session_end_abort_on_close_keeps_the_session_active(reply: Any) -> None:
    plugin = ScriptedPlugin("keeper", {HookKind.SESSION_END: reply})
    agent, _ = await build_agent([text("still here")], configure=configure(plugin))
    session = await agent.new_session()

    with pytest.raises(AgentError) as caught:
        await session.close()

    assert caught.value.code is ErrorCode.PLUGIN_ABORTED and "unsaved work" in caught.value.message
    assert not session.is_closed
    assert (await (await session.send_message("hi")).join()).status is OutcomeStatus.COMPLETED
    with pytest.raises(AgentError) as busy:
        await agent.new_session()
    assert busy.value.code is ErrorCode.SESSION_BUSY


@pytest.mark.parametrize("reply", [Abort("unsaved work"), RuntimeError("plugin crashed")])
async def test_session_end_abort_is_ignored_on_shutdown(reply: Any) -> None:
    journal: list[str] = []
    plugin = ScriptedPlugin("keeper", {HookKind.SESSION_END: reply}, journal=journal)
    agent, _ = await build_agent(configure=configure(plugin))
    session = await agent.new_session()

    await agent.shutdown()

    assert agent.lifecycle is LifecycleState.SHUTDOWN
    assert session.is_closed
    ended = plugin.received(HookKind.SESSION_END)
    assert [p.termination_mode for p in ended] == [SessionTerminationMode.SHUTDOWN]
    assert journal[-2:] == ["keeper:session_end", "shutdown:keeper"]


@pytest.mark.parametrize(("mutating", "answered"), [(False, ["c1", "c2"]), (True, ["c1"])])
async def test_a_raising_after_tool_use_hook_still_leaves_every_call_answered(
    mutating: bool, answered: list[str]
) -> None:
    """The turn fails, but the ledger never keeps a started tool call without its result."""
    tools = [RecordingTool("a", mutating=mutating), RecordingTool("b")]
    plugin = ScriptedPlugin("broken", {HookKind.AFTER_TOOL_USE: ValueError("hook bug")})
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "a", {}), ("c2", "b", {})])],
        tools=tools,
        configure=configure(plugin),
    )
    session = await agent.new_session()
    events, outcome = await run_turn(session, "go")

    assert outcome.error is not None and outcome.error.code is ErrorCode.PLUGIN_ABORTED
    assert "broken" in outcome.error.message and "hook bug" in outcome.error.message
    assert events[-1].payload.type == "error"
    calls = [e.payload.call.call_id for e in session.events if e.payload.kind == "tool_call"]
    results = [e.payload.result.call_id for e in session.events if e.payload.kind == "tool_result"]
    assert calls == results == answered
    assert len(plugin.received(HookKind.AFTER_TOOL_USE)) == 1


async def test_after_tool_use_abort_in_a_serial_batch_skips_the_remaining_calls() -> None:
    write, read = RecordingTool("write", mutating=True), RecordingTool("read")
    plugin = ScriptedPlugin("stopper", {HookKind.AFTER_TOOL_USE: abort_once("stop writing")})
    agent, provider = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "write", {}), ("c2", "read", {})]), text("done")],
        tools=[write, read],
        configure=configure(plugin),
    )
    session = await agent.new_session()
    outcome = await (await session.send_message("go")).join()

    assert outcome.status is OutcomeStatus.COMPLETED
    assert (len(write.calls), len(read.calls)) == (1, 0)
    results = [e.payload.result for e in session.events if e.payload.kind == "tool_result"]
    assert [r.call_id for r in results] == ["c1", "c2"]
    skipped = results[1].output
    assert skipped.is_error and skipped.metadata is not None and skipped.metadata["skipped"] is True
    assert provider.requests[-1].tools == ()


async def test_resume_does_not_fire_session_start_again() -> None:
    storage = InMemorySessionStorage()
    plugin = ScriptedPlugin(
        "watch", {HookKind.SESSION_START: Continue(), HookKind.SESSION_END: Continue()}
    )
    agent, _ = await build_agent(
        configure=lambda b: configure(plugin)(b.register_session_storage(storage))
    )
    session = await agent.new_session()
    await session.close()
    catalog = agent.session_catalog()
    assert catalog is not None
    resumed = await catalog.resume(session.session_id)
    await resumed.close()

    assert [kind for kind, _ in plugin.payloads] == [
        HookKind.SESSION_START,
        HookKind.SESSION_END,
        HookKind.SESSION_END,
    ]
