"""What a send reads before its turn starts, in one read transaction: the sender's account
(by bearer token), the session's row and the sender's prompts, skills, selection and groups.

Each is read fresh on every send, as the separate reads were (a revoked token, a disabled
account or a prompt changed through another process counts from the next send); one
transaction, in one trip to the driver (``one_trip.py``), where there were three.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, select

from youyou.workbench.store.assets import owner_assets
from youyou.workbench.store.base import StoreBase, columns_of
from youyou.workbench.store.one_trip import Run
from youyou.workbench.store.records import ChatSessionRecord, OwnerAssets, UserRecord
from youyou.workbench.store.tables import chat_sessions, tokens, users
from youyou.workbench.store.users import live_token

_USER = columns_of(users, UserRecord)
_CHAT = columns_of(chat_sessions, ChatSessionRecord)
# The token's user (``token_hash`` live at ``now``) and the row of ``chat_id``, if any.
_SENDER = (
    select(*_USER, *_CHAT)
    .select_from(
        tokens.join(users, tokens.c.user_id == users.c.id).outerjoin(
            chat_sessions, chat_sessions.c.id == bindparam("chat_id", type_=chat_sessions.c.id.type)
        )
    )
    .where(
        live_token(
            bindparam("token_hash", type_=tokens.c.token_hash.type),
            bindparam("now", type_=tokens.c.expires_at.type),
        )
    )
)
_CHAT_ROW = select(*_CHAT).where(chat_sessions.c.id == bindparam("chat_id"))


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

        def work(run: Run) -> SendReads | None:
            found = run(_SENDER, {"token_hash": token_hash, "now": now, "chat_id": chat_id})
            if not found:
                return None
            row = found[0]
            user = UserRecord(*row[: len(_USER)])
            chat = None if row[len(_USER)] is None else ChatSessionRecord(*row[len(_USER) :])
            return _reads(run, user, chat)

        return await self._one_trip.run("checking a token and reading a send's session", work)

    async def send_reads_of(self, user: UserRecord, chat_id: str) -> SendReads:
        """``send_reads`` for a user whose token was already checked (a large body's)."""

        def work(run: Run) -> SendReads:
            found = run(_CHAT_ROW, {"chat_id": chat_id})
            return _reads(run, user, ChatSessionRecord(*found[0]) if found else None)

        return await self._one_trip.run("reading a send's session", work)


def _reads(run: Run, user: UserRecord, chat: ChatSessionRecord | None) -> SendReads:
    owned = chat is not None and chat.owner_id == user.id
    return SendReads(user, chat, owner_assets(run, user.id) if owned else None)
