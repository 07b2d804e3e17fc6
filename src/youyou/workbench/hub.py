"""Sessions of many users in one process, and of one service across processes: the face the
routes see, over parts with one job each.

- ``open_sessions.py``: the cache of open sessions (resumed on demand, closed when idle);
- ``turn_runner.py``: send, stream, cancel and follow turns;
- ``session_commands.py``: create, compact, memory mode, clear, delete;
- ``approval_flow.py``: decisions on tool calls, and taking over a turn whose process died.

Whatever writes a session's ledger holds the session's lease, taken by the kernel (the agent
is built with this process's session leases), so two processes never write one ledger: a
second writer gets ``TURN_BUSY``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from youyou.adapters.knowledge import KnowledgeBase
from youyou.adapters.mcp import McpToolbox
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.api.agent import Agent
from youyou.config import ModelPrice, ServerSettings
from youyou.domain.config import MemoryMode
from youyou.domain.content import ContentBlock
from youyou.ports.memory_storage import MemoryStorage
from youyou.workbench.access import AccessLists
from youyou.workbench.approval_flow import ApprovalFlow
from youyou.workbench.approvals import ApprovalDesk
from youyou.workbench.errors import Language
from youyou.workbench.message_index import TurnRecorder
from youyou.workbench.metrics import Metrics
from youyou.workbench.open_sessions import OpenSessions
from youyou.workbench.relay import RelayedTurn
from youyou.workbench.schemas import ApprovalOut, PendingApprovalOut
from youyou.workbench.session_commands import SessionCommands
from youyou.workbench.store import ChatSessionRecord, OwnerAssets, WorkbenchStore
from youyou.workbench.store.approvals import Decision
from youyou.workbench.streams import TurnStream
from youyou.workbench.turn_book import Books
from youyou.workbench.turn_runner import TurnRunner
from youyou.workbench.usage import UsageBook
from youyou.workbench.user_streams import UserStreams


class SessionHub:
    def __init__(
        self,
        *,
        agent: Agent,
        storage: SqlSessionStorage,
        store: WorkbenchStore,
        settings: ServerSettings,
        default_mode: MemoryMode,
        metrics: Metrics,
        mcp: McpToolbox | None = None,
        close_timeout_s: float = 10.0,
        knowledge: KnowledgeBase | None = None,
        memories: MemoryStorage | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        access: AccessLists | None = None,
    ) -> None:
        self._agent = agent
        self.recorder = TurnRecorder(store, storage)
        self.streams = UserStreams(settings.user_streams)
        self._sessions = OpenSessions(
            agent,
            idle_s=settings.session_idle_s,
            close_timeout_s=close_timeout_s,
            user_open_sessions=settings.user_open_sessions,
        )
        desk = ApprovalDesk(store, metrics)
        books = Books(
            store=store,
            metrics=metrics,
            usage=UsageBook(metrics, prices or {}),
            recorder=self.recorder,
        )
        self._runner = TurnRunner(
            agent=agent,
            sessions=self._sessions,
            books=books,
            desk=desk,
            limits=settings,
            mcp=mcp or McpToolbox(()),
            knowledge=knowledge,
            access=access or AccessLists(),
        )
        self._commands = SessionCommands(
            agent=agent,
            sessions=self._sessions,
            store=store,
            metrics=metrics,
            limits=settings,
            default_mode=default_mode,
            memories=memories,
            require_accepting=self._runner.require_accepting,
        )
        self._approvals = ApprovalFlow(
            desk=desk, runner=self._runner, sessions=self._sessions, store=store
        )
        self._background: list[asyncio.Task[None]] = []

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self._sessions.reap_idle()),
            loop.create_task(self._runner.serve_followers()),
            loop.create_task(self._approvals.apply_decisions()),
            loop.create_task(self._approvals.resume_stopped_turns()),
            loop.create_task(self.recorder.index_backlog()),
        ]

    def begin_shutdown(self) -> None:
        """Refuse new turns and stop the running ones (see ``TurnRunner.begin_shutdown``)."""
        self._runner.begin_shutdown()

    async def shutdown(self) -> None:
        """Stop the turns, then close every open session, extracting long-term memories for at
        most ``close_timeout_s`` (all sessions together): a stop signal must not wait on a
        slow or hung model."""
        await self._runner.wind_down()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self._sessions.close_all()

    @property
    def holder(self) -> str:
        """This process as the holder of session leases."""
        holder = self._agent.writer
        assert holder is not None  # the workbench's agent always has session leases
        return holder

    @property
    def open_sessions(self) -> int:
        return len(self._sessions)

    # -- turns ----------------------------------------------------------------------------------

    def is_running(self, chat_id: str) -> bool:
        return chat_id in self._runner.turns

    async def send(
        self,
        chat: ChatSessionRecord,
        blocks: Sequence[ContentBlock],
        language: Language = "en",
        assets: OwnerAssets | None = None,
    ) -> TurnStream:
        return await self._runner.send(chat, blocks, language, assets)

    def stream_of(self, chat_id: str) -> TurnStream | None:
        return self._runner.stream_of(chat_id)

    def relayed(self, chat: ChatSessionRecord) -> RelayedTurn | None:
        return self._runner.relayed(chat)

    async def running_elsewhere(self, chat: ChatSessionRecord) -> str | None:
        return await self._runner.running_elsewhere(chat)

    async def cancel(self, chat: ChatSessionRecord) -> None:
        await self._runner.cancel(chat)

    # -- tool approvals -------------------------------------------------------------------------

    async def pending_approvals(
        self, chat_ids: Sequence[str]
    ) -> dict[str, list[PendingApprovalOut]]:
        return await self._approvals.pending(chat_ids)

    async def decide(
        self, chat: ChatSessionRecord, call_id: str, decision: Decision, language: Language
    ) -> ApprovalOut:
        return await self._approvals.decide(chat, call_id, decision, language)

    # -- session commands -----------------------------------------------------------------------

    async def create(
        self, owner_id: str, title: str | None, model_id: str | None
    ) -> ChatSessionRecord:
        return await self._commands.create(owner_id, title, model_id)

    async def compact(self, chat: ChatSessionRecord) -> ChatSessionRecord:
        return await self._commands.compact(chat)

    async def set_mode(self, chat: ChatSessionRecord, mode_name: str) -> ChatSessionRecord:
        return await self._commands.set_mode(chat, mode_name)

    async def clear(self, chat: ChatSessionRecord) -> ChatSessionRecord:
        return await self._commands.clear(chat)

    async def delete(self, chat: ChatSessionRecord) -> None:
        await self._commands.delete(chat)

    async def let_go_of(self, owner_id: str) -> None:
        """For an account being disabled or deleted: its running turns here are cancelled
        (their partial answers are stored) and its idle sessions closed without extracting
        memories."""
        self._runner.cancel_turns_of(owner_id)
        await self._sessions.close_idle_of(owner_id)
