"""openai-agents (Agents SDK) side of the peer comparison; runs in bench/peers/.venv.

The model is a custom ``Model`` subclass: it counts the input items of every call and streams
Responses-API events (text deltas, or function calls) with no latency. Memory keeps the history
as the SDK documents it (``result.to_input_list()`` plus the next message); persistence is the
SDK's ``SQLiteSession``. Tracing is off (it would try to upload spans).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import common
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

RUN_CONFIG = RunConfig(tracing_disabled=True)
_ids = itertools.count()


def item_text(item: Any) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or ())


class CountingModel(Model):
    """Zero-latency model: logs each call's input, streams the answer or the tool plan."""

    def __init__(self, tool_rounds: int = 0) -> None:
        self.log = common.ModelLog()
        self._tool_rounds = tool_rounds
        self._calls = 0

    def _observe(self, items: str | list[Any]) -> list[Any]:
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        chat = [i for i in items if i.get("role") in ("user", "assistant")]
        tools = sum(
            1
            for i in items
            if i.get("type") == "function_call_output" and i.get("output") == common.TOOL_RESULT
        )
        users = [i for i in chat if i["role"] == "user"]
        self.log.record(len(chat), tools, item_text(users[-1]) if users else "")
        round_no, self._calls = self._calls, self._calls + 1
        if round_no < self._tool_rounds:
            return [
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{call_id}",
                    call_id=call_id,
                    name=name,
                    arguments="{}",
                    status="completed",
                )
                for call_id, name in common.tool_plan(round_no)
            ]
        return [
            ResponseOutputMessage(
                id=f"msg_{next(_ids)}",
                type="message",
                role="assistant",
                status="completed",
                content=[
                    ResponseOutputText(type="output_text", text=common.ANSWER, annotations=[])
                ],
            )
        ]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        output = self._observe(args[1])
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        output = self._observe(args[1])
        response = Response(
            id=f"resp_{next(_ids)}",
            created_at=0,
            model="bench-model",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=True,
        )
        seq = itertools.count()
        yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=0)
        for index, item in enumerate(output):
            yield ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                item=item,
                output_index=index,
                sequence_number=next(seq),
            )
            if isinstance(item, ResponseOutputMessage):
                for delta in common.ANSWER_DELTAS:
                    yield ResponseTextDeltaEvent(
                        type="response.output_text.delta",
                        item_id=item.id,
                        output_index=index,
                        content_index=0,
                        delta=delta,
                        logprobs=[],
                        sequence_number=next(seq),
                    )
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                item=item,
                output_index=index,
                sequence_number=next(seq),
            )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=next(seq)
        )


def sleep_tool(name: str) -> FunctionTool:
    async def sleep() -> str:
        """Sleeps 50 ms."""
        return await common.TOOLS.sleep()

    return function_tool(sleep, name_override=name)


def make_agent(model: CountingModel, tools: bool = False) -> Agent[Any]:
    return Agent(
        name="bench",
        instructions=common.SYSTEM_PROMPT,
        model=model,
        tools=[sleep_tool(name) for name in common.TOOL_NAMES] if tools else [],
    )


async def stream(agent: Agent[Any], given: Any, session: SQLiteSession | None = None) -> Any:
    result = Runner.run_streamed(agent, given, session=session, run_config=RUN_CONFIG)
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            common.RECEIVED.deltas += 1
    return result


class MemoryChat:
    """History kept by the caller, as ``to_input_list()`` hands it back."""

    def __init__(self, agent: Agent[Any], history: list[Any]) -> None:
        self.agent = agent
        self.history = history

    async def turn(self, n: int) -> None:
        given = [*self.history, {"role": "user", "content": common.question(n)}]
        self.history = (await stream(self.agent, given)).to_input_list()


def seeded_items(count: int) -> list[Any]:
    items: list[Any] = []
    for index in range(count):
        text = common.seeded_text(index)
        if index % 2 == 0:
            items.append({"role": "user", "content": text})
        else:
            items.append(
                {
                    "id": f"msg_seed_{index}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
    return items


async def s1(memory: bool, workdir: Path) -> dict[str, Any]:
    model = CountingModel()
    agent = make_agent(model)
    if memory:
        chat = MemoryChat(agent, [])
        durations = await common.timed_turns(chat.turn, common.TURNS)
    else:
        session = SQLiteSession("bench", workdir / "agents.db")

        async def turn(n: int) -> None:
            await stream(agent, common.question(n), session)

        durations = await common.timed_turns(turn, common.TURNS)
        session.close()
    common.check_chat(model.log, 0, common.TURNS)
    return {"turn_ms": common.summary(durations)}


async def tool_turn() -> float:
    model = CountingModel(tool_rounds=common.ROUNDS)
    wall_ms = await common.timed_ms(
        partial(stream, make_agent(model, tools=True), common.question(0))
    )
    common.check_tools(model.log)
    return wall_ms


async def reopen_and_answer(agent: Agent[Any], db: Path, n: int) -> None:
    session = SQLiteSession("stored", db)
    await stream(agent, common.question(n), session)
    session.close()


async def s3(workdir: Path) -> dict[str, Any]:
    db = workdir / "agents.db"
    session = SQLiteSession("stored", db)
    await session.add_items(seeded_items(common.STORED_MESSAGES))
    session.close()
    times = []
    for n in range(common.S3_REOPENS + 1):  # the first reopen warms up, it is not counted
        model = CountingModel()
        agent = make_agent(model)
        times.append(await common.timed_ms(partial(reopen_and_answer, agent, db, n)))
        common.check_chat(model.log, common.STORED_MESSAGES + 2 * n, 1, first_question=n)
    return {"reopen_answer_ms": common.summary(times[1:])}


async def s4() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in common.HISTORY_SIZES:
        model = CountingModel()
        chat = MemoryChat(make_agent(model), seeded_items(size))
        durations = await common.timed_turns(chat.turn, common.S4_TURNS)
        common.check_chat(model.log, size, common.S4_TURNS)
        out[str(size)] = common.summary(durations)
    return {"turn_ms": out}


async def drive(scenario: str, workdir: str) -> dict[str, Any]:
    set_tracing_disabled(True)
    folder = Path(workdir)
    if scenario in ("s1-memory", "s1-sqlite"):
        return await s1(scenario == "s1-memory", folder)
    if scenario == "s2":
        return await common.tool_rounds(tool_turn)
    if scenario == "s3":
        return await s3(folder)
    return await s4()


if __name__ == "__main__":
    common.main("openai-agents", version("openai-agents"), drive)
