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

When the session storage keeps the leases in its own database (``LeaseReleasingStorage``), an
operation's last write (a turn's answer) gives the lease back in the write's own transaction
(``append_last``): the operation's end then makes no trip to the database, and another process
can take the session as soon as the answer is stored. A write that still comes after it takes
the lease back first, and is refused (SESSION_BUSY) if another process took the session or
appended to it meanwhile.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import LedgerEvent
from youyou.domain.session import SessionSummary
from youyou.ports.session_lease import LeaseState, LedgerLeases, SessionLeases
from youyou.ports.session_storage import LeaseReleasingStorage, SessionStorage


def session_busy(session_id: str, holder: str) -> AgentError:
    return AgentError(
        ErrorCode.SESSION_BUSY,
        f"session {session_id} is in use by another process ({holder}); "
        "try again when it has finished",
        source=ErrorSource.SESSION_SERVICE,
    )


@dataclass(eq=False)
class _Held:
    """A lease this process holds: how many operations write under it, and how to stop them.

    ``releasing`` is set while a last write's transaction gives the lease back (renewals do
    not judge the lease then: missing, it is not lost); ``released``, once it did: the lease
    is no longer ours in the database, though the operation has not ended yet."""

    writers: int
    stop: Callable[[], None]
    lost: bool = False
    releasing: asyncio.Event | None = None
    released: bool = False


class WriterLeases:
    """The leases one agent holds, as ``holder``, each for ``ttl_s`` seconds past its last
    renewal (a renewal runs every ``renew_every_s``)."""

    def __init__(
        self,
        leases: SessionLeases,
        holder: str,
        ttl_s: float,
        *,
        renew_every_s: float,
        ledger: SessionStorage | None = None,
    ) -> None:
        """``ledger``: the session storage; when it keeps ``leases`` in its own database, an
        operation's last write gives the lease back with it (``append_last``)."""
        self.holder = holder
        self._leases = leases
        self._ledger_leases = leases if isinstance(leases, LedgerLeases) else None
        self._ledger: LeaseReleasingStorage | None = None
        if isinstance(ledger, LeaseReleasingStorage) and ledger.keeps_leases(leases):
            self._ledger = ledger
        self._ttl_s = ttl_s
        self._renew_every_s = renew_every_s
        self._held: dict[str, _Held] = {}
        # Taking and giving back a session's lease are serialized; a lock lives while used.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._renewal: asyncio.Task[None] | None = None

    async def take(
        self,
        session_id: str,
        *,
        stop: Callable[[], None],
        on_taken: Callable[[int | None], Awaitable[None]],
        seen: Callable[[], int],
    ) -> None:
        """One more writer of the session. The first one acquires the lease (SESSION_BUSY if
        another process holds it) and runs ``on_taken`` before anyone writes, with the
        session's last ledger seq when the leases read it as they took this one
        (``LedgerLeases``), else None; ``stop`` cancels what runs in the session when the
        lease is lost or another process asks to cancel. A writer that comes while an
        operation still ending here has given the lease back with its last write takes it
        back as ``check_writable`` does (``seen``: the last seq of this process's copy)."""
        async with self._lock(session_id):
            held = self._held.get(session_id)
            if held is not None:
                if held.releasing is not None:  # is the lease still ours after that write?
                    await held.releasing.wait()
                if held.released:
                    held = await self._take_back(session_id, held, seen())
                held.writers += 1
                return
            other, last_seq = await self._acquire(session_id)
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
        """One writer fewer; the last one releases the lease (with no trip to the database
        when the operation's last write gave it back already)."""
        async with self._lock(session_id):
            held = self._held[session_id]
            held.writers -= 1
            if held.writers == 0:
                await self._release(session_id, in_database=not held.released)

    async def append_last(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> bool:
        """Store ``event`` as the last write of the operation, giving the lease back in the
        same transaction, when that operation is the only one writing the session here and
        the storage keeps the leases: True then. False, with nothing done, when it cannot
        (the caller appends as usual). A write that fails leaves the lease held."""
        held = self._held.get(session_id)
        if self._ledger is None or held is None or held.writers != 1 or held.released:
            return False
        # Marked before the transaction starts: a renewal meanwhile that misses the lease
        # must not take it as lost and stop the operation that is just ending.
        settled = held.releasing = asyncio.Event()
        try:
            await self._ledger.append_event_releasing(
                session_id, event, summary, holder=self.holder
            )
            held.released = True
        finally:
            held.releasing = None
            settled.set()
        return True

    async def request_cancel(self, session_id: str) -> bool:
        """Ask the process holding the session's lease (this one or another) to cancel what
        runs there, at its next renewal; False when nobody holds it."""
        return await self._leases.request_cancel(session_id)

    async def writer_elsewhere(self, session_id: str) -> str | None:
        """The other process holding the session's lease now; None when free or ours."""
        holder = await self._leases.holder(session_id)
        return None if holder == self.holder else holder

    async def check_writable(self, session_id: str, seen: int) -> None:
        """SESSION_BUSY once the session's lease was lost: its ledger may be another's now.
        After the operation's last write gave the lease back (``append_last``), a write that
        still comes takes it back first: SESSION_BUSY if another process holds it, or
        appended to the session since this copy's last seq ``seen``."""
        held = self._held.get(session_id)
        if held is None:
            return
        if held.lost:
            raise AgentError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} was taken over by another process; nothing more is "
                "written here",
                source=ErrorSource.SESSION_SERVICE,
            )
        if held.released:
            async with self._lock(session_id):
                held = self._held[session_id]  # the write's operation keeps it listed
                if held.released:
                    await self._take_back(session_id, held, seen)

    async def _acquire(self, session_id: str) -> tuple[str | None, int | None]:
        """The other holder, if another process holds the lease; and the session's last seq
        when the leases read it as they took the lease (``LedgerLeases``)."""
        if self._ledger_leases is not None:
            acquire = self._ledger_leases.acquire_seeing
            return await acquire(session_id, self.holder, self._ttl_s)
        return await self._leases.acquire(session_id, self.holder, self._ttl_s), None

    async def _take_back(self, session_id: str, held: _Held, seen: int) -> _Held:
        """Take again the lease an operation's last write gave back, under the session's
        lock: SESSION_BUSY if another process holds it, or appended since ``seen`` (when the
        leases read the last seq), rather than writing over what it stored."""
        other, last_seq = await self._acquire(session_id)
        if other is not None:
            raise session_busy(session_id, other)
        if last_seq is not None and last_seq != seen:
            with suppress(AgentError):  # the database is away: the lease expires by itself
                await self._leases.release(session_id, self.holder)
            raise AgentError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} was written by another process meanwhile; "
                "try again when this operation has ended",
                source=ErrorSource.SESSION_SERVICE,
            )
        # A new entry: a renewal that found the lease missing while it was given back judges
        # the old one, which it skips.
        taken = self._held[session_id] = _Held(held.writers, held.stop)
        return taken

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def _release(self, session_id: str, *, in_database: bool = True) -> None:
        del self._held[session_id]
        if not self._held and self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        if in_database:
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
                    continue  # given back (or taken back) meanwhile
                if held.released or held.releasing is not None:
                    continue  # given back with the operation's last write
                state = states.get(session_id, LeaseState.LOST)
                if state is LeaseState.LOST:
                    held.lost = True
                if state is not LeaseState.HELD:
                    held.stop()
