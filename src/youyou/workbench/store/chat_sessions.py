"""The workbench's index of chat sessions: owner, model and a projection of the kernel ledger.

Listed newest first by ``(updated_at, id)`` descending with the kernel catalog's opaque
keyset cursor, so a page never repeats or skips a session while others are being added.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Update, and_, case, delete, func, or_, select, tuple_, update

from youyou.adapters.storage.catalog import (
    SortKey,
    decode_cursor,
    encode_cursor,
    fold,
    prefix_upper_bound,
)
from youyou.domain.errors import AgentError
from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.store.base import StoreBase, columns_of
from youyou.workbench.store.records import ChatSessionRecord, SessionProjection
from youyou.workbench.store.tables import chat_sessions

_CHAT = columns_of(chat_sessions, ChatSessionRecord)


class ChatSessionQueries(StoreBase):
    async def create_chat_session(self, record: ChatSessionRecord) -> None:
        async with self._transaction("creating a chat session", write=True) as conn:
            await conn.execute(chat_sessions.insert().values(_row(record)))

    async def count_chat_sessions(self, owner_id: str) -> int:
        query = select(func.count()).where(chat_sessions.c.owner_id == owner_id)
        async with self._transaction("counting chat sessions") as conn:
            return int((await conn.execute(query)).scalar_one())

    async def chat_session(self, session_id: str) -> ChatSessionRecord | None:
        """Not scoped by owner: the caller tells "someone else's" (403) from "unknown" (404)."""
        query = select(*_CHAT).where(chat_sessions.c.id == session_id)
        async with self._transaction("loading a chat session") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else ChatSessionRecord(*row)

    async def list_chat_sessions(
        self,
        owner_id: str,
        *,
        limit: int,
        cursor: str | None,
        query: str | None,
        since: datetime | None = None,
    ) -> tuple[list[ChatSessionRecord], str | None]:
        """One page and the cursor of the next (None on the last page).

        ``query`` keeps sessions whose id starts with it (exactly) or whose title contains it
        (case-insensitively); ``since`` those created or active at or after that moment.
        Raises ValueError for a limit below 1 or a malformed cursor.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        stmt = (
            select(*_CHAT)
            .where(chat_sessions.c.owner_id == owner_id)
            .order_by(chat_sessions.c.updated_at.desc(), chat_sessions.c.id.desc())
            .limit(limit + 1)
        )
        if cursor is not None:
            after = decode_session_cursor(cursor)
            key = tuple_(chat_sessions.c.updated_at, chat_sessions.c.id)
            stmt = stmt.where(key < tuple_(after.updated_at, after.session_id))
        if since is not None:
            stmt = stmt.where(chat_sessions.c.updated_at >= since)
        if query:
            stmt = stmt.where(
                or_(
                    _id_starts_with(query),
                    chat_sessions.c.title_folded.contains(fold(query), autoescape=True),
                )
            )
        async with self._transaction("listing chat sessions") as conn:
            rows = (await conn.execute(stmt)).all()
        page = [ChatSessionRecord(*row) for row in rows[:limit]]
        more = len(rows) > limit
        return page, encode_cursor(SortKey(page[-1].updated_at, page[-1].id)) if more else None

    async def update_chat_session(self, session_id: str, projection: SessionProjection) -> bool:
        """Replace the projection; False if there is no such session. The projection's title
        replaces only the untitled placeholder, so a rename made while a turn ran is kept."""
        async with self._transaction("updating a chat session", write=True) as conn:
            return bool((await conn.execute(projection_update(session_id, projection))).rowcount)

    async def rename_chat_session(self, session_id: str, title: str) -> bool:
        """The title the user chose; False if there is no such session. The order of the
        list (``updated_at``) stays: renaming is not activity."""
        stmt = (
            update(chat_sessions)
            .where(chat_sessions.c.id == session_id)
            .values(title=title, title_folded=fold(title))
        )
        async with self._transaction("renaming a chat session", write=True) as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def delete_chat_session(self, session_id: str) -> bool:
        stmt = delete(chat_sessions).where(chat_sessions.c.id == session_id)
        async with self._transaction("deleting a chat session", write=True) as conn:
            return bool((await conn.execute(stmt)).rowcount)


def projection_update(session_id: str, projection: SessionProjection) -> Update:
    """The projection's title replaces only the untitled placeholder."""
    row = _row(projection)
    untitled = chat_sessions.c.title == UNTITLED_SESSION
    for column in ("title", "title_folded"):
        row[column] = case((untitled, row[column]), else_=chat_sessions.c[column])
    return update(chat_sessions).where(chat_sessions.c.id == session_id).values(row)


def _row(fields: ChatSessionRecord | SessionProjection) -> dict[str, Any]:
    """The columns of ``fields``, with the folded title that search matches."""
    return {**asdict(fields), "title_folded": fold(fields.title)}


def decode_session_cursor(cursor: str) -> SortKey:
    """The list's keyset position; ValueError for a malformed cursor."""
    try:
        return decode_cursor(cursor)
    except AgentError as exc:
        raise ValueError("malformed chat session cursor") from exc


def _id_starts_with(prefix: str) -> ColumnElement[bool]:
    """A range on the id (code point order on both databases: no LIKE, no escaping)."""
    bound = prefix_upper_bound(prefix)
    at_least = chat_sessions.c.id >= prefix
    return at_least if bound is None else and_(at_least, chat_sessions.c.id < bound)
