"""The sessions one server process holds open: resumed on demand, closed when idle.

Memory stays bounded however many sessions exist: a session is resumed from its ledger when a
request needs it and closed once it has been idle for ``session_idle_s``. Closing extracts
long-term memories, which writes to the ledger, so it takes the session's lease like any other
writer. A task that works on a session first *claims* it, so this process never runs two
writers of one ledger and never closes a session something is using.

Each user may keep ``user_open_sessions`` open: opening one more first closes that user's least
recently used idle session (without extracting: what it did not extract stays in the ledger for
its next close). When the kernel has no slot left, the least recently used idle session of the
process is closed the same way; no user's sessions are ever closed for another user while idle
ones of their own remain, and no refusal tells one user about another's use.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from youyou.adapters.storage import LeaseState, SqlSessionLeases
from youyou.adapters.storage.lease_holder import acquire_lease, holder_has_ended
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.api.agent import Agent
from youyou.api.session import SessionHandle
from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.errors import ApiCode, ApiError, Localized, from_agent_error

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseTaker:
    """This process's side of the session leases: who it is, how long a lease holds."""

    leases: SqlSessionLeases
    holder: str
    ttl_s: float

    async def take(self, ledger_id: str) -> str | None:
        """The session's lease, taken over at once from a process of this machine that has
        ended (a killed server being restarted); None when ours, else who holds it."""
        return await acquire_lease(self.leases, ledger_id, self.holder, self.ttl_s)

    async def release(self, ledger_id: str) -> None:
        await self.leases.release(ledger_id, self.holder)

    async def renew_all(self) -> dict[str, LeaseState]:
        """Every lease this process holds, renewed in one statement: the state of each."""
        return await self.leases.renew_all(self.holder, self.ttl_s)

    async def held_elsewhere(self, ledger_id: str) -> str | None:
        """The other live process holding the session's lease; not this one, not one that
        has ended."""
        holder = await self.leases.holder(ledger_id)
        if holder is None or holder == self.holder or holder_has_ended(holder):
            return None
        return holder

    async def request_cancel(self, ledger_id: str) -> None:
        """Ask whichever process holds the session's lease to cancel its turn."""
        await self.leases.request_cancel(ledger_id)


@dataclass(slots=True)
class _Open:
    handle: SessionHandle
    owner_id: str
    last_used: float


def _refusal(error: AgentError) -> ApiError:
    """No kernel slot is ``SERVER_AT_CAPACITY``: how many sessions are open, and whose, is not
    the client's business."""
    if error.code is ErrorCode.SESSION_BUSY:
        return ApiError(ApiCode.SERVER_AT_CAPACITY)
    return from_agent_error(error)


