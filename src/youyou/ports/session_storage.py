"""Session storage port (see docs/sessions.md and docs/storage.md).

``LeaseReleasingStorage`` is an optional extension for a storage that keeps the session leases
in its own database: the operation's last append gives the writer's lease back in the same
transaction, so ending a turn costs no trip of its own to the database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from youyou.domain.ledger import LedgerEvent
from youyou.domain.session import (
    SessionHead,
    SessionListQuery,
    SessionPage,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.ports.session_lease import SessionLeases


@runtime_checkable
class SessionStorage(Protocol):
    """``append_event`` persists the event and its summary as one unit, or raises STORAGE_ERROR."""

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None: ...

    async def load_events(self, session_id: str, after_seq: int = 0) -> Sequence[LedgerEvent]:
        """Events with ``seq > after_seq`` in seq order; raise SESSION_NOT_FOUND if unknown."""
        ...

    async def load_head(self, session_id: str) -> SessionHead:
        """What resume needs before reading events; raise SESSION_NOT_FOUND if unknown."""
        ...

    async def load_session(
        self, session_id: str, events_after: Callable[[SessionHead], int]
    ) -> tuple[SessionHead, Sequence[LedgerEvent]]:
        """The head and the events ``events_after(head) < seq <= head.last_seq``, read together
        (one transaction where the backend has them): resume in one round of reads. Raise
        SESSION_NOT_FOUND if unknown."""
        ...

    async def list_sessions(self, query: SessionListQuery) -> SessionPage: ...

    async def find_sessions(
        self, query: SessionSearchQuery, limit: int
    ) -> Sequence[SessionSummary]: ...

    async def delete_session(self, session_id: str) -> None: ...


@runtime_checkable
class LeaseReleasingStorage(SessionStorage, Protocol):
    """A storage whose database also keeps session leases (``SessionLeases``)."""

    def keeps_leases(self, leases: SessionLeases) -> bool:
        """Whether ``leases`` are kept in this storage's database: only then does
        ``append_event_releasing`` give back the leases they hand out."""
        ...

    async def append_event_releasing(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary, *, holder: str
    ) -> None:
        """``append_event``, and in the same transaction the session's lease deleted if
        ``holder`` holds it (nothing else otherwise): both happen, or, on any failure
        (STORAGE_ERROR, a seq conflict included), neither."""
        ...
