"""Accounts and their bearer tokens (only a hash of each token is stored)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime
from uuid import uuid4

from sqlalchemy import BindParameter, ColumnElement, and_, delete, or_, select, update

from youyou.adapters.storage.catalog import fold
from youyou.workbench.store.base import StoreBase, columns_of, now
from youyou.workbench.store.records import MEMBER, InviteUnusable, UsernameTaken, UserRecord
from youyou.workbench.store.tables import invites, tokens, users

_USER = columns_of(users, UserRecord)


class UserTokenQueries(StoreBase):
    async def create_user(
        self,
        username: str,
        password_hash: str,
        role: str = MEMBER,
        *,
        invite_hash: str | None = None,
    ) -> UserRecord:
        """Raises ``UsernameTaken`` also when a concurrent sign-up wins the same name. With
        ``invite_hash`` the invite is used up in the same transaction, so it admits one account
        (``InviteUnusable`` when it is unknown, used or expired; nothing is created then)."""
        user = UserRecord(str(uuid4()), username, password_hash, now(), role)
        stmt = (
            self._insert(users)
            .values(**asdict(user), username_folded=fold(username))
            .on_conflict_do_nothing(index_elements=[users.c.username_folded])
        )
        async with self._transaction("creating a user", write=True) as conn:
            if invite_hash is not None:
                used = update(invites).where(
                    invites.c.token_hash == invite_hash,
                    invites.c.used_at.is_(None),
                    invites.c.expires_at > user.created_at,
                )
                if (await conn.execute(used.values(used_at=user.created_at))).rowcount != 1:
                    raise InviteUnusable
            inserted = (await conn.execute(stmt)).rowcount
            if inserted == 0:
                raise UsernameTaken(username)
        return user

    async def user_by_name(self, username: str) -> UserRecord | None:
        query = select(*_USER).where(users.c.username_folded == fold(username))
        async with self._transaction("looking up a user") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else UserRecord(*row)

    async def user(self, user_id: str) -> UserRecord | None:
        query = select(*_USER).where(users.c.id == user_id)
        async with self._transaction("loading a user") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else UserRecord(*row)

    async def users_by_names(self, usernames: Iterable[str]) -> list[UserRecord]:
        """The accounts that have these names now (folded), for binding access lists."""
        folded = sorted({fold(name) for name in usernames})
        query = select(*_USER).where(users.c.username_folded.in_(folded))
        async with self._transaction("looking up users") as conn:
            return [UserRecord(*row) for row in await conn.execute(query)]

    async def set_password_hash(self, user_id: str, password_hash: str) -> None:
        stmt = update(users).where(users.c.id == user_id).values(password_hash=password_hash)
        async with self._transaction("changing a password", write=True) as conn:
            await conn.execute(stmt)

    async def add_token(self, user_id: str, token_hash: str, expires_at: datetime) -> None:
        row = {
            "token_hash": token_hash,
            "user_id": user_id,
            "created_at": now(),
            "expires_at": expires_at,
        }
        async with self._transaction("storing a token", write=True) as conn:
            await conn.execute(tokens.insert().values(row))

    async def user_for_token(self, token_hash: str, now: datetime) -> UserRecord | None:
        """The token's user while the token is live (known, not revoked, not expired) and the
        account is not disabled: read on every request, so disabling takes effect at once in
        every process."""
        query = (
            select(*_USER)
            .select_from(tokens.join(users, tokens.c.user_id == users.c.id))
            .where(live_token(token_hash, now))
        )
        async with self._transaction("checking a token") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else UserRecord(*row)

    async def revoke_token(self, token_hash: str) -> None:
        """Idempotent: the first revocation time is kept."""
        stmt = (
            update(tokens)
            .where(tokens.c.token_hash == token_hash, tokens.c.revoked_at.is_(None))
            .values(revoked_at=now())
        )
        async with self._transaction("revoking a token", write=True) as conn:
            await conn.execute(stmt)

    async def revoke_user_tokens(self, user_id: str, keep: str | None = None) -> None:
        """Every live token of the user except the one whose hash is ``keep``."""
        stmt = (
            update(tokens)
            .where(tokens.c.user_id == user_id, tokens.c.revoked_at.is_(None))
            .values(revoked_at=now())
        )
        if keep is not None:
            stmt = stmt.where(tokens.c.token_hash != keep)
        async with self._transaction("revoking a user's tokens", write=True) as conn:
            await conn.execute(stmt)

    async def purge_tokens(self, before: datetime, user_id: str | None = None) -> int:
        """Deletes the rows of tokens that no longer sign anyone in (revoked, or expired before
        ``before``), of one user or of all; returns how many went."""
        stmt = delete(tokens).where(
            or_(tokens.c.revoked_at.is_not(None), tokens.c.expires_at <= before)
        )
        if user_id is not None:
            stmt = stmt.where(tokens.c.user_id == user_id)
        async with self._transaction("purging tokens", write=True) as conn:
            purged: int = (await conn.execute(stmt)).rowcount
        return purged


def live_token(
    token_hash: str | BindParameter[str], now: datetime | BindParameter[datetime]
) -> ColumnElement[bool]:
    """Over ``tokens`` joined to ``users``: the token is known, not revoked nor expired, and
    its account is not disabled."""
    return and_(
        tokens.c.token_hash == token_hash,
        tokens.c.revoked_at.is_(None),
        tokens.c.expires_at > now,
        users.c.disabled_at.is_(None),
    )
