"""Single sign-on: sign-ons under way (each ``state`` used once) and the accounts of a
provider's users, found by (issuer, subject) and kept in step with the provider's groups."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import uuid4

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.storage.catalog import fold
from youyou.workbench.store.base import StoreBase, columns_of, now
from youyou.workbench.store.records import UsernameTaken, UserRecord
from youyou.workbench.store.tables import group_members, groups, identities, oidc_logins, users

_USER = columns_of(users, UserRecord)
# Never a valid Argon2 hash: an account made by single sign-on has no password.
NO_PASSWORD = "!sso"


class IdentityQueries(StoreBase):
    async def add_oidc_login(
        self, state_hash: str, nonce: str, code_verifier: str, expires_at: datetime
    ) -> None:
        """Stores a sign-on under way; the expired ones go at the same time."""
        row = {
            "state_hash": state_hash,
            "nonce": nonce,
            "code_verifier": code_verifier,
            "expires_at": expires_at,
        }
        async with self._transaction("starting a single sign-on", write=True) as conn:
            await conn.execute(delete(oidc_logins).where(oidc_logins.c.expires_at <= now()))
            await conn.execute(oidc_logins.insert().values(row))

    async def take_oidc_login(self, state_hash: str) -> tuple[str, str] | None:
        """(nonce, code verifier) of an unexpired sign-on, which is used up: a replayed state
        finds nothing."""
        where = (oidc_logins.c.state_hash == state_hash, oidc_logins.c.expires_at > now())
        query = select(oidc_logins.c.nonce, oidc_logins.c.code_verifier).where(*where)
        async with self._transaction("finishing a single sign-on", write=True) as conn:
            row = (await conn.execute(query)).one_or_none()
            if row is None or (await conn.execute(delete(oidc_logins).where(*where))).rowcount != 1:
                return None
        return row.nonce, row.code_verifier

    async def sso_account(
        self, issuer: str, subject: str, username: str, role: str, group_names: Sequence[str]
    ) -> UserRecord:
        """The account of this provider user, made on first sign-in under ``username``
        (``UsernameTaken`` when another account has it); its role and groups are set to what
        the provider says now, groups created as needed."""
        found = select(identities.c.user_id).where(
            identities.c.issuer == issuer, identities.c.subject == subject
        )
        async with self._transaction("signing in through the provider", write=True) as conn:
            user_id = (await conn.execute(found)).scalar_one_or_none()
            if user_id is None:
                user_id = await _new_account(self, conn, username, role)
                await conn.execute(
                    identities.insert().values(issuer=issuer, subject=subject, user_id=user_id)
                )
            await conn.execute(update(users).where(users.c.id == user_id).values(role=role))
            await _set_groups(self, conn, user_id, group_names)
            return UserRecord(
                *(await conn.execute(select(*_USER).where(users.c.id == user_id))).one()
            )


async def _new_account(store: StoreBase, conn: AsyncConnection, username: str, role: str) -> str:
    user = UserRecord(str(uuid4()), username, NO_PASSWORD, now(), role)
    stmt = (
        store._insert(users)
        .values(
            id=user.id,
            username=username,
            username_folded=fold(username),
            password_hash=NO_PASSWORD,
            created_at=user.created_at,
            role=role,
        )
        .on_conflict_do_nothing(index_elements=[users.c.username_folded])
    )
    if (await conn.execute(stmt)).rowcount == 0:
        raise UsernameTaken(username)
    return user.id


async def _set_groups(
    store: StoreBase, conn: AsyncConnection, user_id: str, names: Sequence[str]
) -> None:
    wanted = {fold(name): name for name in names if name.strip()}
    for folded, name in wanted.items():
        await conn.execute(
            store._insert(groups)
            .values(id=str(uuid4()), name=name, name_folded=folded, created_at=now())
            .on_conflict_do_nothing(index_elements=[groups.c.name_folded])
        )
    ids = select(groups.c.id).where(groups.c.name_folded.in_(sorted(wanted)))
    group_ids = list((await conn.execute(ids)).scalars())
    await conn.execute(
        delete(group_members).where(
            group_members.c.user_id == user_id, group_members.c.group_id.not_in(group_ids)
        )
    )
    for group_id in group_ids:
        await conn.execute(
            store._insert(group_members)
            .values(group_id=group_id, user_id=user_id)
            .on_conflict_do_nothing(
                index_elements=[group_members.c.group_id, group_members.c.user_id]
            )
        )
