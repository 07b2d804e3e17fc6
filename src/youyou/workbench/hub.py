"""Sessions of many users in one process, and of one service across processes.

Sessions are opened on demand and closed when idle (``open_sessions.py``). Whatever writes
to a session's ledger — a turn, a compaction, a memory-mode switch, clearing or deleting —
holds the session's lease, taken by the kernel (the agent is built with this process's
session leases), so two processes never write one ledger: a second writer gets
``TURN_BUSY``. A cached session whose ledger moved on (another process wrote) reloads itself
before it writes. A cancel reaches a turn on another process through the lease's cancel flag,
a tool-approval decision through ``wb_tool_approvals`` (``approvals.py``). A turn whose
process died while a call waited for a decision is taken over by the process that gets the
decision (or, once every call is decided or expired, by the first process that looks:
``RESUME_POLL_S``), and goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from youyou.adapters.knowledge import KnowledgeBase
from youyou.adapters.mcp import McpToolbox
from youyou.adapters.settings import (
    MEMORY_MODE_NAMES,
    ModelPrice,
    ServerSettings,
    memory_mode_name,
)
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.api.agent import Agent
from youyou.api.running_turn import RunningTurn
from youyou.api.session import SessionHandle
from youyou.application.turn_engine import TurnOptions
from youyou.domain.config import MemoryMode, SessionConfig
from youyou.domain.content import ContentBlock
from youyou.domain.context import CompactionRecord
from youyou.domain.errors import AgentError
from youyou.domain.events import (
    ContextCompacted,
    ContextUsage,
    ErrorEvent,
    ModelWaiting,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallEnd,
    TurnComplete,
    TurnStarted,
)
from youyou.domain.model import ProviderCapability
from youyou.domain.session import UNTITLED_SESSION
from youyou.domain.turn import OutcomeStatus
from youyou.ports.memory_storage import MemoryStorage
from youyou.ports.tool import ToolHandler
from youyou.workbench.access import AccessLists, Member
from youyou.workbench.accounts import memory_namespace
from youyou.workbench.approvals import APPLY_POLL_S, ApprovalDesk, TurnApprovals
from youyou.workbench.assembly import turn_options
from youyou.workbench.errors import (
    ApiCode,
    ApiError,
    Language,
    Localized,
    agent_call,
    check_user_limit,
)
from youyou.workbench.message_index import TurnRecorder
from youyou.workbench.metrics import Metrics
from youyou.workbench.open_sessions import OpenSessions
from youyou.workbench.projection import memory_out, project_chat
from youyou.workbench.relay import RelayedTurn, copy_frames
from youyou.workbench.schemas import ApprovalOut, PendingApprovalOut
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore
from youyou.workbench.store.approvals import Decision
from youyou.workbench.streams import Frame, TurnStream, frame_data, waiting_note
from youyou.workbench.usage import UsageBook
from youyou.workbench.user_streams import UserStreams

logger = logging.getLogger(__name__)

# How often the leases of running turns are renewed, which is when a cancel asked on another
# process is seen, and how often the requests to copy their frames for another process are read.
LEASE_POLL_S = 0.5
# How often a process looks for turns left waiting by a process that died, to go on with them.
RESUME_POLL_S = 5.0


@dataclass(slots=True)
class _Running:
    owner_id: str
    stream: TurnStream
    turn: RunningTurn
    handle: SessionHandle
    approvals: TurnApprovals
    task: asyncio.Task[None] | None = None
    copying: bool = False  # its frames go to the database for a client of another process
    parked: bool = False  # stopped by a shutdown while a call waits for a person


class SessionHub:
    def __init__(
        self,
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
        self._usage = UsageBook(store, metrics, prices or {})
        self._access = access or AccessLists()
        self._memories = memories
        self._knowledge = knowledge
        self._mcp = mcp or McpToolbox(())
        self._store = store
        self._default_mode = default_mode
        self._metrics = metrics
        self.recorder = TurnRecorder(store, storage)
        self._sessions = OpenSessions(
            agent,
            idle_s=settings.session_idle_s,
            close_timeout_s=close_timeout_s,
            user_open_sessions=settings.user_open_sessions,
        )
        self._limits = settings
        self.streams = UserStreams(settings.user_streams)
        self._turns: dict[str, _Running] = {}  # by chat session id
        self._accepting = True
        self._background: list[asyncio.Task[None]] = []
        self._copying: set[asyncio.Task[None]] = set()  # frames copied for other processes
        self._approvals = ApprovalDesk(store, metrics)
        self._decided = asyncio.Event()  # a decision was claimed for a turn of this process
        self._parking: list[asyncio.Task[bool]] = []  # closing sessions whose call waits

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self._sessions.reap_idle()),
            loop.create_task(self._serve_followers()),
            loop.create_task(self._apply_decisions()),
            loop.create_task(self._resume_stopped_turns()),
            loop.create_task(self.recorder.index_backlog()),
        ]

    def begin_shutdown(self) -> None:
        """Refuse new turns and cancel running ones; their partial answers are stored. A turn
        whose call waits for a person is not cancelled: its session is closed, which ends the
        turn (and its stream, so the connection does not hold the stop up) and leaves the call
        waiting in the ledger for the process that gets its decision. Runs on the loop."""
        self._accepting = False
        for running in list(self._turns.values()):
            if running.parked:
                continue
            if running.approvals.waiting:
                running.parked = True
                closing = running.handle.close(extract_memories=False)
                self._parking.append(asyncio.get_running_loop().create_task(closing))
            else:
                running.turn.cancel()

    async def shutdown(self) -> None:
        """Cancel the turns, then close every open session, extracting long-term memories
        for at most ``close_timeout_s`` (all sessions together): a stop signal must not wait
        on a slow or hung model."""
        self.begin_shutdown()
        tasks = [running.task for running in self._turns.values() if running.task is not None]
        await asyncio.gather(*tasks, *self._parking, return_exceptions=True)
        await asyncio.gather(*self._copying, return_exceptions=True)
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

    def is_running(self, chat_id: str) -> bool:
        return chat_id in self._turns

    # -- sessions -----------------------------------------------------------------------------

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

    async def send(
        self,
        chat: ChatSessionRecord,
        blocks: Sequence[ContentBlock],
        language: Language = "en",
    ) -> TurnStream:
        """Refusals (busy, bad input, unknown /skill) are raised before anything is stored;
        ``error`` frames of the turn are in ``language``; the owner's account and groups
        decide which MCP servers' tools are offered and which knowledge sources
        ``search_knowledge`` reads."""
        self._require_accepting()
        self._check_running_turns(chat.owner_id)
        handle = await self._sessions.handle(chat.ledger_session_id, chat.owner_id)
        if handle.pending_approvals() or handle.can_continue_turn:
            # a turn stopped by a process that died waits for a decision or goes on
            raise ApiError(ApiCode.TURN_BUSY, "a tool call waits for approval")
        options = await self._options(chat.owner_id, handle, language)
        turn = await agent_call(handle.send_message(blocks, options=options), handle.model.model_id)
        return self._launch(chat, handle, turn, language)

    def _launch(
        self, chat: ChatSessionRecord, handle: SessionHandle, turn: RunningTurn, language: Language
    ) -> TurnStream:
        """Stream a turn (it holds the session's lease until it ends)."""
        stream = TurnStream(chat.id, turn.turn_id)
        running = _Running(chat.owner_id, stream, turn, handle, TurnApprovals())
        running.approvals.waiting.update(p.call_id for p in handle.pending_approvals())
        self._turns[chat.id] = running
        running.task = asyncio.get_running_loop().create_task(self._pump(chat, running, language))
        self._metrics.active_streams.inc()
        return stream

    async def _options(
        self, owner_id: str, handle: SessionHandle, language: Language
    ) -> TurnOptions:
        tool_use = ProviderCapability.TOOL_USE in handle.model.capabilities
        return await turn_options(
            self._store,
            owner_id,
            tool_use=tool_use,
            tools=await self._tools(owner_id) if tool_use else (),
            language=language,
        )

    async def _tools(self, owner_id: str) -> tuple[ToolHandler, ...]:
        """The MCP tools the owner may use; ``search_knowledge`` over the shared sources they
        may read and their own uploads (their groups are read fresh on every send)."""
        member = Member(owner_id, await self._store.group_names_of(owner_id))
        knowledge = self._knowledge
        searching = (
            (knowledge.tool(owner_id, self._access.knowledge(member)),)
            if knowledge is not None
            else ()
        )
        return (*await self._mcp.tools(self._access.mcp_servers(member)), *searching)

    def _check_running_turns(self, owner_id: str) -> None:
        running = sum(1 for turn in self._turns.values() if turn.owner_id == owner_id)
        limit = self._limits.user_running_turns
        check_user_limit(
            running, limit, Localized("turns running", "正在运行的回合"), "user_running_turns"
        )

    def stream_of(self, chat_id: str) -> TurnStream | None:
        running = self._turns.get(chat_id)
        return running.stream if running else None

    def relayed(self, chat: ChatSessionRecord) -> RelayedTurn | None:
        """The turn another process runs, followed through the frames that process copies
        once asked (within ``LEASE_POLL_S``); None where no other process can run one."""
        if not self._store.is_postgresql:
            return None

        async def held_elsewhere() -> bool:
            return await self.running_elsewhere(chat) is not None

        return RelayedTurn(self._store, chat.id, held_elsewhere)

    async def running_elsewhere(self, chat: ChatSessionRecord) -> str | None:
        """The other process running the session's turn; not one that has ended."""
        return await self._agent.writer_elsewhere(chat.ledger_session_id)

    # -- tool approvals -------------------------------------------------------------------------

    async def pending_approvals(
        self, chat_ids: Sequence[str]
    ) -> dict[str, list[PendingApprovalOut]]:
        """What waits for a decision in these sessions (any process's turns)."""
        return await self._approvals.pending(chat_ids)

    async def decide(
        self, chat: ChatSessionRecord, call_id: str, decision: Decision, language: Language
    ) -> ApprovalOut:
        """The first decision of a waiting call, once the kernel running the turn has it: on
        this process, on another one (which applies it within ``APPLY_POLL_S``), or on none
        (its process died: this one takes the turn over and goes on with it)."""
        await self._approvals.claim(chat.id, call_id, decision)
        if chat.id in self._turns:
            self._decided.set()
        elif await self.running_elsewhere(chat) is None:
            await self._take_over(chat, language)
        return await self._approvals.confirmed(chat.id, call_id, decision)

    async def _apply_decisions(self) -> None:
        """Hand the decisions claimed for this process's waiting turns to their kernel: at
        once for a claim made here, within ``APPLY_POLL_S`` for one made elsewhere."""
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._decided.wait(), APPLY_POLL_S)
            self._decided.clear()
            waiting = {
                chat_id: (running.handle, running.approvals)
                for chat_id, running in self._turns.items()
                if running.approvals.waiting
            }
            await self._approvals.apply_claimed(waiting)

    async def _take_over(self, chat: ChatSessionRecord, language: Language = "zh-CN") -> None:
        """Go on with a turn whose process stopped while calls waited for a decision: the
        decisions claimed since go to the ledger, and once every call is decided (or has
        expired) the turn continues here. Nothing when another process or task has it."""
        if chat.id in self._turns:
            return  # it runs here: the decision reaches it
        handle = await self._sessions.handle(chat.ledger_session_id, chat.owner_id)
        await self._approvals.record_claims(chat.id, handle)
        if not handle.can_continue_turn:
            if not handle.pending_approvals():
                await self._store.settle_approvals(chat.id)  # nothing left to go on
            return
        options = await self._options(chat.owner_id, handle, language)
        try:
            turn = await agent_call(handle.continue_turn(options=options))
        except ApiError as error:
            if error.code is ApiCode.TURN_BUSY:
                return  # another task or process has it: whatever holds it ends the wait
            raise
        logger.info("session %s: going on with its stopped turn", chat.id)
        self._launch(chat, handle, turn, language)

    async def _resume_stopped_turns(self) -> None:
        """At start and every ``RESUME_POLL_S``: the turns left waiting by a process that died
        go on here once they can (decided, or expired: the timeout's denial is written)."""
        while True:
            try:
                stopped = await self._store.unsettled_sessions()
            except AgentError:
                logger.warning("looking for stopped turns failed", exc_info=True)
                stopped = set()
            for chat_id in stopped - set(self._turns):
                try:
                    chat = await self._store.chat_session(chat_id)
                    if chat is not None and await self.running_elsewhere(chat) is None:
                        await self._take_over(chat)
                except (AgentError, ApiError):
                    logger.warning("going on with the turn of %s failed", chat_id, exc_info=True)
            await asyncio.sleep(RESUME_POLL_S)

    async def cancel(self, chat: ChatSessionRecord) -> None:
        """Idempotent; reaches a turn running on another process through the lease."""
        running = self._turns.get(chat.id)
        if running is not None:
            running.turn.cancel()
            return
        await self._agent.request_cancel(chat.ledger_session_id)

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
        return await self._project(chat, handle, usage, compacted=compacted)

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
        return await self._project(fresh, handle, None, compacted=False)

    async def let_go_of(self, owner_id: str) -> None:
        """For an account being disabled or deleted: its running turns here are cancelled
        (their partial answers are stored) and its idle sessions closed without extracting
        memories."""
        for running in self._turns.values():
            if running.owner_id == owner_id:
                running.turn.cancel()
        await self._sessions.close_idle_of(owner_id)

    async def delete(self, chat: ChatSessionRecord) -> None:
        """A deleted session is not mined for long-term memories, and the memories already
        extracted from it go with it."""
        await self._delete_ledger(chat)
        await self._forget_memories_of(chat)
        await self._store.delete_chat_session(chat.id)

    # -- internals ----------------------------------------------------------------------------

    def _require_accepting(self) -> None:
        if not self._accepting:
            raise ApiError(ApiCode.SERVER_SHUTTING_DOWN)

    async def _handle(self, chat: ChatSessionRecord) -> SessionHandle:
        """The session for a request that writes it (the kernel takes its lease)."""
        self._require_accepting()
        return await self._sessions.handle(chat.ledger_session_id, chat.owner_id)

    async def _forget_memories_of(self, chat: ChatSessionRecord) -> None:
        memories = self._memories
        if memories is None:
            return
        namespace = memory_namespace(chat.owner_id)
        for memory in await agent_call(memories.list_all(namespace)):
            if memory.source_session_id == chat.ledger_session_id:
                await agent_call(memories.delete(namespace, memory.id))

    async def _delete_ledger(self, chat: ChatSessionRecord) -> SessionHandle:
        """The session's ledger deleted (by its writer: TURN_BUSY while busy), its handle
        closed without extracting memories."""
        handle = await self._handle(chat)
        await agent_call(handle.delete())
        self._sessions.forget(chat.ledger_session_id)
        return handle

    async def _pump(self, chat: ChatSessionRecord, running: _Running, language: Language) -> None:
        handle, turn, stream = running.handle, running.turn, running.stream
        started = time.perf_counter()
        first = True
        compacted = False
        turn_seq = 0  # the ledger seq of the turn's user message, once it started
        # The turn's last frame waits until the session is free again, so a client that
        # sends its next message the moment it reads the end of a turn is not refused.
        held: list[Frame] = []
        durations: dict[str, int] = {}  # of the turn's tool calls, stored at its end
        try:
            async for event in turn.events:
                if isinstance(event.payload, ModelWaiting):
                    stream.note(waiting_note(event.payload))
                    continue
                if isinstance(event.payload, ToolCallEnd):
                    durations[event.payload.call_id] = event.payload.duration_ms
                data = frame_data(event, language, handle.model.model_id)
                if data is None:
                    continue
                payload = event.payload
                if isinstance(payload, ToolApprovalRequested | ToolApprovalDecided | ToolCallEnd):
                    await self._observe(chat, running, payload)
                if first:
                    self._metrics.time_to_first_event.observe(time.perf_counter() - started)
                    first = False
                if isinstance(payload, ContextCompacted):
                    compacted = True
                    self._metrics.compactions.labels(trigger="auto").inc()
                if isinstance(payload, ErrorEvent) and payload.code == "PROVIDER_ERROR":
                    self._metrics.provider_errors.inc()
                if isinstance(payload, TurnStarted):
                    turn_seq = payload.user_message_seq
                if isinstance(payload, TurnComplete):
                    cost = await self._usage.record(
                        chat, handle.model.model_id, turn_seq, payload.usage
                    )
                    data["usage"]["cost"] = cost
                    chat = await self._project_after_turn(chat, handle, payload.context, compacted)
                    data["memory"] = memory_out(chat).model_dump(mode="json", by_alias=True)
                    self._metrics.provider_latency.observe(time.perf_counter() - started)
                elif payload.type in ("turn_cancelled", "error"):
                    chat = await self._project_after_turn(chat, handle, None, compacted)
                if payload.type in ("turn_complete", "turn_cancelled", "error"):
                    await self.recorder.record(chat, turn_seq, durations)
                frame = Frame(event.sequence, payload.type, data)
                if held or payload.type in ("turn_complete", "turn_cancelled", "error"):
                    held.append(frame)
                else:
                    stream.publish(frame)
            outcome = await turn.join()
            self._metrics.turns.labels(outcome=outcome.status.value).inc()
            if outcome.status is OutcomeStatus.PANICKED:
                logger.error("turn %s panicked: %s", turn.turn_id, outcome.error)
        except Exception:
            logger.exception("streaming turn %s failed", turn.turn_id)
        finally:
            self._turns.pop(chat.id, None)
            if not running.parked:
                await self._approvals.turn_ended(chat.id, running.approvals)
            self._metrics.active_streams.dec()
            self._sessions.touch(chat.ledger_session_id)
            for frame in held:
                stream.publish(frame)
            stream.close()

    async def _observe(
        self,
        chat: ChatSessionRecord,
        running: _Running,
        payload: ToolApprovalRequested | ToolApprovalDecided | ToolCallEnd,
    ) -> None:
        """The approvals index follows the turn; the ledger has it all if this fails."""
        try:
            await self._approvals.observe(chat.id, running.approvals, payload)
        except AgentError:
            logger.warning("indexing an approval of %s failed", chat.id, exc_info=True)

    async def _serve_followers(self) -> None:
        """With several processes (PostgreSQL): every ``LEASE_POLL_S`` while turns run here,
        the turns a client asked to follow through another process start copying frames."""
        if not self._store.is_postgresql:
            return
        while True:
            await asyncio.sleep(LEASE_POLL_S)
            if self._turns:
                await self._copy_followed(list(self._turns.values()))

    async def _copy_followed(self, running: list[_Running]) -> None:
        """Copy the frames of the turns a client follows through another process (from their
        first frame: the stream keeps them all), asked since the last renewal."""
        waiting = {turn.stream.chat_session_id: turn for turn in running if not turn.copying}
        try:
            followed = await self._store.take_turn_frame_requests(waiting)
        except AgentError:
            logger.warning("reading the requests for turn frames failed", exc_info=True)
            return
        for chat_id in followed:
            turn = waiting[chat_id]
            turn.copying = True
            copying = asyncio.get_running_loop().create_task(copy_frames(self._store, turn.stream))
            self._copying.add(copying)
            copying.add_done_callback(self._copying.discard)

    async def _project(
        self,
        chat: ChatSessionRecord,
        handle: SessionHandle,
        usage: ContextUsage | None,
        *,
        compacted: bool,
    ) -> ChatSessionRecord:
        """Store what lists and the context bar show, so reading a session needs no resume."""
        projected = project_chat(chat, handle, usage, compacted=compacted)
        await self._save(projected)
        return projected

    async def _project_after_turn(
        self,
        chat: ChatSessionRecord,
        handle: SessionHandle,
        usage: ContextUsage | None,
        compacted: bool,
    ) -> ChatSessionRecord:
        """The turn is in the ledger whatever happens here: a projection that cannot be stored
        is logged, and the client still gets the turn's last frame."""
        try:
            return await self._project(chat, handle, usage, compacted=compacted)
        except (AgentError, ApiError):
            logger.warning("storing the projection of session %s failed", chat.id, exc_info=True)
            return chat

    async def _save(self, chat: ChatSessionRecord) -> None:
        await self._store.update_chat_session(chat.id, chat.projection)
