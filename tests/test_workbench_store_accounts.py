"""Roles, disabled accounts, groups, invites and the deletion of an account in the workbench
store, on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from youyou.adapters.storage.engine import create_engine
from youyou.workbench.store import (
    ADMIN,
    MEMBER,
    GroupNameTaken,
    InviteUnusable,
    UsernameTaken,
    WorkbenchStore,
    migrate_workbench,
)
from youyou.workbench.store.tables import users


async def test_users_made_before_roles_existed_become_members(db_url: str) -> None:
    engine = create_engine(db_url)
    try:
        await migrate_workbench(engine, "wb0002")
        row = {
            "id": "old-1",
            "username": "Olga",
            "username_folded": "olga",
            "password_hash": "h",
            "created_at": datetime.now(UTC),
        }
        async with engine.begin() as conn:
            await conn.execute(insert(users).values(row))
        await migrate_workbench(engine)
        async with engine.connect() as conn:
            found = (await conn.execute(select(users.c.role, users.c.disabled_at))).one()
    finally:
        await engine.dispose()
    assert tuple(found) == (MEMBER, None)


async def test_tokens_of_a_disabled_account_stop_and_stay_revoked(store: WorkbenchStore) -> None:
    user = await store.create_user("dana", "h")
    later = datetime.now(UTC) + timedelta(hours=1)
    await store.add_token(user.id, "t1", later)
    now = datetime.now(UTC)
    assert (await store.user_for_token("t1", now)) == user
    assert await store.set_disabled(user.id, True)
    assert await store.user_for_token("t1", now) is None
    assert await store.set_disabled(user.id, True)  # idempotent
    assert await store.set_disabled(user.id, False)
    assert await store.user_for_token("t1", now) is None  # enabling does not revive tokens
    assert not await store.set_disabled("nobody", True)


async def test_configured_admins_are_promoted_by_name(store: WorkbenchStore) -> None:
    carol = await store.create_user("Carol", "h")
    dave = await store.create_user("dave", "h", ADMIN)
    promoted = await store.promote_names(["CAROL", "nobody"])
    assert [u.id for u in promoted] == [carol.id]
    assert promoted[0].is_admin
    assert {u.username: u.role for u in await store.list_users()} == {
        "Carol": ADMIN,
        "dave": ADMIN,
    }
    assert await store.set_role(dave.id, MEMBER)
    assert not (await store.user_by_id(dave.id) or dave).is_admin


async def test_groups_have_unique_names_and_members(store: WorkbenchStore) -> None:
    erin = await store.create_user("erin", "h")
    sre = await store.create_user("sre-bot", "h")
    group = await store.create_group("SRE")
    with pytest.raises(GroupNameTaken):
        await store.create_group("sre")
    assert await store.add_member(group.id, erin.id)
    assert await store.add_member(group.id, erin.id)  # idempotent
    assert not await store.add_member(group.id, "nobody")
    assert not await store.add_member("no-group", erin.id)
    assert await store.group_names_of(erin.id) == frozenset({"sre"})
    assert await store.group_names_of(sre.id) == frozenset()
    [listed] = await store.list_groups()
    assert (listed.name, listed.member_ids) == ("SRE", (erin.id,))
    assert await store.remove_member(group.id, erin.id)
    assert not await store.remove_member(group.id, erin.id)
    assert await store.delete_group(group.id)
    assert await store.list_groups() == []


async def test_an_invite_admits_one_account_before_it_expires(store: WorkbenchStore) -> None:
    admin = await store.create_user("root", "h", ADMIN)
    soon = datetime.now(UTC) + timedelta(hours=1)
    await store.add_invite("inv-1", admin.id, soon)
    await store.add_invite("inv-old", admin.id, datetime.now(UTC) - timedelta(seconds=1))
    assert await store.invite_usable("inv-1")
    assert not await store.invite_usable("inv-old")
    with pytest.raises(UsernameTaken):  # a refused sign-up does not use the invite up
        await store.create_user("ROOT", "h", invite_hash="inv-1")
    assert await store.invite_usable("inv-1")
    await store.create_user("fay", "h", invite_hash="inv-1")
    assert not await store.invite_usable("inv-1")
    for used_or_old in ("inv-1", "inv-old", "unknown"):
        with pytest.raises(InviteUnusable):
            await store.create_user("gus", "h", invite_hash=used_or_old)
    assert await store.user_by_name("gus") is None
