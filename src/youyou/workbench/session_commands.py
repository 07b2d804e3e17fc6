"""What a user does to a session besides sending: create, compact, switch the memory mode,
clear, delete. Each writes the session's ledger as its writer (the kernel takes the lease:
``TURN_BUSY`` while a turn runs here or another process writes it) and stores the projection
that lists and the context bar show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from youyou.api.agent import Agent
from youyou.api.session import SessionHandle
from youyou.config import MEMORY_MODE_NAMES, ServerSettings, memory_mode_name
from youyou.domain.config import MemoryMode, SessionConfig
from youyou.domain.context import CompactionRecord
from youyou.domain.events import ContextUsage
from youyou.domain.session import UNTITLED_SESSION
from youyou.ports.memory_storage import MemoryStorage
from youyou.workbench.accounts import memory_namespace
from youyou.workbench.errors import Localized, agent_call, check_user_limit
from youyou.workbench.metrics import Metrics
from youyou.workbench.open_sessions import OpenSessions
from youyou.workbench.projection import store_projection
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore


class SessionCommands:
    def __init__(
        self,
        *,
        agent: Agent,
        sessions: OpenSessions,
        store: WorkbenchStore,
        metrics: Metrics,
        limits: ServerSettings,
        default_mode: MemoryMode,
        memories: MemoryStorage | None,
        require_accepting: Callable[[], None],
    ) -> None:
        self._agent = agent
        self._sessions = sessions
        self._store = store
        self._metrics = metrics
        self._limits = limits
        self._default_mode = default_mode
        self._memories = memories
        self._require_accepting = require_accepting

    async def create(
        self, owner_id: str, title: str | None, model_id: str | None
    ) -> ChatSessionRecord:
        """The session's ledger is written and the session closed again at once: it is opened
        on its first send, so creating sessions takes no open-session slot."""
        self._require_accepting()
        stored = await self._store.count_chat_sessions(owner_id)
        check_user_limit(
            stored,
            self._limits.user_stored_sessions,
            Localized("sessions", "会话"),
            "user_stored_sessions",
        )
        config = SessionConfig(model_id=model_id, memory_namespace=memory_namespace(owner_id))
        handle = await self._sessions.opening(lambda: self._agent.new_session(config))
        try:
            if self._default_mode is not MemoryMode.EVERY_N_TURNS:
                await agent_call(handle.set_memory_mode(self._default_mode))
            usage = handle.usage()
        finally:
            await handle.close(extract_memories=False)
        now = datetime.now(UTC)
        record = ChatSessionRecord(
            id=handle.session_id,
            owner_id=owner_id,
            ledger_session_id=handle.session_id,
            title=title or UNTITLED_SESSION,
            model_id=handle.config.pinned.model_id,
            created_at=now,
            updated_at=now,
            message_count=0,
            memory_mode=memory_mode_name(handle.memory_mode),
            summary=None,
            compacted_message_count=0,
            context_tokens=usage.tokens,
            context_window_tokens=usage.window,
            last_compacted_at=None,
        )
        await self._store.create_chat_session(record)
        return record

    async def compact(self, chat: ChatSessionRecord) -> ChatSessionRecord:
        handle = await self._handle(chat)
        before = handle.latest_compaction
        usage = await agent_call(handle.compact(), handle.model.model_id)
        return await self._after_compaction(chat, handle, before, usage)

    async def set_mode(self, chat: ChatSessionRecord, mode_name: str) -> ChatSessionRecord:
        handle = await self._handle(chat)
        before = handle.latest_compaction
        usage = await agent_call(
            handle.set_memory_mode(MEMORY_MODE_NAMES[mode_name]), handle.model.model_id
        )
        return await self._after_compaction(chat, handle, before, usage)

    async def clear(self, chat: ChatSessionRecord) -> ChatSessionRecord:
        """The ledger is append-only, so clearing starts a new ledger for the same chat. What
        the user clears is not mined for long-term memories first."""
        old = await self._delete_ledger(chat)
        await self._store.forget_turn_records(chat.id)
        config = SessionConfig(
            model_id=old.config.pinned.model_id,
            memory_namespace=old.config.pinned.memory_namespace,
        )
        handle = await self._sessions.opening(lambda: self._agent.new_session(config))
        if old.memory_mode is not MemoryMode.EVERY_N_TURNS:
            await handle.set_memory_mode(old.memory_mode)
        self._sessions.add(handle, chat.owner_id)
        fresh = replace(chat, ledger_session_id=handle.session_id, last_compacted_at=None)
        return await store_projection(self._store, fresh, handle, None, compacted=False)

    async def delete(self, chat: ChatSessionRecord) -> None:
        """A deleted session is not mined for long-term memories, and the memories already
        extracted from it go with it."""
        await self._delete_ledger(chat)
        await self._forget_memories_of(chat)
        await self._store.delete_chat_session(chat.id)

    async def _handle(self, chat: ChatSessionRecord) -> SessionHandle:
        self._require_accepting()
        return await self._sessions.handle(chat.ledger_session_id, chat.owner_id)

    async def _after_compaction(
        self,
        chat: ChatSessionRecord,
        handle: SessionHandle,
        before: CompactionRecord | None,
        usage: ContextUsage,
    ) -> ChatSessionRecord:
        compacted = handle.latest_compaction is not before
        if compacted:
            self._metrics.compactions.labels(trigger="manual").inc()
        return await store_projection(self._store, chat, handle, usage, compacted=compacted)

    async def _delete_ledger(self, chat: ChatSessionRecord) -> SessionHandle:
        """The session's ledger deleted by its writer, its handle closed without extracting
        memories."""
        handle = await self._handle(chat)
        await agent_call(handle.delete())
        self._sessions.forget(chat.ledger_session_id)
        return handle

    async def _forget_memories_of(self, chat: ChatSessionRecord) -> None:
        memories = self._memories
        if memories is None:
            return
        namespace = memory_namespace(chat.owner_id)
        for memory in await agent_call(memories.list_all(namespace)):
            if memory.source_session_id == chat.ledger_session_id:
                await agent_call(memories.delete(namespace, memory.id))
