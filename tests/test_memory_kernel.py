"""Long-term memory through the agent: bootstrap, per-turn search, checkpoints, close."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from kernel_kit import MODEL, block_text
from waiting import eventually
from youyou import (
    Agent,
    AgentBuilder,
    AgentConfig,
    CancellationToken,
    OutcomeStatus,
    ScriptedProvider,
    ScriptedResponse,
    SessionConfig,
)
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.ledger import Metadata
from youyou.domain.memory import Memory
from youyou.domain.memory_extraction import MEMORY_EXTRACTION_PROMPT
from youyou.domain.model import ChatEvent, ChatRequest
from youyou.domain.templates import MEMORY_SECTION_HEADER

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def memory(mid: str, content: str, minute: int) -> Memory:
    stamp = T0.replace(minute=minute)
    return Memory(id=mid, namespace="ops", content=content, created_at=stamp, updated_at=stamp)


class Model:
    """Answers chat turns; answers extraction requests with a 'create' mutation."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.extractions: list[ChatRequest] = []
        self.gate = gate

    def __call__(self, request: ChatRequest) -> ScriptedResponse:
        if request.system_prompt == MEMORY_EXTRACTION_PROMPT:
            self.extractions.append(request)
            n = len(self.extractions)
            body = {"mutations": [{"op": "create", "content": f"fact {n}", "reason": "said"}]}
            return ScriptedResponse.text(json.dumps(body))
        return ScriptedResponse.text("ok")


class GatedProvider(ScriptedProvider):
    """Answers with ``model``; holds extraction requests until ``model.gate`` opens, if set."""

    def __init__(self, model: Model) -> None:
        super().__init__(models=(MODEL,), fallback=model)
        self.gate = model.gate

    async def chat(
        self, request: ChatRequest, cancel: CancellationToken
    ) -> AsyncIterator[ChatEvent]:
        if self.gate is not None and request.system_prompt == MEMORY_EXTRACTION_PROMPT:
            await self.gate.wait()
        async for event in super().chat(request, cancel):
            yield event


async def agent_with(
    storage: InMemoryMemoryStorage, model: Model, interval: int = 2
) -> tuple[Agent, ScriptedProvider]:
    config = AgentConfig(
        default_model="m1",
        memory_namespace="ops",
        memory_checkpoint_interval=interval,
        memory_max_items=3,
    )
    provider = GatedProvider(model)
    builder = AgentBuilder(config).register_model_provider(provider)
    builder.with_token_counter(lambda _: ApproximateTokenCounter()).register_memory_storage(storage)
    return await builder.build(), provider


async def test_bootstrap_and_turn_memories_are_rendered_in_the_prompt() -> None:
    storage = InMemoryMemoryStorage()
    for i, text in enumerate(
        ["db-1 runs postgres 15", "pager rota: alice", "api-7 is canary", "redis on 6379"]
    ):
        await storage.upsert(memory(f"m{i}", text, i))
    model = Model()
    agent, provider = await agent_with(storage, model)
    session = await agent.new_session()
    assert (await (await session.send_message("is redis on 6379?")).join()).status is (
        OutcomeStatus.COMPLETED
    )
    prompt = provider.requests[0].system_prompt
    assert MEMORY_SECTION_HEADER in prompt
    listed = [line for line in prompt.splitlines() if line.startswith("- ")]
    # bootstrap = list_recent order as given (newest first), capped at memory_max_items
    assert "redis on 6379" in prompt
    assert len(listed) <= 3


async def test_no_memory_section_without_memories() -> None:
    agent, provider = await agent_with(InMemoryMemoryStorage(), Model())
    session = await agent.new_session()
    await (await session.send_message("hello")).join()
    assert MEMORY_SECTION_HEADER not in provider.requests[0].system_prompt


