"""An in-process ``SessionStorage`` with the semantics of the SQL one, for tests and for
agents that run without a database. Events are kept as their JSON text, exactly as the SQL
storage keeps them, so callers can never mutate what was "persisted".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from youyou.adapters.storage.catalog import (
    SortKey,
    append_action,
    check_limit,
    decode_cursor,
    matches,
    page_of,
    seq_conflict,
)
from youyou.adapters.storage.codec import HeadSlot, decode_event, encode_event, head_slot
from youyou.adapters.storage.errors import session_not_found, storage_error
from youyou.domain.ledger import LedgerEvent
from youyou.domain.session import (
    SessionHead,
    SessionListQuery,
    SessionPage,
    SessionSearchQuery,
    SessionSummary,
)


@dataclass(frozen=True, slots=True)
class _StoredEvent:
    seq: int
    document: str
    schema_version: int

    def decode(self) -> LedgerEvent:
        return decode_event(self.document, self.schema_version)


@dataclass(slots=True)
class _Session:
    summary: SessionSummary
    events: list[_StoredEvent] = field(default_factory=list)
    heads: dict[HeadSlot, _StoredEvent] = field(default_factory=dict)


class InMemorySessionStorage:
    """Every method runs without awaiting, so each call is atomic on the event loop."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        action = append_action(session_id, event.seq, summary)
        stored = _StoredEvent(event.seq, encode_event(event), event.schema_version)
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = _Session(summary)
        elif session.events and session.events[-1].seq >= event.seq:
            raise seq_conflict(action)
        session.summary = summary
        session.events.append(stored)
        slot = head_slot(event)
        if slot is not None:
            session.heads[slot] = stored

    async def load_events(self, session_id: str, after_seq: int = 0) -> Sequence[LedgerEvent]:
        return [e.decode() for e in self._session(session_id).events if e.seq > after_seq]

    async def load_head(self, session_id: str) -> SessionHead:
        session = self._session(session_id)
        profile = session.heads.get(HeadSlot.PROFILE)
        if profile is None:
            raise storage_error(f"loading the head of session {session_id!r}: no session_profile")
        latest = {slot: stored.decode() for slot, stored in session.heads.items()}
        return SessionHead(
            summary=session.summary,
            last_seq=session.events[-1].seq,
            profile=latest[HeadSlot.PROFILE],
            latest_compaction=latest.get(HeadSlot.COMPACTION),
            latest_memory_checkpoint=latest.get(HeadSlot.CHECKPOINT),
            latest_memory_mode=latest.get(HeadSlot.MEMORY_MODE),
        )

    async def load_session(
        self, session_id: str, events_after: Callable[[SessionHead], int]
    ) -> tuple[SessionHead, Sequence[LedgerEvent]]:
        head = await self.load_head(session_id)  # no await in between: nothing interleaves
        return head, await self.load_events(session_id, events_after(head))

    async def list_sessions(self, query: SessionListQuery) -> SessionPage:
        check_limit(query.limit)
        ordered = self._newest_first()
        if query.cursor is not None:
            after = decode_cursor(query.cursor)
            ordered = [s for s in ordered if SortKey.of(s) < after]
        return page_of(ordered[: query.limit + 1], query.limit)

    async def find_sessions(
        self, query: SessionSearchQuery, limit: int
    ) -> Sequence[SessionSummary]:
        check_limit(limit)
        return [s for s in self._newest_first() if matches(s, query)][:limit]

    async def delete_session(self, session_id: str) -> None:
        if self._sessions.pop(session_id, None) is None:
            raise session_not_found(session_id)

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise session_not_found(session_id)
        return session

    def _newest_first(self) -> list[SessionSummary]:
        summaries = (s.summary for s in self._sessions.values())
        return sorted(summaries, key=SortKey.of, reverse=True)
