"""``SessionStorage`` on SQLAlchemy 2 async: SQLite (embedded default) and PostgreSQL.

Each append is one transaction: upsert the session row (summary + head pointers), guarded so
the seq must move forward, then insert the event. The primary key (session_id, seq) is the
database-level uniqueness guarantee behind that guard. ``append_event_releasing`` also deletes
the writer's session lease (``lease.py``) in that transaction (``LeaseReleasingStorage``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import cache, partial
from typing import Any

from sqlalchemy import Dialect, Integer, Select, and_, bindparam, delete, or_, select, tuple_, union
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import Executable
from sqlalchemy.sql.selectable import ReturnsRows

from youyou.adapters.storage.catalog import (
    append_action,
    check_limit,
    decode_cursor,
    fold,
    page_of,
    prefix_upper_bound,
    seq_conflict,
)
from youyou.adapters.storage.codec import (
    HeadSlot,
    decode_event,
    decode_events,
    encode_event,
    head_slot,
    metadata_key,
)
from youyou.adapters.storage.engine import (
    SqliteConnection,
    SqliteSynchronous,
    create_engine,
    migrate,
    transaction,
)
from youyou.adapters.storage.errors import session_not_found, storage_error
from youyou.adapters.storage.lease import RELEASE, SqlSessionLeases
from youyou.adapters.storage.sqlite_driver import DriverStatement, compiled_statement
from youyou.adapters.storage.tables import ledger_events, sessions, upsert_statement
from youyou.domain.ledger import LedgerEvent
from youyou.domain.session import (
    SearchMode,
    SessionHead,
    SessionListQuery,
    SessionPage,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.ports.session_lease import SessionLeases

SLOT_COLUMNS = {
    HeadSlot.PROFILE: sessions.c.profile_seq,
    HeadSlot.COMPACTION: sessions.c.compaction_seq,
    HeadSlot.CHECKPOINT: sessions.c.checkpoint_seq,
    HeadSlot.MEMORY_MODE: sessions.c.memory_mode_seq,
}
_SUMMARY_COLUMNS = (
    sessions.c.id,
    sessions.c.title,
    sessions.c.created_at,
    sessions.c.updated_at,
    sessions.c.message_count,
)
_EVENT_COLUMNS = (ledger_events.c.event_json, ledger_events.c.schema_version)
_NEWEST_FIRST = (sessions.c.updated_at.desc(), sessions.c.id.desc())
# ``through_seq`` NULL: no upper bound.
_EVENTS_BETWEEN = (
    select(*_EVENT_COLUMNS)
    .where(
        ledger_events.c.session_id == bindparam("session_id"),
        ledger_events.c.seq > bindparam("after_seq"),
        or_(
            bindparam("through_seq", type_=Integer).is_(None),
            ledger_events.c.seq <= bindparam("through_seq", type_=Integer),
        ),
    )
    .order_by(ledger_events.c.seq)
)
_HEAD = select(*_SUMMARY_COLUMNS, sessions.c.last_seq, *SLOT_COLUMNS.values()).where(
    sessions.c.id == bindparam("session_id")
)
_HEAD_NAMES = tuple(column.name for column in _HEAD.selected_columns)
_SLOT_NAMES = tuple(column.name for column in SLOT_COLUMNS.values())
_SESSION_ID = select(sessions.c.id).where(sessions.c.id == bindparam("id"))
# The head's metadata events; a slot that is NULL matches nothing.
_SLOT_EVENTS = select(*_EVENT_COLUMNS, ledger_events.c.seq).where(
    ledger_events.c.session_id == bindparam("session_id"),
    ledger_events.c.seq.in_([bindparam(name, type_=Integer) for name in _SLOT_NAMES]),
)


class SqlSessionStorage:
    """Open with ``await SqlSessionStorage.open(url)``; it migrates the schema first."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._postgresql = engine.dialect.name == "postgresql"
        self._sqlite = SqliteConnection(engine)

    @classmethod
    async def open(
        cls, url: str, *, sqlite_synchronous: SqliteSynchronous = "normal"
    ) -> SqlSessionStorage:
        engine = create_engine(url, sqlite_synchronous=sqlite_synchronous)
        try:
            await migrate(engine)
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine)

    @property
    def engine(self) -> AsyncEngine:
        """The engine, for callers that keep their own tables in the same database."""
        return self._engine

    def leases(self) -> SqlSessionLeases:
        """Session leases in the same database, over the same connection pool (on SQLite the
        same held connection as appends); taking one reads the session's last seq in the same
        statement (``LedgerLeases``)."""
        sqlite = None if self._postgresql else self._sqlite
        return SqlSessionLeases(self._engine, beside_ledger=True, sqlite=sqlite)

    async def close(self) -> None:
        await self._sqlite.close()
        await self._engine.dispose()

    def _transaction(
        self, action: str, *, write: bool = False
    ) -> AbstractAsyncContextManager[AsyncConnection]:
        return transaction(self._engine, action, write=write)

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        await self._append_event(session_id, event, summary, None)

    def keeps_leases(self, leases: SessionLeases) -> bool:
        """Leases on this storage's engine (``leases()``, or built on ``engine``)."""
        return isinstance(leases, SqlSessionLeases) and leases.engine is self._engine

    async def append_event_releasing(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary, *, holder: str
    ) -> None:
        """The append and ``holder``'s lease of the session deleted in one transaction: on
        SQLite in the append's one driver trip, on PostgreSQL one statement more in it."""
        await self._append_event(session_id, event, summary, holder)

    async def _append_event(
        self,
        session_id: str,
        event: LedgerEvent,
        summary: SessionSummary,
        releasing: str | None,
    ) -> None:
        """``releasing``: the holder whose lease of the session goes with the append."""
        action = append_action(session_id, event.seq, summary)
        slot = head_slot(event)
        values = {"id": session_id, **session_row(summary, event.seq)}
        if slot is not None:
            values[SLOT_COLUMNS[slot].name] = event.seq
        row = event_row(session_id, event)
        lease = None if releasing is None else {"session_id": session_id, "holder": releasing}
        if self._postgresql:
            async with self._transaction(action, write=True) as conn:
                result = await conn.execute(_upsert_session(True, slot), values)
                moved = result.rowcount == 1
                await conn.execute(ledger_events.insert(), row)
                if lease is not None:
                    await conn.execute(RELEASE, lease)
        else:
            dialect = self._engine.dialect
            upsert, insert = _sqlite_append(dialect, slot)
            release = None if lease is None else (compiled_statement(RELEASE, dialect), lease)
            append = partial(_append, upsert, values, insert, row, release)
            moved = await self._sqlite.write(action, append)
        if not moved:
            raise seq_conflict(action)

    async def load_events(self, session_id: str, after_seq: int = 0) -> Sequence[LedgerEvent]:
        action = f"loading session {session_id!r}"
        if self._postgresql:
            async with self._transaction(action) as conn:
                rows = await self._rows(conn, _EVENTS_BETWEEN, _between(session_id, after_seq))
                if not rows and not await self._rows(conn, _SESSION_ID, {"id": session_id}):
                    raise session_not_found(session_id)
        else:
            rows = await self._sqlite.read(
                action, partial(self._sqlite_events, session_id, after_seq)
            )
        return decode_events(rows)

    def _sqlite_events(
        self, session_id: str, after_seq: int, connection: sqlite3.Connection
    ) -> Sequence[tuple[str, int]]:
        """On the driver's thread: the rows after ``after_seq``, or SESSION_NOT_FOUND."""
        rows = self._driver(_EVENTS_BETWEEN).run_on(connection, _between(session_id, after_seq))
        if not rows and not self._driver(_SESSION_ID).run_on(connection, {"id": session_id}):
            raise session_not_found(session_id)
        return rows

    async def last_seq(self, session_id: str) -> int:
        """The newest seq, one indexed read: a process holding a session open compares it with
        its own to notice that another process appended meanwhile."""
        action = f"reading the last seq of session {session_id!r}"
        async with self._transaction(action) as conn:
            seq = (
                await conn.execute(select(sessions.c.last_seq).where(sessions.c.id == session_id))
            ).scalar_one_or_none()
        if seq is None:
            raise session_not_found(session_id)
        return int(seq)

    async def load_head(self, session_id: str) -> SessionHead:
        action = f"loading the head of session {session_id!r}"
        if self._postgresql:
            async with self._transaction(action) as conn:
                return await self._postgresql_head(conn, session_id, action)
        return await self._sqlite_head(session_id, action)

    async def load_session(
        self, session_id: str, events_after: Callable[[SessionHead], int]
    ) -> tuple[SessionHead, Sequence[LedgerEvent]]:
        """The head, then the events ``events_after`` asks for through the head's last seq.
        On SQLite these are two one-trip reads: later appends are past that bound and the
        events up to it never change, so the reads need not share a transaction."""
        action = f"loading session {session_id!r}"
        if self._postgresql:
            async with self._transaction(action) as conn:
                head = await self._postgresql_head(conn, session_id, action)
                values = _between(session_id, events_after(head), head.last_seq)
                rows = await self._rows(conn, _EVENTS_BETWEEN, values)
            return head, decode_events(rows)
        head = await self._sqlite_head(session_id, action)
        values = _between(session_id, events_after(head), head.last_seq)
        run = self._driver(_EVENTS_BETWEEN).run_on
        rows = await self._sqlite.read(action, partial(run, values=values))
        return head, decode_events(rows)

    async def _postgresql_head(
        self, conn: AsyncConnection, session_id: str, action: str
    ) -> SessionHead:
        found = await self._rows(conn, _HEAD, {"session_id": session_id})
        if not found:
            raise session_not_found(session_id)
        slots = _slot_values(found[0], session_id)
        return _head(session_id, action, found[0], await self._rows(conn, _SLOT_EVENTS, slots))

    async def _sqlite_head(self, session_id: str, action: str) -> SessionHead:
        read = partial(self._sqlite_head_rows, session_id)
        return _head(session_id, action, *await self._sqlite.read(action, read))

    def _sqlite_head_rows(self, session_id: str, connection: sqlite3.Connection) -> _HeadRows:
        """On the driver's thread: the head row and its metadata events, in one snapshot."""
        found = self._driver(_HEAD).run_on(connection, {"session_id": session_id})
        if not found:
            return None, ()
        slots = _slot_values(found[0], session_id)
        return found[0], self._driver(_SLOT_EVENTS).run_on(connection, slots)

    def _driver(self, statement: Select[Any]) -> DriverStatement:
        return _sqlite_statement(statement, self._engine.dialect)

    async def _rows(
        self, conn: AsyncConnection, statement: Select[Any], values: dict[str, Any]
    ) -> Sequence[tuple[Any, ...]]:
        """Rows as tuples: on SQLite in one trip to aiosqlite's thread, with SQLAlchemy's own
        result processing (dates) applied to the columns that need it."""
        if self._postgresql:
            return [tuple(row) for row in await conn.execute(statement, values)]
        return await self._driver(statement).run(conn, values)

    async def list_sessions(self, query: SessionListQuery) -> SessionPage:
        check_limit(query.limit)
        stmt = select(*_SUMMARY_COLUMNS).order_by(*_NEWEST_FIRST).limit(query.limit + 1)
        if query.cursor is not None:
            after = decode_cursor(query.cursor)
            key = tuple_(sessions.c.updated_at, sessions.c.id)
            stmt = stmt.where(key < tuple_(after.updated_at, after.session_id))
        async with self._transaction("listing sessions") as conn:
            rows = (await conn.execute(stmt)).all()
        return page_of([_summary(row._mapping) for row in rows], query.limit)

    async def find_sessions(
        self, query: SessionSearchQuery, limit: int
    ) -> Sequence[SessionSummary]:
        check_limit(limit)
        async with self._transaction("searching sessions") as conn:
            rows = (await conn.execute(_search(query, limit))).all()
        return [_summary(row._mapping) for row in rows]

    async def delete_session(self, session_id: str) -> None:
        async with self._transaction(f"deleting session {session_id!r}", write=True) as conn:
            result = await conn.execute(delete(sessions).where(sessions.c.id == session_id))
            if result.rowcount == 0:
                raise session_not_found(session_id)


