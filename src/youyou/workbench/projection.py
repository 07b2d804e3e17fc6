"""What lists and the context bar show of a chat session, kept beside its ledger.

After every turn or memory change the hub stores this projection in the chat session's row,
so listing sessions or reading one never needs to resume its ledger.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from youyou.api.session import SessionHandle
from youyou.config import memory_mode_name
from youyou.domain.events import ContextUsage
from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.schemas import MemoryOut
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore


def project_chat(
    chat: ChatSessionRecord,
    handle: SessionHandle,
    usage: ContextUsage | None,
    *,
    compacted: bool,
) -> ChatSessionRecord:
    """``chat`` brought up to date with its open session; ``usage`` when the caller has it
    (a turn's last event), else read from the session. An untitled chat takes the title the
    kernel derived from the conversation."""
    usage = usage or handle.usage()
    summary = handle.summary
    compaction = handle.latest_compaction
    now = datetime.now(UTC)
    title = chat.title
    if title == UNTITLED_SESSION and summary is not None:
        title = summary.title
    return replace(
        chat,
        title=title,
        updated_at=now,
        message_count=summary.message_count if summary else chat.message_count,
        memory_mode=memory_mode_name(handle.memory_mode),
        summary=compaction.summary_body if compaction else None,
        compacted_message_count=compaction.compacted_message_count if compaction else 0,
        context_tokens=usage.tokens,
        context_window_tokens=usage.window,
        last_compacted_at=now if compacted else chat.last_compacted_at,
    )


async def store_projection(
    store: WorkbenchStore,
    chat: ChatSessionRecord,
    handle: SessionHandle,
    usage: ContextUsage | None,
    *,
    compacted: bool,
) -> ChatSessionRecord:
    """``project_chat``, stored in the chat session's row."""
    projected = project_chat(chat, handle, usage, compacted=compacted)
    await store.update_chat_session(projected.id, projected.projection)
    return projected


def memory_out(chat: ChatSessionRecord) -> MemoryOut:
    """The ``memory`` of a session in the API and in ``turn_complete``: one projection."""
    usage = ContextUsage.of(
        chat.context_tokens,
        chat.context_window_tokens,
        can_compact=chat.message_count > chat.compacted_message_count,
    )
    return MemoryOut(
        mode=chat.memory_mode,  # validated: only names of MEMORY_MODE_NAMES are stored
        summary=chat.summary,
        compacted_message_count=chat.compacted_message_count,
        context_tokens=usage.tokens,
        context_window_tokens=usage.window,
        context_usage_percent=usage.percent,
        can_compact=usage.can_compact,
        last_compacted_at=chat.last_compacted_at,
    )
