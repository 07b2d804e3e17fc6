"""What an administrator does to accounts: list them, change a role, disable and enable, and
delete an account with everything it owns in one transaction."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import ColumnElement, Table, delete, func, inspect, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.adapters.knowledge.index import documents, passages
from youyou.adapters.memory.sql_base import memories
from youyou.adapters.storage.catalog import fold
from youyou.adapters.storage.tables import ledger_events, session_leases, sessions
from youyou.workbench.store.base import StoreBase, columns_of, now
from youyou.workbench.store.records import ADMIN, RemovedCounts, UserRecord
from youyou.workbench.store.tables import (
    chat_sessions,
    group_members,
    invites,
    prompts,
    skills,
    tokens,
    users,
)

_USER = columns_of(users, UserRecord)


class AccountBusy(Exception):
    """A session of the account is being written by a running turn somewhere."""


class AccountQueries(StoreBase):
    async def list_users(self) -> list[UserRecord]:
        """Every account, oldest first."""
        query = select(*_USER).order_by(users.c.created_at, users.c.id)
        async with self._transaction("listing users") as conn:
            return [UserRecord(*row) for row in await conn.execute(query)]

    async def user_by_id(self, user_id: str) -> UserRecord | None:
        query = select(*_USER).where(users.c.id == user_id)
        async with self._transaction("looking up a user") as conn:
            row = (await conn.execute(query)).one_or_none()
        return None if row is None else UserRecord(*row)

    async def set_role(self, user_id: str, role: str) -> bool:
        """False when there is no such account."""
        stmt = update(users).where(users.c.id == user_id).values(role=role)
        async with self._transaction("changing a role", write=True) as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def promote_names(self, usernames: Iterable[str]) -> list[UserRecord]:
        """Makes administrators of the accounts that have these names now (``[server]
        admins``); returns those accounts."""
        folded = sorted({fold(name) for name in usernames})
        where = users.c.username_folded.in_(folded)
        async with self._transaction("promoting the configured administrators", write=True) as c:
            await c.execute(update(users).where(where, users.c.role != ADMIN).values(role=ADMIN))
            return [UserRecord(*row) for row in await c.execute(select(*_USER).where(where))]

    async def set_disabled(self, user_id: str, disabled: bool) -> bool:
        """Disabling also revokes every token of the account (enabling does not bring them
        back); False when there is no such account."""
        stamp = now()
        stmt = update(users).where(users.c.id == user_id)
        async with self._transaction("disabling or enabling a user", write=True) as conn:
            if disabled:
                found = (
                    await conn.execute(
                        stmt.where(users.c.disabled_at.is_(None)).values(disabled_at=stamp)
                    )
                ).rowcount
                await conn.execute(
                    update(tokens)
                    .where(tokens.c.user_id == user_id, tokens.c.revoked_at.is_(None))
                    .values(revoked_at=stamp)
                )
            else:
                found = (await conn.execute(stmt.values(disabled_at=None))).rowcount
            if not found:
                exists = select(users.c.id).where(users.c.id == user_id)
                return (await conn.execute(exists)).first() is not None
        return True

    async def delete_user(
        self, user_id: str, memory_namespace: str, upload_scope: str
    ) -> RemovedCounts | None:
        """Deletes the account and everything it owns, all or nothing: chat sessions with
        their ledgers, prompts, skills, uploaded knowledge (``upload_scope``), long-term
        memories (``memory_namespace``), tokens, group memberships and invites. None when
        there is no such account; ``AccountBusy`` while a turn writes one of its sessions."""
        async with self._transaction("deleting a user", write=True) as conn:
            if (
                await conn.execute(select(users.c.id).where(users.c.id == user_id))
            ).first() is None:
                return None
            ledgers = select(chat_sessions.c.ledger_session_id).where(
                chat_sessions.c.owner_id == user_id
            )
            live = select(session_leases.c.session_id).where(
                session_leases.c.session_id.in_(ledgers), session_leases.c.expires_at > now()
            )
            if (await conn.execute(live.limit(1))).first() is not None:
                raise AccountBusy(user_id)
            counts = {
                "ledger_events": await _count(
                    conn, ledger_events, ledger_events.c.session_id.in_(ledgers)
                ),
                "prompts": await _count(conn, prompts, prompts.c.owner_id == user_id),
                "skills": await _count(conn, skills, skills.c.owner_id == user_id),
                "tokens": await _count(conn, tokens, tokens.c.user_id == user_id),
                "group_memberships": await _count(
                    conn, group_members, group_members.c.user_id == user_id
                ),
                "invites": await _count(conn, invites, invites.c.created_by == user_id),
            }
            await conn.execute(
                delete(session_leases).where(session_leases.c.session_id.in_(ledgers))
            )
            counts["sessions"] = (
                await conn.execute(delete(sessions).where(sessions.c.id.in_(ledgers)))
            ).rowcount
            counts["memories"] = await _delete_if_present(
                conn, memories, memories.c.namespace == memory_namespace
            )
            await _delete_if_present(conn, passages, passages.c.scope == upload_scope)
            counts["knowledge_documents"] = await _delete_if_present(
                conn, documents, documents.c.scope == upload_scope
            )
            # The workbench's own rows (chat sessions, prompts, skills, selection, tokens,
            # memberships, invites) go with the account through their foreign keys.
            await conn.execute(delete(users).where(users.c.id == user_id))
        return RemovedCounts(**counts)


async def _count(conn: AsyncConnection, table: Table, where: ColumnElement[bool]) -> int:
    query = select(func.count()).select_from(table).where(where)
    return int((await conn.execute(query)).scalar_one())


async def _delete_if_present(
    conn: AsyncConnection, table: Table, where: ColumnElement[bool]
) -> int:
    """Rows deleted from a table another component creates on first use (memories, the
    knowledge base): a database where it was never used has no such table."""
    present = await conn.run_sync(lambda sync: inspect(sync).has_table(table.name))
    if not present:
        return 0
    return int((await conn.execute(delete(table).where(where))).rowcount)
