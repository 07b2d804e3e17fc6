"""Recall of compacted history through the kernel's ``recall_history`` tool.

See docs/architecture.md, 'Compaction'. A fact that only a compacted tool result holds must reach
the model again, live and after a resume, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kernel_kit import ALL_CAPS, RecordingTool, build_agent, model, text
from test_application_compaction import agent_with
from youyou import (
    AgentConfig,
    CompactionPolicy,
    MemoryMode,
    OutcomeStatus,
    ProviderCapability,
    ScriptedResponse,
    TurnOptions,
)
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.events import ToolCallEnd
from youyou.domain.ledger import ToolOutput
from youyou.domain.model import ChatRequest, ModelMessageRole
from youyou.domain.recall import RECALL_TOOL_NAME

HOST_ERROR = "connect to db-7.prod.internal:5432 failed: ECONNREFUSED (errno 111)"
CHINESE_ERROR = "数据库连接超时：主机 db-7 无响应，已重试三次"
CONFIG = AgentConfig(default_model="m1", compaction=CompactionPolicy(mode=MemoryMode.MANUAL))


def probe_tool(output: str) -> RecordingTool:
    async def answer(_: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content=output, is_error=True)

    return RecordingTool("probe", behaviour=answer)


def recall(call_id: str, **arguments: Any) -> ScriptedResponse:
    return ScriptedResponse.tool_calls([(call_id, RECALL_TOOL_NAME, arguments)])


def seqs_shown(answer: str) -> list[int]:
    return [int(m) for m in re.findall(r"^#(\d+) ", answer, re.MULTILINE)]


def tool_names(request: ChatRequest) -> list[str]:
    return [t.name for t in request.tools]


def request_text(request: ChatRequest) -> str:
    return "\n".join(
        block.text for m in request.messages for block in m.content if hasattr(block, "text")
    )


def last_tool_message(request: ChatRequest) -> str:
    message = request.messages[-1]
    assert message.role is ModelMessageRole.TOOL
    return "".join(block.text for block in message.content if hasattr(block, "text"))


async def agent_over(
    responses: Sequence[ResponseSource], storage: Any = None, **kwargs: Any
) -> tuple[Any, Any]:
    def configure(builder: Any) -> Any:
        return builder.register_session_storage(storage) if storage is not None else builder

    return await build_agent(
        responses, config=CONFIG, tools=[probe_tool(HOST_ERROR)], configure=configure, **kwargs
    )


async def compacted_session(agent: Any, *, probes: int = 1) -> Any:
    """A session whose probe results lie behind a compaction boundary."""
    session = await agent.new_session()
    for _ in range(probes):
        outcome = await (await session.send_message("check the database")).join()
        assert outcome.status is OutcomeStatus.COMPLETED
    await session.compact()
    return session


def probe_then_summary(probes: int = 1) -> list[ResponseSource]:
    turns: list[ResponseSource] = []
    for index in range(probes):
        turns += [ScriptedResponse.tool_calls([(f"p{index}", "probe", {})]), text("It failed.")]
    return [*turns, text("SUMMARY: a database probe failed.")]


async def test_a_compacted_tool_result_reaches_the_model_again_live_and_resumed(
    db_url: str,
) -> None:
    storage = await SqlSessionStorage.open(db_url)
    try:
        agent, provider = await agent_over(
            [
                *probe_then_summary(),
                recall("r1", query="ECONNREFUSED host"),
                text("It was db-7.prod.internal."),
            ],
            storage,
        )
        session = await compacted_session(agent)
        assert all(RECALL_TOOL_NAME not in tool_names(r) for r in provider.requests[:2])
        assert session.events[0].seq > 1  # released from memory: recall reads the ledger
        turn = await session.send_message("which host refused the connection?")
        events = await turn.collect()
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        asked, answered = provider.requests[-2:]
        assert HOST_ERROR not in request_text(asked)  # only the summary is left in context
        assert "recall_history" in request_text(asked)  # the summary says recall exists
        assert RECALL_TOOL_NAME in tool_names(asked)
        ends = [e.payload for e in events if isinstance(e.payload, ToolCallEnd)]
        assert [e.tool_name for e in ends] == [RECALL_TOOL_NAME]
        assert HOST_ERROR in ends[0].output.content
        assert HOST_ERROR in last_tool_message(answered)
        await agent.shutdown()

        fresh = await SqlSessionStorage.open(db_url)
        try:
            again, fresh_provider = await agent_over(
                [recall("r2", query="db-7.prod.internal"), text("db-7 again")], fresh
            )
            resumed = await again.resume_session(session.session_id)
            await (await resumed.send_message("and the port?")).join()
            assert HOST_ERROR in last_tool_message(fresh_provider.requests[-1])
            await again.shutdown()
        finally:
            await fresh.close()
    finally:
        await storage.close()


async def test_fetch_by_range_returns_the_messages_in_order_with_their_seq() -> None:
    agent, provider = await agent_over(
        [*probe_then_summary(), recall("r1", from_seq=2, to_seq=5), text("done")]
    )
    session = await compacted_session(agent)
    await (await session.send_message("show me the start")).join()
    shown = last_tool_message(provider.requests[-1])
    lines = [line for line in shown.split("\n\n") if line.startswith("#")]
    assert [line.split(" ", 1)[0] for line in lines] == ["#2", "#3", "#4", "#5"]
    assert lines[0] == "#2 user: check the database"
    assert lines[1] == "#3 tool_call probe: {}"
    assert lines[2] == f"#4 tool_result probe (error): {HOST_ERROR}"


async def test_search_finds_chinese_text_even_in_another_word_order() -> None:
    async def answer(_: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content=CHINESE_ERROR, is_error=True)

    agent, provider = await build_agent(
        [*probe_then_summary(), recall("r1", query="数据库超时"), text("找到了")],
        config=CONFIG,
        tools=[RecordingTool("probe", behaviour=answer)],
    )
    session = await compacted_session(agent)
    await (await session.send_message("刚才的错误是什么？")).join()
    shown = last_tool_message(provider.requests[-1])
    assert CHINESE_ERROR in shown
    assert "#4 [" in shown  # the tool result, with its seq


async def test_a_result_over_the_budget_says_so_and_the_next_call_reads_on() -> None:
    def read_on(request: ChatRequest) -> ScriptedResponse:
        cut = re.search(r"Next: from_seq=(\d+)", last_tool_message(request))
        assert cut is not None, last_tool_message(request)
        return recall("r2", from_seq=int(cut.group(1)), max_tokens=100)

    agent, provider = await agent_over(
        [
            *probe_then_summary(probes=3),
            recall("r1", from_seq=1, max_tokens=100),
            read_on,
            text("more"),
        ]
    )
    session = await compacted_session(agent, probes=3)
    boundary = session.latest_compaction.replaces_through_seq
    await (await session.send_message("everything please")).join()
    first, second = (last_tool_message(r) for r in provider.requests[-2:])
    assert "[Cut at the budget of 100 tokens" in first
    assert f"to_seq={boundary}" in first
    next_seq = int(re.findall(r"from_seq=(\d+)", first)[-1])
    assert 2 < next_seq <= boundary
    assert seqs_shown(first) == list(range(2, next_seq))  # whole messages up to the cut
    assert seqs_shown(second)[0] == next_seq  # and the next call reads on from there


async def test_not_offered_before_a_compaction_nor_to_a_model_without_tool_use() -> None:
    agent, provider = await agent_over([text("a1"), text("a2")])
    session = await agent.new_session()
    await (await session.send_message("hello")).join()
    await (await session.send_message("again")).join()
    assert all(RECALL_TOOL_NAME not in tool_names(r) for r in provider.requests)

    no_tools = model("m1", caps=ALL_CAPS - {ProviderCapability.TOOL_USE})
    plain, plain_provider = await build_agent(
        [text("a1"), text("SUMMARY"), text("a2")], models=[no_tools], config=CONFIG
    )
    session = await plain.new_session()
    await (await session.send_message("hello", options=TurnOptions(offer_tools=False))).join()
    await session.compact()
    outcome = await (await session.send_message("again")).join()
    assert outcome.status is OutcomeStatus.COMPLETED
    assert plain_provider.requests[-1].tools == ()


async def test_recall_reads_memory_without_a_storage_and_the_ledger_with_one() -> None:
    storage = InMemorySessionStorage()
    for store in (None, storage):
        agent, provider = await agent_over(
            [*probe_then_summary(), recall("r1", query="errno"), text("ok")], store
        )
        session = await compacted_session(agent)
        assert (session.events[0].seq == 1) is (store is None)
        await (await session.send_message("the errno?")).join()
        assert HOST_ERROR in last_tool_message(provider.requests[-1])


async def test_a_compaction_inside_a_turn_offers_recall_on_its_next_request() -> None:
    big = "x" * 300
    agent, provider = await agent_with(
        [
            text("a" * 560),
            ScriptedResponse.tool_calls([("p1", "probe", {})]),
            text("SUMMARY"),
            text("done"),
        ],
        window=1000,
        mode=MemoryMode.EVERY_N_TURNS,
        tools=[probe_tool(big)],
    )
    session = await agent.new_session()
    await (await session.send_message("q")).join()
    turn = await session.send_message("go")
    events = await turn.collect()
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert "context_compacted" in [e.payload.type for e in events]
    before, after = provider.requests[1], provider.requests[-1]
    assert RECALL_TOOL_NAME not in tool_names(before)
    assert RECALL_TOOL_NAME in tool_names(after)