_HeadRows = tuple[tuple[Any, ...] | None, Sequence[tuple[Any, ...]]]


def _between(session_id: str, after_seq: int, through_seq: int | None = None) -> dict[str, Any]:
    return {"session_id": session_id, "after_seq": after_seq, "through_seq": through_seq}


def _slot_values(head_row: tuple[Any, ...], session_id: str) -> dict[str, Any]:
    head = dict(zip(_HEAD_NAMES, head_row, strict=True))
    return {"session_id": session_id, **{name: head[name] for name in _SLOT_NAMES}}


def _head(
    session_id: str,
    action: str,
    head_row: tuple[Any, ...] | None,
    slot_rows: Sequence[tuple[Any, ...]],
) -> SessionHead:
    if head_row is None:
        raise session_not_found(session_id)
    head = dict(zip(_HEAD_NAMES, head_row, strict=True))
    events = {seq: decode_event(document, version) for document, version, seq in slot_rows}
    if head["profile_seq"] not in events:
        raise storage_error(f"{action}: the session has no session_profile event")
    return SessionHead(
        summary=_summary(head),
        last_seq=head["last_seq"],
        profile=events[head["profile_seq"]],
        latest_compaction=events.get(head["compaction_seq"]),
        latest_memory_checkpoint=events.get(head["checkpoint_seq"]),
        latest_memory_mode=events.get(head["memory_mode_seq"]),
    )


