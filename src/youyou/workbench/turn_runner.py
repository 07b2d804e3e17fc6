"""Turns: sending a message, streaming the turn, cancelling it, following it from another
process.

A turn holds its session's lease (the kernel's) until its answer is stored, which gives it
back in the same transaction; its last frame is published only once the turn has ended, so a
client that sends its next message the moment it reads the end of a turn is not refused. A
cancel reaches a turn on another process through the lease's cancel flag; a client of another
process follows a turn here through the frames copied for it (``relay.py``), asked for within
``LEASE_POLL_S``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from youyou.adapters.knowledge import KnowledgeBase
from youyou.adapters.mcp import McpToolbox
from youyou.api.agent import Agent
from youyou.api.running_turn import RunningTurn
from youyou.api.session import SessionHandle
from youyou.config import ServerSettings
from youyou.domain.content import ContentBlock
from youyou.domain.errors import AgentError
from youyou.domain.events import (
    ModelWaiting,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallEnd,
)
from youyou.domain.model import ProviderCapability
from youyou.domain.turn import OutcomeStatus
from youyou.ports.tool import ToolHandler
from youyou.ports.turn import TurnOptions
from youyou.workbench.access import AccessLists, Member
from youyou.workbench.approvals import ApprovalDesk, TurnApprovals
from youyou.workbench.assembly import read_configuration, turn_options
from youyou.workbench.errors import (
    ApiCode,
    ApiError,
    Language,
    Localized,
    agent_call,
    check_user_limit,
)
from youyou.workbench.open_sessions import OpenSessions
from youyou.workbench.projection import store_projection
from youyou.workbench.relay import RelayedTurn, copy_frames
from youyou.workbench.store import ChatSessionRecord, OwnerAssets
from youyou.workbench.streams import Frame, TurnStream, frame_data, waiting_note
from youyou.workbench.turn_book import Books, TurnBook
from youyou.workbench.turn_events import TURN_END_EVENTS

logger = logging.getLogger(__name__)

# How often the leases of running turns are renewed, which is when a cancel asked on another
# process is seen, and how often the requests to copy their frames for another process are read.
LEASE_POLL_S = 0.5


@dataclass(slots=True)
class Running:
    owner_id: str
    stream: TurnStream
    turn: RunningTurn
    handle: SessionHandle
    approvals: TurnApprovals
    task: asyncio.Task[None] | None = None
    copying: bool = False  # its frames go to the database for a client of another process
    parked: bool = False  # stopped by a shutdown while a call waits for a person


class TurnRunner:
    def __init__(
        self,
        *,
        agent: Agent,
        sessions: OpenSessions,
        books: Books,
        desk: ApprovalDesk,
        limits: ServerSettings,
        mcp: McpToolbox,
        knowledge: KnowledgeBase | None,
        access: AccessLists,
    ) -> None:
        self._agent = agent
        self._sessions = sessions
        self._books = books
        self._store = books.store
        self._desk = desk
        self._limits = limits
        self._mcp = mcp
        self._knowledge = knowledge
        self._access = access
        self.turns: dict[str, Running] = {}  # by chat session id
        self._accepting = True
        self._copying: set[asyncio.Task[None]] = set()  # frames copied for other processes
        self._parking: list[asyncio.Task[bool]] = []  # closing sessions whose call waits

    def require_accepting(self) -> None:
        if not self._accepting:
            raise ApiError(ApiCode.SERVER_SHUTTING_DOWN)

    async def send(
        self,
        chat: ChatSessionRecord,
        blocks: Sequence[ContentBlock],
        language: Language,
        assets: OwnerAssets | None = None,
    ) -> TurnStream:
        """Refusals (busy, bad input, unknown /skill) are raised before anything is stored;
        ``error`` frames of the turn are in ``language``; the owner's account and groups
        decide which MCP servers' tools are offered and which knowledge sources
        ``search_knowledge`` reads. ``assets``: the owner's, when the caller read them for
        this send (else they are read here)."""
        self.require_accepting()
        self._check_running_turns(chat.owner_id)
        handle = await self._sessions.handle(chat.ledger_session_id, chat.owner_id)
        if handle.pending_approvals() or handle.can_continue_turn:
            # a turn stopped by a process that died waits for a decision or goes on
            raise ApiError(ApiCode.TURN_BUSY, "a tool call waits for approval")
        options = await self.options(chat.owner_id, handle, language, assets)
        turn = await agent_call(handle.send_message(blocks, options=options), handle.model.model_id)
        return self.launch(chat, handle, turn, language)

    def launch(
        self, chat: ChatSessionRecord, handle: SessionHandle, turn: RunningTurn, language: Language
    ) -> TurnStream:
        """Stream a turn (it holds the session's lease until it ends)."""
        stream = TurnStream(chat.id, turn.turn_id)
        running = Running(chat.owner_id, stream, turn, handle, TurnApprovals())
        running.approvals.waiting.update(p.call_id for p in handle.pending_approvals())
        self.turns[chat.id] = running
        running.task = asyncio.get_running_loop().create_task(self._pump(chat, running, language))
        self._books.metrics.active_streams.inc()
        return stream

    async def options(
        self,
        owner_id: str,
        handle: SessionHandle,
        language: Language,
        assets: OwnerAssets | None = None,
    ) -> TurnOptions:
        """Read fresh on every send, in one transaction: the owner's prompt, skills and
        groups (a change made through another process counts from the next send); ``assets``
        when the caller read them for this send."""
        config = await read_configuration(self._store, owner_id, assets)
        tool_use = ProviderCapability.TOOL_USE in handle.model.capabilities
        return turn_options(
            config,
            tool_use=tool_use,
            tools=await self._tools(owner_id, config.groups) if tool_use else (),
            language=language,
        )

    async def _tools(self, owner_id: str, groups: frozenset[str]) -> tuple[ToolHandler, ...]:
        """The MCP tools the owner may use; ``search_knowledge`` over the shared sources they
        may read and their own uploads."""
        member = Member(owner_id, groups)
        knowledge = self._knowledge
        searching = (
            (knowledge.tool(owner_id, self._access.knowledge(member)),)
            if knowledge is not None
            else ()
        )
        return (*await self._mcp.tools(self._access.mcp_servers(member)), *searching)

    def _check_running_turns(self, owner_id: str) -> None:
        running = sum(1 for turn in self.turns.values() if turn.owner_id == owner_id)
        limit = self._limits.user_running_turns
        check_user_limit(
            running, limit, Localized("turns running", "正在运行的回合"), "user_running_turns"
        )

    def stream_of(self, chat_id: str) -> TurnStream | None:
        running = self.turns.get(chat_id)
        return running.stream if running else None

    async def cancel(self, chat: ChatSessionRecord) -> None:
        """Idempotent; reaches a turn running on another process through the lease, and ends
        here a turn no process runs any more while its calls wait for a decision."""
        running = self.turns.get(chat.id)
        if running is not None:
            running.turn.cancel()
            return
        if await self._store.unsettled_sessions([chat.id]) and await self._cancel_stopped(chat):
            return
        await self._agent.request_cancel(chat.ledger_session_id)

    async def _cancel_stopped(self, chat: ChatSessionRecord) -> bool:
        """Cancel the turn a stopped process left waiting for decisions: its calls get the
        cancelled result in the ledger and nothing waits in the index. False when another
        process or task of this one writes the session (the lease's cancel flag reaches it)."""
        try:
            handle = await self._sessions.handle(chat.ledger_session_id, chat.owner_id)
            await agent_call(handle.cancel_stopped_turn())
        except ApiError as err:
            if err.code is not ApiCode.TURN_BUSY:
                raise
            return False
        await self._store.settle_approvals(chat.id)
        chat = await store_projection(self._store, chat, handle, None, compacted=False)
        await self._books.recorder.record(chat, 0, {}, handle.events)
        return True

    def cancel_turns_of(self, owner_id: str) -> None:
        """Their partial answers are stored."""
        for running in self.turns.values():
            if running.owner_id == owner_id:
                running.turn.cancel()

    async def running_elsewhere(self, chat: ChatSessionRecord) -> str | None:
        """The other process running the session's turn; not one that has ended."""
        return await self._agent.writer_elsewhere(chat.ledger_session_id)

    def relayed(self, chat: ChatSessionRecord) -> RelayedTurn | None:
        """The turn another process runs, followed through the frames that process copies
        once asked (within ``LEASE_POLL_S``); None where no other process can run one."""
        if not self._store.is_postgresql:
            return None

        async def held_elsewhere() -> bool:
            return await self.running_elsewhere(chat) is not None

        return RelayedTurn(self._store, chat.id, held_elsewhere)

    # -- shutdown -----------------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Refuse new turns and cancel running ones; their partial answers are stored. A turn
        whose call waits for a person is not cancelled: its session is closed, which ends the
        turn (and its stream, so the connection does not hold the stop up) and leaves the call
        waiting in the ledger for the process that gets its decision. Runs on the loop."""
        self._accepting = False
        for running in list(self.turns.values()):
            if running.parked:
                continue
            if running.approvals.waiting:
                running.parked = True
                closing = running.handle.close(extract_memories=False)
                self._parking.append(asyncio.get_running_loop().create_task(closing))
            else:
                running.turn.cancel()

    async def wind_down(self) -> None:
        """``begin_shutdown``, and wait for the turns and the copies of their frames."""
        self.begin_shutdown()
        tasks = [running.task for running in self.turns.values() if running.task is not None]
        await asyncio.gather(*tasks, *self._parking, return_exceptions=True)
        await asyncio.gather(*self._copying, return_exceptions=True)

    # -- streaming ----------------------------------------------------------------------------

    async def _pump(self, chat: ChatSessionRecord, running: Running, language: Language) -> None:
        handle, turn, stream = running.handle, running.turn, running.stream
        book = TurnBook(self._books, chat, handle)
        # The turn's last frame waits until the session is free again (see the module).
        held: list[Frame] = []
        try:
            async for event in turn.events:
                payload = event.payload
                if isinstance(payload, ModelWaiting):
                    stream.note(waiting_note(payload))
                    continue
                book.saw(payload)
                data = frame_data(event, language, handle.model.model_id)
                if data is None:
                    continue
                if isinstance(payload, ToolApprovalRequested | ToolApprovalDecided | ToolCallEnd):
                    await self._observe(chat, running, payload)
                await book.shown(payload, data)
                frame = Frame(event.sequence, payload.type, data)
                if held or payload.type in TURN_END_EVENTS:
                    held.append(frame)
                else:
                    stream.publish(frame)
            outcome = await turn.join()
            self._books.metrics.turns.labels(outcome=outcome.status.value).inc()
            if outcome.status is OutcomeStatus.PANICKED:
                logger.error("turn %s panicked: %s", turn.turn_id, outcome.error)
        except Exception:
            logger.exception("streaming turn %s failed", turn.turn_id)
        finally:
            self.turns.pop(chat.id, None)
            if not running.parked:
                await self._desk.turn_ended(chat.id, running.approvals)
            self._books.metrics.active_streams.dec()
            self._sessions.touch(chat.ledger_session_id)
            for frame in held:
                stream.publish(frame)
            stream.close()

    async def _observe(
        self,
        chat: ChatSessionRecord,
        running: Running,
        payload: ToolApprovalRequested | ToolApprovalDecided | ToolCallEnd,
    ) -> None:
        """The approvals index follows the turn; the ledger has it all if this fails."""
        try:
            await self._desk.observe(chat.id, running.approvals, payload)
        except AgentError:
            logger.warning("indexing an approval of %s failed", chat.id, exc_info=True)

    # -- followers on other processes --------------------------------------------------------

    async def serve_followers(self) -> None:
        """With several processes (PostgreSQL): every ``LEASE_POLL_S`` while turns run here,
        the turns a client asked to follow through another process start copying frames."""
        if not self._store.is_postgresql:
            return
        while True:
            await asyncio.sleep(LEASE_POLL_S)
            if self.turns:
                await self._copy_followed(list(self.turns.values()))

    async def _copy_followed(self, running: list[Running]) -> None:
        """Copy the frames of the turns a client follows through another process (from their
        first frame: the stream keeps them all), asked since the last look."""
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