class OpenSessions:
    def __init__(
        self,
        agent: Agent,
        storage: SqlSessionStorage,
        lease: LeaseTaker,
        *,
        idle_s: float,
        close_timeout_s: float,
        user_open_sessions: int,
    ) -> None:
        self._agent = agent
        self._storage = storage
        self._lease = lease
        self._idle_s = idle_s
        self._user_open = user_open_sessions
        self._close_timeout_s = close_timeout_s
        self._open: dict[str, _Open] = {}
        self._claimed: set[str] = set()  # ledger ids some task of this process is writing
        self._closing: dict[str, asyncio.Event] = {}  # idle sessions being closed

    def __len__(self) -> int:
        return len(self._open)

    @property
    def any_claimed(self) -> bool:
        return bool(self._claimed)

    async def claim(self, ledger_id: str) -> None:
        """A session being closed for idleness (which may extract memories, a model call) is
        waited for and then resumed; only a turn or a request that writes is ``TURN_BUSY``."""
        while (closing := self._closing.get(ledger_id)) is not None:
            await closing.wait()
        if ledger_id in self._claimed:
            raise ApiError(ApiCode.TURN_BUSY)
        self._claimed.add(ledger_id)

    def unclaim(self, ledger_id: str) -> None:
        self._claimed.discard(ledger_id)

    def add(self, handle: SessionHandle, owner_id: str) -> None:
        """A session just created (its ledger is new, nothing to resume)."""
        self._open[handle.session_id] = _Open(handle, owner_id, time.monotonic())

    async def opening(self, open_call: Callable[[], Awaitable[SessionHandle]]) -> SessionHandle:
        """``open_call`` (a kernel create or resume); when every kernel slot is taken, the
        process's least recently used idle session is closed and the call tried once more."""
        try:
            return await open_call()
        except AgentError as err:
            if err.code is not ErrorCode.SESSION_BUSY or not await self._evict_idle(None):
                raise _refusal(err) from err
        try:
            return await open_call()
        except AgentError as err:
            raise _refusal(err) from err

    async def _make_room_for(self, owner_id: str) -> None:
        """At most ``user_open_sessions`` of one user open: their own idle ones make room."""
        mine = sum(1 for entry in self._open.values() if entry.owner_id == owner_id)
        while mine >= self._user_open:
            if not await self._evict_idle(owner_id):
                raise ApiError(
                    ApiCode.USER_LIMIT_REACHED,
                    Localized(
                        f"all {self._user_open} of your open sessions are busy "
                        "(user_open_sessions)",
                        f"你打开的 {self._user_open} 个会话都在使用中（user_open_sessions）",
                    ),
                )
            mine -= 1

    async def _evict_idle(self, owner_id: str | None) -> bool:
        """Close the least recently used idle session (of ``owner_id``, or of anyone) without
        extracting memories; False when there is none."""
        idle = [
            (entry.last_used, ledger_id)
            for ledger_id, entry in self._open.items()
            if ledger_id not in self._claimed
            and ledger_id not in self._closing
            and (owner_id is None or entry.owner_id == owner_id)
        ]
        if not idle:
            return False
        ledger_id = min(idle)[1]
        self._claimed.add(ledger_id)
        try:
            await self.close(ledger_id, extract_memories=False)
        finally:
            self._claimed.discard(ledger_id)
        return True

    async def close_idle_of(self, owner_id: str) -> None:
        """Close the owner's idle sessions without extracting memories (their account is
        being disabled or deleted)."""
        for ledger_id, entry in list(self._open.items()):
            if entry.owner_id != owner_id or ledger_id in self._claimed:
                continue
            if ledger_id in self._closing:
                continue
            self._claimed.add(ledger_id)
            try:
                await self.close(ledger_id, extract_memories=False)
            finally:
                self._claimed.discard(ledger_id)

    def touch(self, ledger_id: str) -> None:
        """Idleness counts from the end of a session's last use, not its start."""
        entry = self._open.get(ledger_id)
        if entry is not None:
            entry.last_used = time.monotonic()

    async def handle(self, ledger_id: str, owner_id: str) -> SessionHandle:
        """The open session, reopened if another process appended since we last saw it."""
        entry = self._open.get(ledger_id)
        if entry is not None and await self._storage.last_seq(ledger_id) != entry.handle.last_seq:
            logger.info("session %s changed on another process; reloading it", ledger_id)
            await self.close(ledger_id, extract_memories=False)
            entry = None
        if entry is None:
            await self._make_room_for(owner_id)
            handle = await self.opening(lambda: self._agent.resume_session(ledger_id))
            entry = self._open[ledger_id] = _Open(handle, owner_id, time.monotonic())
        entry.last_used = time.monotonic()
        return entry.handle

    async def close(self, ledger_id: str, *, extract_memories: bool = True) -> None:
        """Close now, by a task holding the session's claim and lease; a failure is logged."""
        entry = self._open.pop(ledger_id, None)
        if entry is None:
            return
        try:
            await entry.handle.close(extract_memories=extract_memories)
        except AgentError:
            logger.warning("closing session %s failed", ledger_id, exc_info=True)

    async def close_all(self) -> None:
        """At shutdown: every session, extracting memories for at most ``close_timeout_s``
        (all sessions together): a stop signal must not wait on a slow or hung model."""
        deadline = asyncio.get_running_loop().time() + self._close_timeout_s
        closed = await asyncio.gather(
            *(self._close_for_good(ledger_id, deadline) for ledger_id in list(self._open)),
            return_exceptions=True,
        )
        for failure in (result for result in closed if isinstance(result, Exception)):
            logger.warning("closing a session at shutdown failed", exc_info=failure)

    async def reap_idle(self) -> None:
        """Runs for the life of the server."""
        idle_s = self._idle_s
        while True:
            await asyncio.sleep(min(idle_s / 4, 30.0))
            cutoff = time.monotonic() - idle_s
            for ledger_id, entry in list(self._open.items()):
                if entry.last_used > cutoff or ledger_id in self._claimed:
                    continue
                self._claimed.add(ledger_id)
                closing = self._closing[ledger_id] = asyncio.Event()
                try:
                    deadline = asyncio.get_running_loop().time() + self._close_timeout_s
                    await self._close_for_good(ledger_id, deadline, keep_if_busy=True)
                except Exception:
                    logger.warning("closing idle session %s failed", ledger_id, exc_info=True)
                finally:
                    self._claimed.discard(ledger_id)
                    del self._closing[ledger_id]
                    closing.set()

    async def _close_for_good(
        self, ledger_id: str, deadline: float, *, keep_if_busy: bool = False
    ) -> None:
        """Closing extracts memories, which writes, so it takes the lease; a copy another
        process has written to since (or is writing now) is only dropped: its memories are
        that process's to extract. Extraction stops at ``deadline`` (event-loop time).

        ``keep_if_busy`` (the idle reaper): while another process holds the lease, the session
        stays open for the next pass instead of being dropped. That process may only be
        dropping its own outdated copy, and then the memories are this one's to extract.
        """
        entry = self._open.get(ledger_id)
        if entry is None:
            return
        handle = entry.handle
        holder = await self._lease.take(ledger_id)
        if holder is not None and keep_if_busy:
            return
        self._open.pop(ledger_id, None)  # the caller's claim kept everyone else off it
        if holder is not None:
            await handle.close(extract_memories=False)
            return
        try:
            if await self._storage.last_seq(ledger_id) != handle.last_seq:
                await handle.close(extract_memories=False)
                return
            closing = asyncio.ensure_future(handle.close())
            await asyncio.wait({closing}, timeout=deadline - asyncio.get_running_loop().time())
            if closing.done():
                closing.result()  # a plugin's veto or a storage failure
                return
            closing.cancel()
            await asyncio.wait({closing})
            logger.warning("session %s closed without extracting memories (too slow)", ledger_id)
            await handle.close(extract_memories=False)
        finally:
            await self._lease.release(ledger_id)
