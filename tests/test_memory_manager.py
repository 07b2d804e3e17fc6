"""MemoryManager read path (bootstrap, per-turn search) and write path (extraction)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from youyou.adapters.memory import InMemoryMemoryStorage
from youyou.application.memory_manager import MemoryManager, render_memory_section
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import AssistantMessage, LedgerEvent, Metadata, UserMessage
from youyou.domain.memory import (
    CreateMemory,
    DeleteMemory,
    Memory,
    SessionMemoryState,
    SkipMemory,
    UpdateMemory,
)
from youyou.domain.memory_extraction import MEMORY_EXTRACTION_PROMPT
from youyou.domain.model import ChatRequest, ModelMessageRole
from youyou.domain.templates import MEMORY_USAGE_INSTRUCTIONS

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def mem(id: str, content: str, at: int = 0) -> Memory:
    when = T0 + timedelta(hours=at)
    return Memory(id=id, namespace="ns", content=content, created_at=when, updated_at=when)


class RecordingStorage:
    """A real in-process store that logs every call into a shared journal."""

    def __init__(self, journal: list[str], fail: bool = False) -> None:
        self.inner = InMemoryMemoryStorage()
        self.journal = journal
        self.fail = fail
        self.queries: list[tuple[str, str, int]] = []
        self.recent: list[Memory] | None = None

    def _record(self, name: str) -> None:
        self.journal.append(name)
        if self.fail:
            raise OSError(f"{name}: disk on fire")

    async def search(self, namespace: str, query: str, top_k: int) -> Sequence[Memory]:
        self.queries.append((namespace, query, top_k))
        self._record("search")
        return await self.inner.search(namespace, query, top_k)

    async def list_recent(self, namespace: str, limit: int) -> Sequence[Memory]:
        self._record("list_recent")
        if self.recent is not None:
            return self.recent[:limit]
        return await self.inner.list_recent(namespace, limit)

    async def list_all(self, namespace: str) -> Sequence[Memory]:
        self._record("list_all")
        return await self.inner.list_all(namespace)

    async def upsert(self, memory: Memory) -> None:
        self._record("upsert")
        await self.inner.upsert(memory)

    async def delete(self, namespace: str, id: str) -> None:
        self._record("delete")
        await self.inner.delete(namespace, id)


class ScriptedModel:
    def __init__(self, journal: list[str], reply: str | AgentError) -> None:
        self.journal = journal
        self.reply = reply
        self.requests: list[ChatRequest] = []

    async def __call__(self, request: ChatRequest) -> str:
        self.journal.append("complete")
        self.requests.append(request)
        if isinstance(self.reply, AgentError):
            raise self.reply
        return self.reply


def setup(
    reply: str | AgentError = "", fail: bool = False
) -> tuple[MemoryManager, RecordingStorage, ScriptedModel, list[str]]:
    journal: list[str] = []
    storage = RecordingStorage(journal, fail)
    model = ScriptedModel(journal, reply)
    return MemoryManager(storage, model), storage, model, journal


def window(*texts: str) -> list[LedgerEvent]:
    events = []
    for i, text in enumerate(texts):
        payload = (UserMessage if i % 2 == 0 else AssistantMessage)(content=(TextBlock(text=text),))
        events.append(LedgerEvent(seq=11 + i, timestamp=T0, payload=payload))
    return events


IMAGE = ImageBlock(mime_type="image/png", data_base64="iVBORw0KGgo=")


async def test_disabled_manager_does_nothing() -> None:
    journal: list[str] = []
    manager = MemoryManager(None, ScriptedModel(journal, "{}"))
    state = SessionMemoryState()
    assert not manager.enabled
    assert await manager.load_bootstrap_memories("ns", 5) == []
    assert await manager.prepare_turn_memories([TextBlock(text="咖啡")], state, "ns", 5) == []
    result = await manager.run_extraction(
        session_id="s", events=window("hi"), namespace="ns", model_id="m"
    )
    assert result.mutations == () and journal == []


async def test_bootstrap_keeps_storage_order_and_limit() -> None:
    manager, storage, _, journal = setup()
    storage.recent = [mem("old", "a", 1), mem("new", "b", 9), mem("mid", "c", 5)]
    assert manager.enabled
    loaded = await manager.load_bootstrap_memories("ns", 2)
    assert [m.id for m in loaded] == ["old", "new"]
    assert journal == ["list_recent"]


async def test_bootstrap_failure_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    manager, _, _, _ = setup(fail=True)
    with caplog.at_level(logging.WARNING):
        assert await manager.load_bootstrap_memories("ns", 5) == []
    assert "memory bootstrap failed" in caplog.text


async def test_query_uses_top_level_text_without_skill_triggers() -> None:
    manager, storage, _, _ = setup()
    blocks: list[ContentBlock] = [
        TextBlock(text="/translate 我还喜欢喝咖啡吗"),
        FileContentBlock(file_name="a.txt", text="file text must not be searched"),
        IMAGE,
        TextBlock(text="and tea? /summarize"),
    ]
    await manager.prepare_turn_memories(blocks, SessionMemoryState(), "ns", 7)
    assert storage.queries == [("ns", "我还喜欢喝咖啡吗 and tea?", 7)]


@pytest.mark.parametrize(
    "blocks",
    [
        [FileContentBlock(file_name="log.txt", text="coffee coffee coffee")],
        [IMAGE],
        [IMAGE, FileContentBlock(text="咖啡")],
        [TextBlock(text="/translate"), IMAGE],
        [TextBlock(text="   ")],
    ],
)
async def test_input_without_query_text_skips_search(blocks: list[ContentBlock]) -> None:
    manager, storage, _, journal = setup()
    state = SessionMemoryState(
        bootstrap_memories=[mem("b", "boot")], last_turn_memories=[mem("stale", "x")]
    )
    assert await manager.prepare_turn_memories(blocks, state, "ns", 5) == [mem("b", "boot")]
    assert journal == [] and storage.queries == []
    assert state.last_turn_memories == []


async def test_turn_memories_merge_after_bootstrap_deduped_and_capped() -> None:
    manager, storage, _, _ = setup()
    a, b, c, d = (mem(i, f"coffee note {i}", n) for n, i in enumerate("abcd"))
    for item in (b, c, d):
        await storage.inner.upsert(item)
    state = SessionMemoryState(bootstrap_memories=[a, b])
    merged = await manager.prepare_turn_memories([TextBlock(text="coffee")], state, "ns", 3)
    assert [m.id for m in state.last_turn_memories] == ["d", "c", "b"]
    assert [m.id for m in merged] == ["a", "b", "d"]


async def test_search_failure_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    manager, _, _, _ = setup(fail=True)
    state = SessionMemoryState(
        bootstrap_memories=[mem("b", "boot")], last_turn_memories=[mem("stale", "x")]
    )
    with caplog.at_level(logging.WARNING):
        merged = await manager.prepare_turn_memories([TextBlock(text="咖啡")], state, "ns", 5)
    assert merged == [mem("b", "boot")]
    assert state.last_turn_memories == []
    assert "memory search failed" in caplog.text


def reply(*items: dict[str, str]) -> str:
    return json.dumps({"mutations": list(items)}, ensure_ascii=False)


async def test_extraction_calls_list_all_then_model_then_writes() -> None:
    manager, storage, model, journal = setup()
    await storage.inner.upsert(mem("tea", "User likes tea"))
    await storage.inner.upsert(mem("city", "用户住在北京"))
    model.reply = reply(
        {"op": "create", "content": "User has a cat named Mochi", "reason": "told"},
        {"op": "update", "id": "tea", "content": "User switched to coffee", "reason": "changed"},
        {"op": "delete", "id": "city", "reason": "moved away"},
        {"op": "skip", "reason": "nothing else"},
    )
    result = await manager.run_extraction(
        session_id="sess-1",
        events=window("我有一只猫叫 Mochi", "好的", "I drink coffee now"),
        namespace="ns",
        model_id="memory-model",
    )
    assert journal == ["list_all", "complete", "upsert", "upsert", "delete"]
    assert [type(m) for m in result.mutations] == [
        CreateMemory,
        UpdateMemory,
        DeleteMemory,
        SkipMemory,
    ]
    assert result.warnings == ()
    [request] = model.requests
    assert request.model_id == "memory-model"
    assert request.system_prompt == MEMORY_EXTRACTION_PROMPT
    assert request.tools == ()
    [message] = request.messages
    assert message.role is ModelMessageRole.USER
    [block] = message.content
    assert isinstance(block, TextBlock)
    assert "[11] user: 我有一只猫叫 Mochi" in block.text
    assert '"id": "city", "content": "用户住在北京"' in block.text

    stored = {m.id: m for m in await storage.inner.list_all("ns")}
    assert "city" not in stored
    assert stored["tea"].content == "User switched to coffee"
    assert stored["tea"].created_at == T0
    [created] = [m for m in stored.values() if m.id != "tea"]
    assert len(created.id) == 32 and created.content == "User has a cat named Mochi"
    for item in (created, stored["tea"]):
        assert (item.source_session_id, item.source_seq_start, item.source_seq_end) == (
            "sess-1",
            11,
            13,
        )


@pytest.mark.parametrize(
    ("output", "writes", "warned"),
    [
        ("I think nothing is worth saving.", [], True),
        (
            '```json\n{"mutations": [{"op": "create", "content": "Likes jazz"}]}\n```',
            ["upsert"],
            False,
        ),
        ('{"mutations": [{"op": "forget", "id": "tea"}]}', [], True),
        (
            '{"mutations": [{"op": "update", "id": "nope", "content": "x", "reason": "r"}]}',
            [],
            True,
        ),
        ("", [], True),
        ('{"mutations": []}', [], False),
    ],
)
async def test_malformed_model_output_never_raises(
    output: str, writes: list[str], warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    manager, storage, _, journal = setup(output)
    await storage.inner.upsert(mem("tea", "User likes tea"))
    with caplog.at_level(logging.WARNING):
        result = await manager.run_extraction(
            session_id="s", events=window("hello"), namespace="ns", model_id="m"
        )
    assert journal == ["list_all", "complete", *writes]
    assert bool(result.warnings) is warned
    assert ("memory extraction for session s" in caplog.text) is warned
    assert (await storage.inner.list_all("ns"))[0].content == "User likes tea"


async def test_metadata_only_window_makes_no_model_call() -> None:
    manager, _, _, journal = setup(reply({"op": "create", "content": "x"}))
    events = [LedgerEvent(seq=4, timestamp=T0, payload=Metadata(key="memory_checkpoint", value=3))]
    result = await manager.run_extraction(
        session_id="s", events=events, namespace="ns", model_id="m"
    )
    assert result.mutations == () and journal == []


async def test_storage_failure_on_write_path_is_storage_error() -> None:
    manager, _, _, journal = setup(reply({"op": "create", "content": "x"}), fail=True)
    with pytest.raises(AgentError) as err:
        await manager.run_extraction(
            session_id="s", events=window("hi"), namespace="ns", model_id="m"
        )
    assert err.value.code is ErrorCode.STORAGE_ERROR
    assert journal == ["list_all"]


async def test_model_failure_propagates_without_writes() -> None:
    failure = AgentError(ErrorCode.PROVIDER_ERROR, "upstream 500", retryable=True)
    manager, _, _, journal = setup(failure)
    with pytest.raises(AgentError) as err:
        await manager.run_extraction(
            session_id="s", events=window("hi"), namespace="ns", model_id="m"
        )
    assert err.value is failure
    assert journal == ["list_all", "complete"]


def test_memory_section_format_and_empty_set() -> None:
    assert render_memory_section([]) is None
    section = render_memory_section([mem("a", "User likes tea", 0), mem("b", "第一行\n第二行", 30)])
    assert section == (
        f"## Memory\n\n{MEMORY_USAGE_INSTRUCTIONS}\n\n### Memories\n"
        "- [2026-02-01] User likes tea\n"
        "- [2026-02-02] 第一行\n  第二行"
    )