def event_row(session_id: str, event: LedgerEvent) -> dict[str, Any]:
    """The ``ledger_events`` row of ``event`` (benchmarks bulk-load these too)."""
    return {
        "session_id": session_id,
        "seq": event.seq,
        "timestamp": event.timestamp,
        "kind": event.payload.kind,
        "metadata_key": metadata_key(event),
        "schema_version": event.schema_version,
        "event_json": encode_event(event),
    }


@cache
def _upsert_session(postgresql_dialect: bool, slot: HeadSlot | None) -> Executable:
    """Insert or move the session row forward (only to a larger ``last_seq``), with the head
    pointer of ``slot``. Built once per dialect and slot, parameters bound at execution:
    building ``excluded`` for every append cost more than the rest of the append."""
    names = [*_SESSION_ROW_COLUMNS, *([SLOT_COLUMNS[slot].name] if slot else [])]
    dialect = "postgresql" if postgresql_dialect else "sqlite"
    stmt = upsert_statement(dialect, sessions).values(
        {name: bindparam(name) for name in ["id", *names]}
    )
    return stmt.on_conflict_do_update(
        index_elements=[sessions.c.id],
        set_={name: stmt.excluded[name] for name in names},
        where=sessions.c.last_seq < stmt.excluded.last_seq,
    )


