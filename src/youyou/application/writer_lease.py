"""One writer per session across processes: the session lease as a kernel capability.

With a ``SessionLeases`` port registered on the builder, every operation that writes a
session's ledger (a turn, a compaction or memory-mode change, answering interrupted calls after
a resume, the memory extraction of a close) holds the session's lease while it runs, and gives
it back when it ends: a second process gets one ``SESSION_BUSY`` error before it stores
anything, naming who holds the session. One renewal task per agent extends all the leases it
holds in one round trip; a renewal that finds a cancel asked for by another process cancels
what runs in that session, and one that finds the lease lost (taken over after this process
stalled past its expiry) cancels it too and refuses every further write under that lease.
Without the port, nothing here runs and a session has no guard beyond its own process.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.ports.session_lease import LeaseState, LedgerLeases, SessionLeases


def session_busy(session_id: str, holder: str) -> AgentError:
    return AgentError(
        ErrorCode.SESSION_BUSY,
        f"session {session_id} is in use by another process ({holder}); "
        "try again when it has finished",
        source=ErrorSource.SESSION_SERVICE,
    )


@dataclass(eq=False)
class _Held:
    """A lease this process holds: how many operations write under it, and how to stop them."""

    writers: int
    stop: Callable[[], None]
    lost: bool = False


class WriterLeases:
    """The leases one agent holds, as ``holder``, each for ``ttl_s`` seconds past its last
    renewal (a renewal runs every ``renew_every_s``)."""

    def __init__(
        self, leases: SessionLeases, holder: str, ttl_s: float, *, renew_every_s: float
    ) -> None:
        self.holder = holder
        self._leases = leases
        self._ledger_leases = leases if isinstance(leases, LedgerLeases) else None
        self._ttl_s = ttl_s
        self._renew_every_s = renew_every_s
        self._held: dict[str, _Held] = {}
        # Taking and giving back a session's lease are serialized; a lock lives while used.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._renewal: asyncio.Task[None] | None = None

    def holds(self, session_id: str) -> bool:
        return session_id in self._held

    async def take(
        self,
        session_id: str,
        *,
        stop: Callable[[], None],
        on_taken: Callable[[int | None], Awaitable[None]],
    ) -> None:
        """One more writer of the session. The first one acquires the lease (SESSION_BUSY if
        another process holds it) and runs ``on_taken`` before anyone writes, with the
        session's last ledger seq when the leases read it as they took this one
        (``LedgerLeases``), else None; ``stop`` cancels what runs in the session when the
        lease is lost or another process asks to cancel."""
        async with self._lock(session_id):
            held = self._held.get(session_id)
            if held is not None:
                held.writers += 1
                return
            if self._ledger_leases is not None:
                acquire = self._ledger_leases.acquire_seeing
                other, last_seq = await acquire(session_id, self.holder, self._ttl_s)
            else:
                other = await self._leases.acquire(session_id, self.holder, self._ttl_s)
                last_seq = None
            if other is not None:
                raise session_busy(session_id, other)
            self._held[session_id] = _Held(1, stop)
            try:
                await on_taken(last_seq)
            except BaseException:
                await self._release(session_id)
                raise
            if self._renewal is None or self._renewal.done():
                self._renewal = asyncio.get_running_loop().create_task(self._renew())

    async def give_back(self, session_id: str) -> None:
        """One writer fewer; the last one releases the lease."""
        async with self._lock(session_id):
            held = self._held[session_id]
            held.writers -= 1
            if held.writers == 0:
                await self._release(session_id)

    async def request_cancel(self, session_id: str) -> bool:
        """Ask the process holding the session's lease (this one or another) to cancel what
        runs there, at its next renewal; False when nobody holds it."""
        return await self._leases.request_cancel(session_id)

    async def writer_elsewhere(self, session_id: str) -> str | None:
        """The other process holding the session's lease now; None when free or ours."""
        holder = await self._leases.holder(session_id)
        return None if holder == self.holder else holder

    def check_writable(self, session_id: str) -> None:
        """SESSION_BUSY once the session's lease was lost: its ledger may be another's now."""
        held = self._held.get(session_id)
        if held is not None and held.lost:
            raise AgentError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} was taken over by another process; nothing more is "
                "written here",
                source=ErrorSource.SESSION_SERVICE,
            )

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def _release(self, session_id: str) -> None:
        del self._held[session_id]
        if not self._held and self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        with suppress(AgentError):  # the database is away: the lease expires by itself
            await self._leases.release(session_id, self.holder)

    async def _renew(self) -> None:
        while self._held:
            await asyncio.sleep(self._renew_every_s)
            asked = dict(self._held)  # leases taken during the round trip are not judged
            try:
                states = await self._leases.renew_all(self.holder, self._ttl_s)
            except AgentError:  # the database is away: keep the leases until it is back
                continue
            for session_id, held in asked.items():
                if self._held.get(session_id) is not held:
                    continue  # given back meanwhile
                state = states.get(session_id, LeaseState.LOST)
                if state is LeaseState.LOST:
                    held.lost = True
                if state is not LeaseState.HELD:
                    held.stop()
