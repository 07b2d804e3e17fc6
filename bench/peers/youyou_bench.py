"""YouYou's side of the peer comparison: the kernel through its public API, from the project venv.

The model is a ``ScriptedProvider`` whose response callback counts the messages and tool results
of every request, so each scenario checks the kernel really sent the history. Sessions are seeded
as ``bench/resume.py`` does (the same ledger rows ``append_event`` writes); run.py puts ``bench/``
on ``PYTHONPATH`` for that import.

Run one scenario: ``.venv/bin/python bench/peers/youyou_bench.py s1-memory /tmp/somewhere``
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import common
from resume import build_session, payload_at

from youyou import (
    Agent,
    AgentBuilder,
    AgentConfig,
    CancellationToken,
    CompactionPolicy,
    MemoryMode,
    ModelInfo,
    ScriptedProvider,
    ScriptedResponse,
    SessionHandle,
    SessionStorage,
    SessionSummary,
    TextBlock,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
    __version__,
)
from youyou.adapters.storage.engine import SqliteSynchronous
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.ledger import LedgerEvent
from youyou.domain.model import ChatRequest, ModelMessageRole, ProviderCapability, Usage
from youyou.domain.session import next_summary

MODEL = ModelInfo(
    model_id="bench-model",
    display_name="bench",
    context_window=10_000_000,  # only the compaction policy decides, never the window
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
# Full history: compaction only by size, and the window is too large for it to fire.
FULL_HISTORY = AgentConfig(
    default_model=MODEL.model_id,
    system_instructions=(common.SYSTEM_PROMPT,),
    compaction=CompactionPolicy(mode=MemoryMode.CONTEXT_PERCENT),
)
# The kernel's defaults: a summary compaction every 30 turns.
DEFAULT_COMPACTION = AgentConfig(
    default_model=MODEL.model_id, system_instructions=(common.SYSTEM_PROMPT,)
)
CHAT_ROLES = (ModelMessageRole.USER, ModelMessageRole.ASSISTANT)
SUMMARY_MARK = "[Conversation summary]"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def text_of(blocks: Any) -> str:
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


class CountingModel:
    """The response callback: logs what each request carried, answers text or the tool plan."""

    def __init__(self, tool_rounds: int = 0) -> None:
        self.log = common.ModelLog()
        self.summaries = 0
        self.summary_first: list[bool] = []
        self._tool_rounds = tool_rounds
        self._calls = 0

    def respond(self, request: ChatRequest) -> ScriptedResponse:
        if request.system_prompt.startswith("You compress"):
            self.summaries += 1
            return ScriptedResponse.text("Summary: the user asked many questions.")
        chat = [m for m in request.messages if m.role in CHAT_ROLES]
        tools = sum(
            1
            for m in request.messages
            if m.role is ModelMessageRole.TOOL and text_of(m.content) == common.TOOL_RESULT
        )
        users = [m for m in chat if m.role is ModelMessageRole.USER]
        self.log.record(len(chat), tools, text_of(users[-1].content) if users else "")
        first = request.messages[0] if request.messages else None
        self.summary_first.append(
            first is not None
            and first.role is ModelMessageRole.SYSTEM
            and text_of(first.content).startswith(SUMMARY_MARK)
        )
        round_no, self._calls = self._calls, self._calls + 1
        if round_no < self._tool_rounds:
            return ScriptedResponse.tool_calls(
                [(call_id, name, {}) for call_id, name in common.tool_plan(round_no)]
            )
        return ScriptedResponse.text(
            common.ANSWER,
            chunks=common.CHUNKS,
            usage=Usage(input_tokens=20, output_tokens=50, total_tokens=70),
        )


class SleepTool:
    def __init__(self, name: str) -> None:
        self._descriptor = ToolDescriptor(name=name, description="sleeps 50 ms", mutating=False)

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        return ToolOutput(content=await common.TOOLS.sleep())


async def build_agent(
    model: CountingModel,
    storage: SessionStorage | None,
    config: AgentConfig = FULL_HISTORY,
    tools: bool = False,
) -> Agent:
    provider = ScriptedProvider(
        provider_id="bench", models=[MODEL], fallback=model.respond, record_requests=False
    )
    builder = AgentBuilder(config).register_model_provider(provider)
    if storage is not None:
        builder.register_session_storage(storage)
    if tools:
        for name in common.TOOL_NAMES:
            builder.register_tool(SleepTool(name))
    return await builder.build()


async def stream_turn(session: SessionHandle, text: str) -> None:
    turn = await session.send_message(text)
    async for event in turn.events:
        if event.payload.type == "text_delta":
            common.RECEIVED.deltas += 1
    outcome = await turn.join()
    common.check(outcome.error is None, f"turn failed: {outcome.error}")


async def chat(storage: SessionStorage) -> dict[str, Any]:
    model = CountingModel()
    agent = await build_agent(model, storage)
    session = await agent.new_session()
    durations = await common.timed_turns(
        lambda n: stream_turn(session, common.question(n)), common.TURNS
    )
    await agent.shutdown()
    common.check_chat(model.log, 0, common.TURNS)
    return {"turn_ms": common.summary(durations)}


async def sqlite_chat(db: Path, synchronous: SqliteSynchronous) -> dict[str, Any]:
    storage = await SqlSessionStorage.open(
        f"sqlite+aiosqlite:///{db}", sqlite_synchronous=synchronous
    )
    try:
        return await chat(storage)
    finally:
        await storage.close()


async def s1(memory: bool, workdir: Path) -> dict[str, Any]:
    """SQLite runs twice: the kernel's default (WAL, synchronous=NORMAL) and synchronous=FULL,
    what openai-agents' and LangGraph's SQLite stores run with (an fsync per commit)."""
    if memory:
        return await chat(InMemorySessionStorage())
    normal = await sqlite_chat(workdir / "normal.db", "normal")
    full = await sqlite_chat(workdir / "full.db", "full")
    return {**normal, "turn_ms_sync_full": full["turn_ms"]}


async def tool_turn() -> float:
    model = CountingModel(tool_rounds=common.ROUNDS)
    agent = await build_agent(model, InMemorySessionStorage(), tools=True)
    session = await agent.new_session()
    wall_ms = await common.timed_ms(partial(stream_turn, session, common.question(0)))
    await agent.shutdown()
    common.check_tools(model.log)
    return wall_ms


async def resume_and_answer(agent: Agent, session_id: str, n: int) -> None:
    session = await agent.resume_session(session_id)
    await stream_turn(session, common.question(n))


async def s3(workdir: Path) -> dict[str, Any]:
    url = f"sqlite+aiosqlite:///{workdir / 'youyou.db'}"
    storage = await SqlSessionStorage.open(url)
    session_id = await build_session(storage, common.STORED_MESSAGES + 1, compacted=False)
    await storage.close()
    times = []
    for n in range(common.S3_REOPENS + 1):  # the first reopen warms up, it is not counted
        model = CountingModel()
        storage = await SqlSessionStorage.open(url)
        agent = await build_agent(model, storage)

        times.append(await common.timed_ms(partial(resume_and_answer, agent, session_id, n)))
        await agent.shutdown()
        await storage.close()
        common.check_chat(model.log, common.STORED_MESSAGES + 2 * n, 1, first_question=n)
    return {"reopen_answer_ms": common.summary(times[1:])}


async def seed(storage: InMemorySessionStorage, messages: int) -> str:
    """A session of ``messages`` chat messages, appended through the storage port."""
    session_id = str(uuid.uuid4())
    summary: SessionSummary | None = None
    for seq in range(1, messages + 2):
        event = LedgerEvent(
            seq=seq,
            timestamp=T0 + timedelta(milliseconds=seq),
            payload=payload_at(seq, messages + 1, False),
        )
        summary = next_summary(summary, session_id, event)
        await storage.append_event(session_id, event, summary)
    return session_id


async def history_turns(messages: int, config: AgentConfig) -> tuple[list[float], CountingModel]:
    storage = InMemorySessionStorage()
    session_id = await seed(storage, messages)
    model = CountingModel()
    agent = await build_agent(model, storage, config)
    session = await agent.resume_session(session_id)
    durations = await common.timed_turns(
        lambda n: stream_turn(session, common.question(n)), common.S4_TURNS
    )
    await agent.shutdown()
    return durations, model


async def s4() -> dict[str, Any]:
    full: dict[str, Any] = {}
    compacted: dict[str, Any] = {}
    for size in common.HISTORY_SIZES:
        durations, model = await history_turns(size, FULL_HISTORY)
        common.check_chat(model.log, size, common.S4_TURNS)
        full[str(size)] = common.summary(durations)
        durations, model = await history_turns(size, DEFAULT_COMPACTION)
        # Compacted: the summary first, then only the messages since the boundary.
        deltas = common.RECEIVED.take()
        common.check(deltas == common.CHUNKS * common.S4_TURNS, f"{size}: {deltas} deltas")
        common.check(model.summaries >= 1, f"{size}: the default policy never compacted")
        common.check(all(model.summary_first), f"{size}: a request lacks the summary")
        sent = zip(model.log.messages, model.log.last_user, strict=True)
        for n, (count, last) in enumerate(sent):
            common.check(count % 2 == 1 and count <= 61, f"{size}: request {n} sent {count}")
            common.check(last == common.question(n), f"{size}: request {n} lacks its question")
        compacted[str(size)] = {**common.summary(durations), "summaries": model.summaries}
    return {"turn_ms": compacted, "turn_ms_full_history": full}


async def drive(scenario: str, workdir: str) -> dict[str, Any]:
    folder = Path(workdir)
    if scenario == "s1-memory":
        return await s1(True, folder)
    if scenario == "s1-sqlite":
        return await s1(False, folder)
    if scenario == "s2":
        return await common.tool_rounds(tool_turn)
    if scenario == "s3":
        return await s3(folder)
    return await s4()


if __name__ == "__main__":
    common.main("youyou", __version__, drive)
