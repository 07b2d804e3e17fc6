"""Groups an administrator manages, and one-time sign-up invites."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from uuid import uuid4

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.storage.catalog import fold
from youyou.workbench.store.base import StoreBase, now
from youyou.workbench.store.records import GroupRecord
from youyou.workbench.store.tables import group_members, groups, invites, users


class GroupNameTaken(Exception):
    """A group with this name (compared case-insensitively) exists already."""


class GroupQueries(StoreBase):
    async def list_groups(self) -> list[GroupRecord]:
        """Every group with its members' ids, by name."""
        async with self._transaction("listing groups") as conn:
            rows = (await conn.execute(select(groups).order_by(groups.c.name_folded))).all()
            links = (await conn.execute(select(group_members))).all()
        members: dict[str, list[str]] = defaultdict(list)
        for group_id, user_id in links:
            members[group_id].append(user_id)
        return [
            GroupRecord(row.id, row.name, row.created_at, tuple(sorted(members[row.id])))
            for row in rows
        ]

    async def create_group(self, name: str) -> GroupRecord:
        group = GroupRecord(str(uuid4()), name, now(), ())
        stmt = (
            self._insert(groups)
            .values(id=group.id, name=name, name_folded=fold(name), created_at=group.created_at)
            .on_conflict_do_nothing(index_elements=[groups.c.name_folded])
        )
        async with self._transaction("creating a group", write=True) as conn:
            if (await conn.execute(stmt)).rowcount == 0:
                raise GroupNameTaken(name)
        return group

    async def delete_group(self, group_id: str) -> bool:
        async with self._transaction("deleting a group", write=True) as conn:
            return bool(
                (await conn.execute(delete(groups).where(groups.c.id == group_id))).rowcount
            )

    async def add_member(self, group_id: str, user_id: str) -> bool:
        """Idempotent; False when the group or the account does not exist."""
        stmt = (
            self._insert(group_members)
            .values(group_id=group_id, user_id=user_id)
            .on_conflict_do_nothing(
                index_elements=[group_members.c.group_id, group_members.c.user_id]
            )
        )
        async with self._transaction("adding a group member", write=True) as conn:
            group = await conn.execute(select(groups.c.id).where(groups.c.id == group_id))
            user = await conn.execute(select(users.c.id).where(users.c.id == user_id))
            if group.first() is None or user.first() is None:
                return False
            await conn.execute(stmt)
        return True

    async def remove_member(self, group_id: str, user_id: str) -> bool:
        stmt = delete(group_members).where(
            group_members.c.group_id == group_id, group_members.c.user_id == user_id
        )
        async with self._transaction("removing a group member", write=True) as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def group_names_of(self, user_id: str) -> frozenset[str]:
        """The folded names of the user's groups, which ``groups`` access lists match."""
        async with self._transaction("reading a user's groups") as conn:
            return await group_names(conn, user_id)

    async def add_invite(self, token_hash: str, created_by: str, expires_at: datetime) -> None:
        row = {
            "token_hash": token_hash,
            "created_by": created_by,
            "created_at": now(),
            "expires_at": expires_at,
        }
        async with self._transaction("storing an invite", write=True) as conn:
            await conn.execute(invites.insert().values(row))

    async def invite_usable(self, token_hash: str) -> bool:
        """Known, unused and unexpired now (it is used up only with the account it creates)."""
        query = select(invites.c.token_hash).where(
            invites.c.token_hash == token_hash,
            invites.c.used_at.is_(None),
            invites.c.expires_at > now(),
        )
        async with self._transaction("checking an invite") as conn:
            return (await conn.execute(query)).first() is not None


# The folded names of a user's groups (``user_id``).
GROUP_NAMES = (
    select(groups.c.name_folded)
    .select_from(group_members.join(groups, group_members.c.group_id == groups.c.id))
    .where(group_members.c.user_id == bindparam("user_id"))
)


async def group_names(conn: AsyncConnection, user_id: str) -> frozenset[str]:
    return frozenset((await conn.execute(GROUP_NAMES, {"user_id": user_id})).scalars())
