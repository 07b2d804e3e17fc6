"""One writer per session across processes, for the terminal client.

Two terminals on one session would otherwise both append at the same seq and one answer would
be lost. Around every turn, compaction and mode switch the client takes the session's lease in
the database (the same lease the workbench server takes): a second process is refused before it
stores anything, with who holds the session; and a session another process appended to since
it was opened here is reloaded before the next turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

from youyou.adapters.storage.lease import LeaseState
from youyou.adapters.storage.lease_holder import acquire_lease, local_holder
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.api.session import SessionHandle
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

# A process killed while writing leaves a lease that expires after this long.
LEASE_TTL_S = 30.0


class SessionWriter:
    def __init__(self, storage: SqlSessionStorage) -> None:
        self._storage = storage
        self._leases = storage.leases()
        self.holder = local_holder("youyou chat")

    @asynccontextmanager
    async def hold(
        self, session_id: str, on_lost: Callable[[], object] = lambda: None
    ) -> AsyncIterator[None]:
        """The session's lease for the block, renewed while it runs. ``on_lost`` is called
        (to cancel what runs) when a renewal finds the lease taken over by another process,
        e.g. after this one was suspended past its expiry, or a cancel asked for by a server
        process sharing the database.

        A lease left by a process of this machine that is gone (a ``youyou chat`` or a
        server killed with SIGKILL) is taken over at once instead of after its expiry.
        """
        other = await acquire_lease(self._leases, session_id, self.holder, LEASE_TTL_S)
        if other is not None:
            raise AgentError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} is in use by another process ({other}); "
                "try again when it has finished",
                source=ErrorSource.STORAGE,
            )
        renewal = asyncio.get_running_loop().create_task(self._renew(session_id, on_lost))
        try:
            yield
        finally:
            renewal.cancel()
            with suppress(asyncio.CancelledError):
                await renewal
            with suppress(AgentError):
                await self._leases.release(session_id, self.holder)

    async def _renew(self, session_id: str, on_lost: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(LEASE_TTL_S / 3)
            try:
                state = await self._leases.renew(session_id, self.holder, LEASE_TTL_S)
            except AgentError:  # the database is away: keep the lease until it is back
                continue
            if state is not LeaseState.HELD:
                on_lost()
                return

    async def moved_on(self, session: SessionHandle) -> bool:
        """Whether another process appended to the session since this handle last wrote."""
        return await self._storage.last_seq(session.session_id) != session.last_seq
