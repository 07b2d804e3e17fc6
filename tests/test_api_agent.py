"""The agent as a whole: many sessions at once, isolation, shutdown."""

from __future__ import annotations

import asyncio

from kernel_kit import RecordingTool, block_text, build_agent
from youyou import AgentConfig, OutcomeStatus, ScriptedResponse, TextBlock
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.domain.ledger import AssistantMessage, UserMessage
from youyou.domain.model import ChatRequest, ModelMessageRole


def echo(request: ChatRequest) -> ScriptedResponse:
    """Answers with the last user text, after a tool round trip for 'tool' questions."""
    last = request.messages[-1]
    if last.role is ModelMessageRole.TOOL:
        return ScriptedResponse.text("tool said " + block_text(last.content[0]), chunks=3)
    question = block_text(last.content[0])
    if question.startswith("tool"):
        return ScriptedResponse.tool_calls([(f"c-{question}", "lookup", {"q": question})])
    return ScriptedResponse.text(f"echo {question}", chunks=3, delay_s=0.001)


async def test_fifty_sessions_run_turns_concurrently_without_crosstalk() -> None:
    storage = InMemorySessionStorage()
    tool = RecordingTool("lookup", delay=0.01)
    agent, _ = await build_agent(
        [echo] * 1000,
        config=AgentConfig(default_model="m1", max_active_sessions=50),
        tools=[tool],
        configure=lambda b: b.register_session_storage(storage),
    )
    sessions = await asyncio.gather(*(agent.new_session() for _ in range(50)))

    async def converse(index: int) -> None:
        session = sessions[index]
        for n in range(3):
            question = f"tool s{index} n{n}" if n == 1 else f"s{index} n{n}"
            outcome = await (await session.send_message(question)).join()
            assert outcome.status is OutcomeStatus.COMPLETED

    await asyncio.gather(*(converse(i) for i in range(50)))
    for index, session in enumerate(sessions):
        stored = await storage.load_events(session.session_id)
        users = [
            block_text(e.payload.content[0]) for e in stored if isinstance(e.payload, UserMessage)
        ]
        assert users == [f"s{index} n0", f"tool s{index} n1", f"s{index} n2"]
        answers = [e.payload.content for e in stored if isinstance(e.payload, AssistantMessage)]
        assert answers[0] == (TextBlock(text=f"echo s{index} n0"),)
        assert f"tool s{index} n1" in answers[1][0].text  # type: ignore[union-attr]
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert len(tool.calls) == 50
    await agent.shutdown()
    assert all(s.is_closed for s in sessions)
