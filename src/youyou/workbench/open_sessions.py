"""The sessions one server process holds open: resumed on demand, closed when idle.

Memory stays bounded however many sessions exist: a session is resumed from its ledger when a
request needs it and closed once it has been idle for ``session_idle_s``. This is a cache of
open handles and nothing more: who may write a session (here or in another process) is the
kernel's session lease, and a handle whose ledger another process moved on reloads itself
before it writes. Closing extracts long-term memories under that lease; a session that is
busy (a turn runs here, or another process holds its lease) is not closed by the idle sweep.

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

from youyou.api.agent import Agent
from youyou.api.session import SessionHandle
from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.errors import ApiCode, ApiError, Localized, from_agent_error

logger = logging.getLogger(__name__)


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
        *,
        idle_s: float,
        close_timeout_s: float,
        user_open_sessions: int,
    ) -> None:
        self._agent = agent
        self._idle_s = idle_s
        self._user_open = user_open_sessions
        self._close_timeout_s = close_timeout_s
        self._open: dict[str, _Open] = {}
        self._closing: dict[str, asyncio.Event] = {}  # sessions the cache is closing

    def __len__(self) -> int:
        return len(self._open)

    def add(self, handle: SessionHandle, owner_id: str) -> None:
        """A session just created (its ledger is new, nothing to resume)."""
        self._open[handle.session_id] = _Open(handle, owner_id, time.monotonic())

    def forget(self, ledger_id: str) -> None:
        """A session closed (or deleted) by its handle: nothing more to close."""
        self._open.pop(ledger_id, None)

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

    async def handle(self, ledger_id: str, owner_id: str) -> SessionHandle:
        """The open session, resumed if it is not (a session being closed is waited for
        first: its close may extract memories, a model call)."""
        while (closing := self._closing.get(ledger_id)) is not None:
            await closing.wait()
        entry = self._open.get(ledger_id)
        if entry is not None and entry.handle.is_closed:
            del self._open[ledger_id]
            entry = None
        if entry is None:
            await self._make_room_for(owner_id)
            handle = await self.opening(lambda: self._agent.resume_session(ledger_id))
            entry = self._open[ledger_id] = _Open(handle, owner_id, time.monotonic())
        entry.last_used = time.monotonic()
        return entry.handle

    def touch(self, ledger_id: str) -> None:
        """Idleness counts from the end of a session's last use, not its start."""
        entry = self._open.get(ledger_id)
        if entry is not None:
            entry.last_used = time.monotonic()

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
        extracting memories; False when none is idle."""
        candidates = sorted(
            (entry.last_used, ledger_id)
            for ledger_id, entry in self._open.items()
            if ledger_id not in self._closing and (owner_id is None or entry.owner_id == owner_id)
        )
        for _, ledger_id in candidates:
            if await self._close(ledger_id, extract=False, unless_busy=True):
                return True
        return False

    async def close_idle_of(self, owner_id: str) -> None:
        """Close the owner's idle sessions without extracting memories (their account is
        being disabled or deleted)."""
        for ledger_id, entry in list(self._open.items()):
            if entry.owner_id == owner_id and ledger_id not in self._closing:
                await self._close(ledger_id, extract=False, unless_busy=True)

    async def close_all(self) -> None:
        """At shutdown: every session, extracting memories for at most ``close_timeout_s``
        (all sessions together): a stop signal must not wait on a slow or hung model."""
        deadline = asyncio.get_running_loop().time() + self._close_timeout_s
        entries = list(self._open.values())
        self._open.clear()
        closed = await asyncio.gather(
            *(_close_by(entry.handle, deadline, unless_busy=False) for entry in entries),
            return_exceptions=True,
        )
        for failure in (result for result in closed if isinstance(result, Exception)):
            logger.warning("closing a session at shutdown failed", exc_info=failure)

    async def reap_idle(self) -> None:
        """Runs for the life of the server: a session idle for ``session_idle_s`` is closed,
        extracting its memories, unless it is busy (then the next pass tries again)."""
        idle_s = self._idle_s
        while True:
            await asyncio.sleep(min(idle_s / 4, 30.0))
            cutoff = time.monotonic() - idle_s
            for ledger_id, entry in list(self._open.items()):
                if entry.last_used > cutoff or ledger_id in self._closing:
                    continue
                try:
                    await self._close(ledger_id, extract=True, unless_busy=True)
                except Exception:
                    logger.warning("closing idle session %s failed", ledger_id, exc_info=True)

    async def _close(self, ledger_id: str, *, extract: bool, unless_busy: bool) -> bool:
        """Close one cached session (``handle`` waits meanwhile); False when it was busy and
        stays open."""
        entry = self._open.get(ledger_id)
        if entry is None:
            return True
        closing = self._closing[ledger_id] = asyncio.Event()
        try:
            if extract:
                deadline = asyncio.get_running_loop().time() + self._close_timeout_s
                closed = await _close_by(entry.handle, deadline, unless_busy=unless_busy)
            else:
                closed = await entry.handle.close(extract_memories=False, unless_busy=unless_busy)
        except AgentError:
            logger.warning("closing session %s failed", ledger_id, exc_info=True)
            closed = entry.handle.is_closed
        finally:
            del self._closing[ledger_id]
            closing.set()
        if closed and self._open.get(ledger_id) is entry:
            del self._open[ledger_id]
        return closed


async def _close_by(handle: SessionHandle, deadline: float, *, unless_busy: bool) -> bool:
    """Close, extracting memories until ``deadline`` (event-loop time); past it the extraction
    is cancelled and the session closed without."""
    loop = asyncio.get_running_loop()
    closing = asyncio.ensure_future(handle.close(unless_busy=unless_busy))
    await asyncio.wait({closing}, timeout=deadline - loop.time())
    if closing.done():
        return closing.result()  # a plugin's veto or a storage failure raises
    closing.cancel()
    await asyncio.wait({closing})
    logger.warning("session %s closed without extracting memories (too slow)", handle.session_id)
    await handle.close(extract_memories=False)
    return True
