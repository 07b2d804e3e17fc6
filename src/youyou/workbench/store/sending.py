"""What a send reads before its turn starts, in one read transaction: the sender's account
(by bearer token), the session's row and the sender's prompts, skills, selection and groups.

Each is read fresh on every send, as the separate reads were (a revoked token, a disabled
account or a prompt changed through another process counts from the next send); one
transaction is one trip to the database where there were three.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from youyou.workbench.store.assets import owner_assets
from youyou.workbench.store.base import StoreBase, columns_of
from youyou.workbench.store.records import ChatSessionRecord, OwnerAssets, UserRecord
from youyou.workbench.store.tables import chat_sessions, tokens, users
from youyou.workbench.store.users import live_token

_USER = columns_of(users, UserRecord)
_CHAT = columns_of(chat_sessions, ChatSessionRecord)


@dataclass(frozen=True, slots=True)
class SendReads:
    user: UserRecord
    chat: ChatSessionRecord | None
    """The session's row, whoever owns it; None when there is no such session."""
    assets: OwnerAssets | None
    """The user's own assets; read only when the session is the user's."""


class SendQueries(StoreBase):
    async def send_reads(self, token_hash: str, now: datetime, chat_id: str) -> SendReads | None:
        """None when the token signs nobody in (see ``user_for_token``); the token and the
        session's row are one statement."""
        query = (
            select(*_USER, *_CHAT)
            .select_from(
                tokens.join(users, tokens.c.user_id == users.c.id).outerjoin(
                    chat_sessions, chat_sessions.c.id == chat_id
                )
            )
            .where(live_token(token_hash, now))
        )
        async with self._transaction("checking a token and reading a send's session") as conn:
            row = (await conn.execute(query)).one_or_none()
            if row is None:
                return None
            user = UserRecord(*row[: len(_USER)])
            chat = None if row[len(_USER)] is None else ChatSessionRecord(*row[len(_USER) :])
            owned = chat is not None and chat.owner_id == user.id
            assets = await owner_assets(conn, user.id) if owned else None
        return SendReads(user, chat, assets)

    async def send_reads_of(self, user: UserRecord, chat_id: str) -> SendReads:
        """``send_reads`` for a user whose token was already checked (a large body's)."""
        query = select(*_CHAT).where(chat_sessions.c.id == chat_id)
        async with self._transaction("reading a send's session") as conn:
            row = (await conn.execute(query)).one_or_none()
            chat = None if row is None else ChatSessionRecord(*row)
            owned = chat is not None and chat.owner_id == user.id
            assets = await owner_assets(conn, user.id) if owned else None
        return SendReads(user, chat, assets)
