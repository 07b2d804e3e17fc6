"""Searching the text of a user's messages: the indexed text of each user and assistant
message (filled by ``workbench/message_index.py``), matched like titles are — every word of the
query contained in the folded text — on both databases."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, exists, func, or_, select, tuple_

from youyou.adapters.storage.catalog import SortKey, encode_cursor, fold
from youyou.workbench.store.base import StoreBase, columns_of
from youyou.workbench.store.chat_sessions import decode_session_cursor
from youyou.workbench.store.records import ChatSessionRecord
from youyou.workbench.store.tables import chat_sessions, message_texts

_CHAT = columns_of(chat_sessions, ChatSessionRecord)
MAX_TERMS = 8
INSERT_BATCH = 500  # rows per INSERT: SQLite caps the bound values of one statement


@dataclass(frozen=True, slots=True)
class MessageText:
    seq: int
    role: str
    body: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SessionHit:
    """A session that matched, and its newest matching message (None: the title matched)."""

    session: ChatSessionRecord
    message: MessageText | None


def search_terms(query: str) -> list[str]:
    """The folded words of a query, at most ``MAX_TERMS``, each once."""
    return list(dict.fromkeys(fold(query).split()))[:MAX_TERMS]


def _contains_all(column: ColumnElement[str], terms: Sequence[str]) -> ColumnElement[bool]:
    return and_(*(column.contains(term, autoescape=True) for term in terms))


class MessageTextQueries(StoreBase):
    async def index_messages(self, chat_session_id: str, texts: Sequence[MessageText]) -> None:
        """Idempotent: a message indexed twice stays one row."""
        if not texts:
            return
        rows = text_rows(chat_session_id, texts)
        async with self._transaction("indexing message text", write=True) as conn:
            for start in range(0, len(rows), INSERT_BATCH):
                batch = rows[start : start + INSERT_BATCH]
                await conn.execute(
                    self._insert(message_texts).values(batch).on_conflict_do_nothing()
                )

    async def index_messages_after(
        self, chat_session_id: str, known_after: int, texts: Sequence[MessageText]
    ) -> bool:
        """``texts``, the messages after seq ``known_after`` as the caller has them, indexed
        in one transaction, those already indexed left out; False, and nothing written, when
        the index does not reach ``known_after`` yet (the caller reads the ledger instead)."""
        async with self._transaction("indexing message text", write=True) as conn:
            key = {"chat_session_id": chat_session_id}
            through = int((await conn.execute(INDEXED_THROUGH, key)).scalar_one())
            if through < known_after:
                return False
            rows = text_rows(chat_session_id, [t for t in texts if t.seq > through])
            for start in range(0, len(rows), INSERT_BATCH):
                batch = rows[start : start + INSERT_BATCH]
                await conn.execute(
                    self._insert(message_texts).values(batch).on_conflict_do_nothing()
                )
        return True

    async def indexed_through(self, chat_session_id: str) -> int:
        """The newest ledger seq indexed for the session (0: none)."""
        async with self._transaction("reading the message index") as conn:
            key = {"chat_session_id": chat_session_id}
            return int((await conn.execute(INDEXED_THROUGH, key)).scalar_one())

    async def unindexed_chat_sessions(self, limit: int) -> list[ChatSessionRecord]:
        """Sessions with messages but no indexed text (from before the index existed)."""
        indexed = exists().where(message_texts.c.chat_session_id == chat_sessions.c.id)
        query = (
            select(*_CHAT)
            .where(chat_sessions.c.message_count > 0, ~indexed)
            .order_by(chat_sessions.c.updated_at.desc())
            .limit(limit)
        )
        async with self._transaction("finding unindexed sessions") as conn:
            return [ChatSessionRecord(*row) for row in (await conn.execute(query)).all()]

    async def search_chat_sessions(
        self, owner_id: str, query: str, *, limit: int, cursor: str | None
    ) -> tuple[list[SessionHit], str | None]:
        """The owner's sessions whose title or any message text contains every word of
        ``query`` (case-insensitively), newest first with the list's keyset cursor, each with
        its newest matching message. Raises ValueError for a malformed cursor or no words."""
        terms = search_terms(query)
        if not terms or limit < 1:
            raise ValueError("a search needs a word and a limit of at least 1")
        message_matches = _contains_all(message_texts.c.body_folded, terms)
        in_messages = exists().where(
            message_texts.c.chat_session_id == chat_sessions.c.id, message_matches
        )
        stmt = (
            select(*_CHAT)
            .where(
                chat_sessions.c.owner_id == owner_id,
                or_(_contains_all(chat_sessions.c.title_folded, terms), in_messages),
            )
            .order_by(chat_sessions.c.updated_at.desc(), chat_sessions.c.id.desc())
            .limit(limit + 1)
        )
        if cursor is not None:
            after = decode_session_cursor(cursor)
            key = tuple_(chat_sessions.c.updated_at, chat_sessions.c.id)
            stmt = stmt.where(key < tuple_(after.updated_at, after.session_id))
        async with self._transaction("searching chat sessions") as conn:
            rows = (await conn.execute(stmt)).all()
            page = [ChatSessionRecord(*row) for row in rows[:limit]]
            ids = [chat.id for chat in page]
            newest = (
                (await conn.execute(_newest_matches(ids, message_matches))).all() if ids else []
            )
        found = {
            row.chat_session_id: MessageText(row.seq, row.role, row.body, row.created_at)
            for row in newest
        }
        hits = [SessionHit(chat, found.get(chat.id)) for chat in page]
        more = len(rows) > limit
        return hits, encode_cursor(SortKey(page[-1].updated_at, page[-1].id)) if more else None


def _newest_matches(session_ids: list[str], matches: ColumnElement[bool]) -> Select[Any]:
    """Each session's newest message that matches."""
    ranked = (
        select(
            message_texts.c.chat_session_id,
            message_texts.c.seq,
            message_texts.c.role,
            message_texts.c.body,
            message_texts.c.created_at,
            func.row_number()
            .over(partition_by=message_texts.c.chat_session_id, order_by=message_texts.c.seq.desc())
            .label("rank"),
        )
        .where(message_texts.c.chat_session_id.in_(session_ids), matches)
        .subquery()
    )
    return select(ranked).where(ranked.c.rank == 1)


# The newest seq indexed for ``chat_session_id`` (0: none).
INDEXED_THROUGH = select(func.coalesce(func.max(message_texts.c.seq), 0)).where(
    message_texts.c.chat_session_id == bindparam("chat_session_id")
)


def text_rows(chat_session_id: str, texts: Sequence[MessageText]) -> list[dict[str, Any]]:
    return [
        {
            "chat_session_id": chat_session_id,
            "seq": t.seq,
            "role": t.role,
            "body": t.body,
            "body_folded": fold(t.body),
            "created_at": t.created_at,
        }
        for t in texts
    ]