async def test_checkpoint_every_interval_off_the_critical_path_and_on_close() -> None:
    storage = InMemoryMemoryStorage()
    model = Model()
    agent, _ = await agent_with(storage, model, interval=2)
    session = await agent.new_session()
    for message in ("first", "second"):
        await (await session.send_message(message)).join()

    def recorded_checkpoints() -> list[Metadata]:
        return [
            e.payload
            for e in session.events
            if isinstance(e.payload, Metadata) and e.payload.key == "memory_checkpoint"
        ]

    await eventually(lambda: bool(model.extractions), what="the background extraction")
    await eventually(lambda: session._runtime.pending_checkpoint is not None, what="its checkpoint")
    window = block_text(model.extractions[0].messages[0].content[0])
    assert "first" in window and "second" in window
    assert [m.content for m in await storage.list_all("ops")] == ["fact 1"]
    # The turn has ended: the background task writes nothing to the ledger on its own.
    assert recorded_checkpoints() == []
    last_seq = session.last_seq
    await (await session.send_message("third")).join()
    checkpoints = recorded_checkpoints()  # written by the next turn, before its message
    assert len(checkpoints) == 1
    assert checkpoints[0].value == {"last_seq": last_seq, "turn_index": 2}
    assert session.events[last_seq].payload.kind == "metadata"  # seq last_seq + 1
    created = (await storage.list_all("ops"))[0]
    assert created.source_session_id == session.session_id
    assert created.source_seq_end == checkpoints[0].value["last_seq"]
    await session.close()  # close extraction covers only the window after the checkpoint
    assert len(model.extractions) == 2
    close_window = block_text(model.extractions[1].messages[0].content[0])
    assert "third" in close_window and "first" not in close_window
    assert sorted(m.content for m in await storage.list_all("ops")) == ["fact 1", "fact 2"]


async def test_a_session_namespace_keeps_its_memories_apart_from_the_agent_namespace() -> None:
    storage = InMemoryMemoryStorage()
    model = Model()
    agent, _ = await agent_with(storage, model, interval=1)
    session = await agent.new_session(SessionConfig(memory_namespace="user:1"))
    assert session.config.pinned.memory_namespace == "user:1"
    await (await session.send_message("remember me")).join()
    await session.close()
    assert [m.content for m in await storage.list_all("user:1")] == ["fact 1"]
    assert await storage.list_all("ops") == []


async def test_close_without_extraction_writes_nothing_and_asks_no_model() -> None:
    model = Model()
    agent, _ = await agent_with(InMemoryMemoryStorage(), model, interval=100)
    session = await agent.new_session()
    await (await session.send_message("hello")).join()
    last_seq = session.last_seq
    await session.close(extract_memories=False)
    assert session.is_closed
    assert session.last_seq == last_seq
    assert model.extractions == []


async def test_close_extraction_failure_never_blocks_close_or_shutdown() -> None:
    class Failing(InMemoryMemoryStorage):
        async def list_all(self, namespace: str) -> list[Memory]:
            raise OSError("memory db down")

    agent, _ = await agent_with(Failing(), Model(), interval=100)
    session = await agent.new_session()
    await (await session.send_message("hello")).join()
    await session.close()
    assert session.is_closed
    other = await agent.new_session()
    await (await other.send_message("again")).join()
    await agent.shutdown()
    assert other.is_closed


async def test_the_next_turn_does_not_wait_for_extraction() -> None:
    storage = InMemoryMemoryStorage()
    gate = asyncio.Event()
    agent, _ = await agent_with(storage, Model(gate), interval=1)
    session = await agent.new_session()
    await (await session.send_message("first")).join()  # its checkpoint waits for the gate
    async with asyncio.timeout(10):  # a deadline: the turn finishes while extraction is held
        outcome = await (await session.send_message("second")).join()
    assert outcome.status is OutcomeStatus.COMPLETED
    assert await storage.list_all("ops") == []  # still extracting
    gate.set()
    await session.close()  # close awaits the pending extraction
    assert len(await storage.list_all("ops")) >= 1