def _sqlite_statement(statement: Select[Any], dialect: Dialect) -> DriverStatement:
    return compiled_statement(statement, dialect)


def _sqlite_append(dialect: Dialect, slot: HeadSlot | None) -> tuple[DriverStatement, ...]:
    """The append's two statements, compiled for the SQLite driver: the whole append is one
    trip to aiosqlite's thread (``SqliteConnection.write``) instead of three per statement through
    SQLAlchemy."""
    upsert, insert = _sqlite_append_statements(slot)
    return compiled_statement(upsert, dialect), compiled_statement(insert, dialect)


def _append(
    upsert: DriverStatement,
    values: dict[str, Any],
    insert: DriverStatement,
    row: dict[str, Any],
    release: tuple[DriverStatement, dict[str, Any]] | None,
    connection: sqlite3.Connection,
) -> bool:
    """On the driver's thread: move the session row, add the event, then delete the lease
    ``release`` names; False (nothing written) when the guard refused the move because
    another writer got there first."""
    if len(upsert.run_on(connection, values)) != 1:
        return False
    insert.run_on(connection, row)
    if release is not None:
        delete_lease, lease = release
        delete_lease.run_on(connection, lease)
    return True


@cache
def _sqlite_append_statements(slot: HeadSlot | None) -> tuple[ReturnsRows, ReturnsRows]:
    """The upsert returns the row it wrote, none when the guard refused it."""
    upsert = _upsert_session(False, slot).returning(sessions.c.last_seq)  # type: ignore[attr-defined]
    return upsert, ledger_events.insert()


_SESSION_ROW_COLUMNS = (
    "title",
    "title_folded",
    "created_at",
    "updated_at",
    "message_count",
    "last_seq",
)


def session_row(summary: SessionSummary, last_seq: int) -> dict[str, Any]:
    """The ``sessions`` columns an append sets (``_SESSION_ROW_COLUMNS``), besides ``id`` and
    the head pointers."""
    return {
        "title": summary.title,
        "title_folded": fold(summary.title),
        "created_at": summary.created_at,
        "updated_at": summary.updated_at,
        "message_count": summary.message_count,
        "last_seq": last_seq,
    }


def _search(query: SessionSearchQuery, limit: int) -> Select[Any]:
    """Each predicate gets its own index-friendly query; "either" is their UNION.

    (An OR makes PostgreSQL walk the updated_at index and filter every row.)
    """
    predicates = []
    if query.mode is not SearchMode.TITLE_CONTAINS:
        bound = prefix_upper_bound(query.text)
        by_id = sessions.c.id >= query.text
        predicates.append(by_id if bound is None else and_(by_id, sessions.c.id < bound))
    if query.mode is not SearchMode.ID_PREFIX:
        predicates.append(sessions.c.title_folded.contains(fold(query.text), autoescape=True))
    branches = [
        select(*_SUMMARY_COLUMNS).where(p).order_by(*_NEWEST_FIRST).limit(limit) for p in predicates
    ]
    if len(branches) == 1:
        return branches[0]
    either = union(*(select(b.subquery()) for b in branches)).subquery()
    return select(either).order_by(either.c.updated_at.desc(), either.c.id.desc()).limit(limit)


def _summary(row: Mapping[Any, Any]) -> SessionSummary:
    return SessionSummary(
        session_id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        message_count=row["message_count"],
    )
