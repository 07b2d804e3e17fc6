"""Session lease port: at most one process writes a session at a time.

A session's ledger has one writer; with several server processes on one database the writer is
whoever holds the session's lease. The holder renews it well within its time to live; a lease
that is not renewed expires, so a crashed process never blocks a session for longer than that.
A session storage that keeps the leases in its own database may also give one back in the
transaction of an append (``session_storage.LeaseReleasingStorage``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol, runtime_checkable


class LeaseState(StrEnum):
    """What a renewal found out about the lease."""

    HELD = "held"
    CANCEL_REQUESTED = "cancel_requested"  # still held, and another process asked to cancel
    LOST = "lost"  # another holder took it over, or it was released


class SessionLeases(Protocol):
    """Durations are seconds; every failure of the backing store is STORAGE_ERROR."""

    async def acquire(self, session_id: str, holder: str, ttl_s: float) -> str | None:
        """Take (or, for the same holder, refresh) the lease: None on success, otherwise the
        live holder. Clears a pending cancel request."""
        ...

    async def renew(self, session_id: str, holder: str, ttl_s: float) -> LeaseState:
        """Extend the lease. An expired lease nobody took over is still renewed: exclusion
        only needs that no other holder came in between."""
        ...

    async def renew_all(self, holder: str, ttl_s: float) -> dict[str, LeaseState]:
        """Extend every lease ``holder`` holds, in one round trip however many there are:
        HELD or CANCEL_REQUESTED by session id; a session missing from the answer is LOST."""
        ...

    async def request_cancel(self, session_id: str) -> bool:
        """Ask the holder of a live lease to cancel its turn; False if nobody holds one."""
        ...

    async def release(self, session_id: str, holder: str) -> None:
        """Give the lease up; a no-op unless ``holder`` holds it."""
        ...

    async def holder(self, session_id: str) -> str | None:
        """The holder of the live lease, if any."""
        ...


@runtime_checkable
class LedgerLeases(SessionLeases, Protocol):
    """Leases kept beside the ledger they guard: taking one can read the session's last seq
    in the same transaction, so a writer learns whether another process appended while it
    did not hold the session without a second trip to the database."""

    async def acquire_seeing(
        self, session_id: str, holder: str, ttl_s: float
    ) -> tuple[str | None, int | None]:
        """``acquire``'s answer, and, when the lease is taken, the session's last ledger seq
        as of taking it; None when it was not read (no ledger row, or a ledger elsewhere)."""
        ...
