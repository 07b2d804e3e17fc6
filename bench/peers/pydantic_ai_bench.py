"""pydantic-ai side of the peer comparison; runs in bench/peers/.venv.

The model is pydantic-ai's own ``FunctionModel`` with a stream function that counts the messages
of every call and streams the answer as 10 deltas (or the tool plan) with no latency. In memory
the history is passed back as ``message_history=result.all_messages()``. pydantic-ai has no
storage of its own, so "SQLite" is the store its docs describe, written here: each turn appends
its ``new_messages_json()`` as one row (stdlib ``sqlite3``, WAL, synchronous=NORMAL as YouYou's),
and a reopen reads every row back through ``ModelMessagesTypeAdapter``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import common
from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel


class CountingModel:
    """The stream function: logs each call's messages, streams the answer or the tool plan."""

    def __init__(self, tool_rounds: int = 0) -> None:
        self.log = common.ModelLog()
        self._tool_rounds = tool_rounds
        self._calls = 0

    async def stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        users: list[str] = []
        answers = tools = 0
        for message in messages:
            if isinstance(message, ModelResponse):
                answers += 1
                continue
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    users.append(str(part.content))
                elif isinstance(part, ToolReturnPart) and part.content == common.TOOL_RESULT:
                    tools += 1
        self.log.record(len(users) + answers, tools, users[-1] if users else "")
        round_no, self._calls = self._calls, self._calls + 1
        if round_no < self._tool_rounds:
            yield {
                k: DeltaToolCall(name=name, json_args="{}", tool_call_id=call_id)
                for k, (call_id, name) in enumerate(common.tool_plan(round_no))
            }
            return
        for delta in common.ANSWER_DELTAS:
            yield delta

    def agent(self, tools: bool = False) -> Agent[None, str]:
        return Agent(
            FunctionModel(stream_function=self.stream),
            instructions=common.SYSTEM_PROMPT,
            tools=[Tool(sleep, name=name) for name in common.TOOL_NAMES] if tools else [],
        )


async def sleep() -> str:
    """Sleeps 50 ms."""
    return await common.TOOLS.sleep()


async def stream(
    agent: Agent[None, str], text: str, history: Sequence[ModelMessage]
) -> tuple[list[ModelMessage], bytes]:
    """One streamed turn; returns the whole history and the turn's new messages as JSON."""
    async with agent.run_stream(text, message_history=history) as result:
        async for _ in result.stream_text(delta=True, debounce_by=None):
            common.RECEIVED.deltas += 1
    return result.all_messages(), result.new_messages_json()


class Store:
    """Append-only message rows per conversation, in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS messages (conversation TEXT, seq INTEGER PRIMARY KEY,"
            " body BLOB)"
        )

    def load(self, conversation: str) -> list[ModelMessage]:
        rows = self.db.execute(
            "SELECT body FROM messages WHERE conversation = ? ORDER BY seq", (conversation,)
        )
        return [m for (body,) in rows for m in ModelMessagesTypeAdapter.validate_json(body)]

    def append(self, conversation: str, body: bytes) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO messages (conversation, body) VALUES (?, ?)", (conversation, body)
            )

    def close(self) -> None:
        self.db.close()


class Chat:
    """A conversation: the history in memory, each turn appended to a ``Store`` if given."""

    def __init__(
        self, agent: Agent[None, str], history: list[ModelMessage], store: Store | None = None
    ) -> None:
        self.agent, self.history, self.store = agent, history, store

    async def turn(self, n: int) -> None:
        self.history, new = await stream(self.agent, common.question(n), self.history)
        if self.store is not None:
            self.store.append("bench", new)


def seeded_messages(count: int) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(common.seeded_text(i))])
        if i % 2 == 0
        else ModelResponse(parts=[TextPart(common.seeded_text(i))])
        for i in range(count)
    ]


async def s1(memory: bool, workdir: Path) -> dict[str, Any]:
    model = CountingModel()
    store = None if memory else Store(workdir / "pai.db")
    chat = Chat(model.agent(), [], store)
    durations = await common.timed_turns(chat.turn, common.TURNS)
    if store is not None:
        store.close()
    common.check_chat(model.log, 0, common.TURNS)
    return {"turn_ms": common.summary(durations)}


async def tool_turn() -> float:
    model = CountingModel(tool_rounds=common.ROUNDS)
    wall_ms = await common.timed_ms(
        partial(stream, model.agent(tools=True), common.question(0), [])
    )
    common.check_tools(model.log)
    return wall_ms


async def reopen_and_answer(agent: Agent[None, str], store: Store, n: int) -> None:
    chat = Chat(agent, store.load("bench"), store)
    await chat.turn(n)


async def s3(workdir: Path) -> dict[str, Any]:
    db = workdir / "pai.db"
    store = Store(db)
    store.append(
        "bench", ModelMessagesTypeAdapter.dump_json(seeded_messages(common.STORED_MESSAGES))
    )
    store.close()
    times = []
    for n in range(common.S3_REOPENS + 1):  # the first reopen warms up, it is not counted
        model = CountingModel()
        store = Store(db)
        times.append(await common.timed_ms(partial(reopen_and_answer, model.agent(), store, n)))
        store.close()
        common.check_chat(model.log, common.STORED_MESSAGES + 2 * n, 1, first_question=n)
    return {"reopen_answer_ms": common.summary(times[1:])}


async def s4() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in common.HISTORY_SIZES:
        model = CountingModel()
        chat = Chat(model.agent(), seeded_messages(size))
        durations = await common.timed_turns(chat.turn, common.S4_TURNS)
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
    common.main("pydantic-ai", version("pydantic-ai-slim"), drive)
