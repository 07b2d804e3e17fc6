"""Decisions on tool calls that wait for a person, across processes.

A decision is claimed in ``wb_tool_approvals`` (``approvals.py``) and handed to the kernel
that runs the turn: on this process at once, on another one within ``APPLY_POLL_S``. A turn
whose process died while a call waited is taken over by the process that gets the decision
(or, once every call is decided or expired, by the first process that looks:
``RESUME_POLL_S``), and goes on where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import suppress

from youyou.domain.errors import AgentError
from youyou.workbench.approvals import APPLY_POLL_S, ApprovalDesk
from youyou.workbench.errors import ApiCode, ApiError, Language, agent_call
from youyou.workbench.open_sessions import OpenSessions
from youyou.workbench.schemas import ApprovalOut, PendingApprovalOut
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore
from youyou.workbench.store.approvals import Decision
from youyou.workbench.turn_runner import TurnRunner

logger = logging.getLogger(__name__)

# How often a process looks for turns left waiting by a process that died, to go on with them.
RESUME_POLL_S = 5.0


class ApprovalFlow:
    def __init__(
        self,
        *,
        desk: ApprovalDesk,
        runner: TurnRunner,
        sessions: OpenSessions,
        store: WorkbenchStore,
    ) -> None:
        self._desk = desk
        self._runner = runner
        self._sessions = sessions
        self._store = store
        self._decided = asyncio.Event()  # a decision was claimed for a turn of this process

    async def pending(self, chat_ids: Sequence[str]) -> dict[str, list[PendingApprovalOut]]:
        """What waits for a decision in these sessions (any process's turns)."""
        return await self._desk.pending(chat_ids)

    async def decide(
        self, chat: ChatSessionRecord, call_id: str, decision: Decision, language: Language
    ) -> ApprovalOut:
        """The first decision of a waiting call, once the kernel running the turn has it: on
        this process, on another one (which applies it within ``APPLY_POLL_S``), or on none
        (its process died: this one takes the turn over and goes on with it)."""
        await self._desk.claim(chat.id, call_id, decision)
        if chat.id in self._runner.turns:
            self._decided.set()
        elif await self._runner.running_elsewhere(chat) is None:
            await self._take_over(chat, language)
        return await self._desk.confirmed(chat.id, call_id, decision)

    async def apply_decisions(self) -> None:
        """Hand the decisions claimed for this process's waiting turns to their kernel: at
        once for a claim made here, within ``APPLY_POLL_S`` for one made elsewhere."""
        while True:
            with suppress(TimeoutError):
                async with asyncio.timeout(APPLY_POLL_S):
                    await self._decided.wait()
            self._decided.clear()
            waiting = {
                chat_id: (running.handle, running.approvals)
                for chat_id, running in self._runner.turns.items()
                if running.approvals.waiting
            }
            await self._desk.apply_claimed(waiting)

    async def resume_stopped_turns(self) -> None:
        """At start and every ``RESUME_POLL_S``: the turns left waiting by a process that died
        go on here once they can (decided, or expired: the timeout's denial is written)."""
        while True:
            try:
                stopped = await self._store.unsettled_sessions()
            except AgentError:
                logger.warning("looking for stopped turns failed", exc_info=True)
                stopped = set()
            for chat_id in stopped - set(self._runner.turns):
                try:
                    chat = await self._store.chat_session(chat_id)
                    if chat is not None and await self._runner.running_elsewhere(chat) is None:
                        await self._take_over(chat)
                except (AgentError, ApiError):
                    logger.warning("going on with the turn of %s failed", chat_id, exc_info=True)
            await asyncio.sleep(RESUME_POLL_S)

    async def _take_over(self, chat: ChatSessionRecord, language: Language = "zh-CN") -> None:
        """Go on with a turn whose process stopped while calls waited for a decision: the
        decisions claimed since go to the ledger, and once every call is decided (or has
        expired) the turn continues here. Nothing when another process or task has it."""
        if chat.id in self._runner.turns:
            return  # it runs here: the decision reaches it
        handle = await self._sessions.handle(chat.ledger_session_id, chat.owner_id)
        await self._desk.record_claims(chat.id, handle)
        if not handle.can_continue_turn:
            if not handle.pending_approvals():
                await self._store.settle_approvals(chat.id)  # nothing left to go on
            return
        options = await self._runner.options(chat.owner_id, handle, language)
        try:
            turn = await agent_call(handle.continue_turn(options=options))
        except ApiError as error:
            if error.code is ApiCode.TURN_BUSY:
                return  # another task or process has it: whatever holds it ends the wait
            raise
        logger.info("session %s: going on with its stopped turn", chat.id)
        self._runner.launch(chat, handle, turn, language)
