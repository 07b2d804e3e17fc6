"""The projection of a chat session kept in its row: what lists and the context bar show."""

from __future__ import annotations

from dataclasses import replace

from kernel_kit import build_agent, text
from workbench_kit import T0, chat_record
from youyou import SessionHandle
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.domain.events import ContextUsage
from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.projection import memory_out, project_chat
from youyou.workbench.store import ChatSessionRecord


def record(ledger_id: str, **changes: object) -> ChatSessionRecord:
    return chat_record("alice", ledger_session_id=ledger_id, model_id="m1", **changes)


async def session_after_one_turn() -> SessionHandle:
    agent, _ = await build_agent(
        [text("The disk on db-3 is full.")],
        configure=lambda builder: builder.register_session_storage(InMemorySessionStorage()),
    )
    handle = await agent.new_session()
    await (await handle.send_message("Why is db-3 paging?")).join()
    return handle


async def test_an_untitled_chat_takes_the_sessions_title_count_and_usage() -> None:
    handle = await session_after_one_turn()
    projected = project_chat(record(handle.session_id), handle, None, compacted=False)
    summary = handle.summary
    assert summary is not None
    assert projected.title == summary.title != UNTITLED_SESSION
    assert projected.message_count == summary.message_count == 2
    assert projected.memory_mode == "every_30_turns"  # the session's, not the row's
    assert (projected.context_tokens, projected.context_window_tokens) == (
        handle.usage().tokens,
        handle.usage().window,
    )
    assert projected.context_tokens > 0
    assert projected.updated_at > T0
    assert projected.last_compacted_at is None
    assert projected.summary is None and projected.compacted_message_count == 0


async def test_a_named_chat_keeps_its_title_and_the_usage_given_wins() -> None:
    handle = await session_after_one_turn()
    chat = record(handle.session_id, title="db-3 incident", last_compacted_at=T0)
    usage = ContextUsage.of(1234, 8192, can_compact=True)
    projected = project_chat(chat, handle, usage, compacted=False)
    assert projected.title == "db-3 incident"
    assert (projected.context_tokens, projected.context_window_tokens) == (1234, 8192)
    assert projected.last_compacted_at == T0  # not compacted now: the old time stays


async def test_a_compaction_records_its_summary_and_time() -> None:
    handle = await session_after_one_turn()
    await handle.compact()
    compaction = handle.latest_compaction
    assert compaction is not None
    projected = project_chat(record(handle.session_id), handle, None, compacted=True)
    assert projected.summary == compaction.summary_body
    assert projected.compacted_message_count == compaction.compacted_message_count > 0
    assert projected.last_compacted_at == projected.updated_at


def test_memory_out_gives_the_percentage_and_whether_compacting_can_help() -> None:
    chat = record(
        "ledger-1",
        context_tokens=2_500,
        context_window_tokens=10_000,
        message_count=6,
        compacted_message_count=6,
    )
    out = memory_out(chat)
    assert (out.context_tokens, out.context_window_tokens) == (2_500, 10_000)
    assert out.context_usage_percent == 25.0
    assert out.can_compact is False  # every message is already in the summary
    assert memory_out(replace(chat, message_count=8)).can_compact is True
    assert out.mode == "manual"
