"""LangChain v1 ``create_agent`` (a LangGraph graph) side of the comparison; bench/peers/.venv.

The model is a minimal ``BaseChatModel`` subclass that counts the messages of every call and
streams the answer as 10 chunks (or the tool plan) with no latency; ``bind_tools`` returns it
unchanged. Conversation state is LangGraph's checkpointer, as the framework documents it:
``InMemorySaver`` in memory, ``AsyncSqliteSaver`` (langgraph-checkpoint-sqlite) on disk. Turns are
streamed with ``stream_mode="messages"`` (token by token).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import common
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import PrivateAttr


class CountingChatModel(BaseChatModel):
    """Zero-latency chat model: logs each call's messages, answers text or the tool plan."""

    tool_rounds: int = 0
    _log: common.ModelLog = PrivateAttr(default_factory=common.ModelLog)
    _calls: int = PrivateAttr(default=0)

    @property
    def log(self) -> common.ModelLog:
        return self._log

    @property
    def _llm_type(self) -> str:
        return "bench-counting"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> CountingChatModel:
        return self

    def _observe(self, messages: list[BaseMessage]) -> list[tuple[str, str]] | None:
        chat = [m for m in messages if isinstance(m, HumanMessage | AIMessage)]
        tools = sum(
            1 for m in messages if isinstance(m, ToolMessage) and m.content == common.TOOL_RESULT
        )
        users = [m for m in chat if isinstance(m, HumanMessage)]
        self._log.record(len(chat), tools, users[-1].text if users else "")
        round_no, self._calls = self._calls, self._calls + 1
        return common.tool_plan(round_no) if round_no < self.tool_rounds else None

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        plan = self._observe(messages)
        if plan is None:
            message = AIMessage(content=common.ANSWER)
        else:
            calls = [{"name": name, "args": {}, "id": call_id} for call_id, name in plan]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        return self._generate(messages)

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        plan = self._observe(messages)
        if plan is not None:
            chunks = [
                {"name": name, "args": "{}", "id": call_id, "index": k}
                for k, (call_id, name) in enumerate(plan)
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", tool_call_chunks=chunks, chunk_position="last")
            )
            return
        last = len(common.ANSWER_DELTAS) - 1
        for k, delta in enumerate(common.ANSWER_DELTAS):
            chunk = AIMessageChunk(content=delta, chunk_position="last" if k == last else None)
            yield ChatGenerationChunk(message=chunk)


def sleep_tool(name: str) -> BaseTool:
    async def sleep() -> str:
        return await common.TOOLS.sleep()

    return StructuredTool.from_function(coroutine=sleep, name=name, description="sleeps 50 ms")


def make_agent(
    model: CountingChatModel, checkpointer: BaseCheckpointSaver[Any], tools: bool = False
) -> Any:
    return create_agent(
        model,
        tools=[sleep_tool(name) for name in common.TOOL_NAMES] if tools else [],
        system_prompt=common.SYSTEM_PROMPT,
        checkpointer=checkpointer,
    )


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


async def stream(agent: Any, thread_id: str, n: int) -> None:
    given = {"messages": [HumanMessage(common.question(n))]}
    async for chunk, _ in agent.astream(given, thread(thread_id), stream_mode="messages"):
        if isinstance(chunk, AIMessageChunk) and chunk.content:
            common.RECEIVED.deltas += 1


def seeded_messages(count: int) -> list[BaseMessage]:
    return [
        HumanMessage(common.seeded_text(i)) if i % 2 == 0 else AIMessage(common.seeded_text(i))
        for i in range(count)
    ]


async def seed(agent: Any, thread_id: str, count: int) -> None:
    await agent.aupdate_state(
        thread(thread_id), {"messages": seeded_messages(count)}, as_node="model"
    )


async def sqlite_saver(stack: AsyncExitStack, db: Path) -> AsyncSqliteSaver:
    return await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(db)))


async def s1(memory: bool, workdir: Path) -> dict[str, Any]:
    model = CountingChatModel()
    async with AsyncExitStack() as stack:
        saver = InMemorySaver() if memory else await sqlite_saver(stack, workdir / "lg.db")
        agent = make_agent(model, saver)
        durations = await common.timed_turns(partial(stream, agent, "bench"), common.TURNS)
    common.check_chat(model.log, 0, common.TURNS)
    return {"turn_ms": common.summary(durations)}


async def tool_turn() -> float:
    model = CountingChatModel(tool_rounds=common.ROUNDS)
    agent = make_agent(model, InMemorySaver(), tools=True)
    wall_ms = await common.timed_ms(partial(stream, agent, "bench", 0))
    common.check_tools(model.log)
    return wall_ms


async def s3(workdir: Path) -> dict[str, Any]:
    db = workdir / "lg.db"
    async with AsyncExitStack() as stack:
        await seed(
            make_agent(CountingChatModel(), await sqlite_saver(stack, db)),
            "stored",
            common.STORED_MESSAGES,
        )
    times = []
    for n in range(common.S3_REOPENS + 1):  # the first reopen warms up, it is not counted
        model = CountingChatModel()
        async with AsyncExitStack() as stack:
            agent = make_agent(model, await sqlite_saver(stack, db))
            times.append(await common.timed_ms(partial(stream, agent, "stored", n)))
        common.check_chat(model.log, common.STORED_MESSAGES + 2 * n, 1, first_question=n)
    return {"reopen_answer_ms": common.summary(times[1:])}


async def s4() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in common.HISTORY_SIZES:
        model = CountingChatModel()
        agent = make_agent(model, InMemorySaver())
        await seed(agent, "history", size)
        durations = await common.timed_turns(partial(stream, agent, "history"), common.S4_TURNS)
        common.check_chat(model.log, size, common.S4_TURNS)
        out[str(size)] = common.summary(durations)
    return {"turn_ms": out}


async def drive(scenario: str, workdir: str) -> dict[str, Any]:
    folder = Path(workdir)
    if scenario in ("s1-memory", "s1-sqlite"):
        return await s1(scenario == "s1-memory", folder)
    if scenario == "s2":
        return await common.tool_rounds(tool_turn)
    if scenario == "s3":
        return await s3(folder)
    return await s4()


if __name__ == "__main__":
    common.main("langchain", version("langchain"), drive)
