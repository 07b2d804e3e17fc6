"""The ``users`` access lists of ``[[mcp_servers]]`` and ``[[knowledge]]`` bound to accounts.

A list names accounts, and a name grants access only to the account that has it when the
server starts: each name is looked up then (case-insensitively, as usernames are unique) and a
name without an account is dropped from the list until the next start, so nobody can sign up
later under a listed name and inherit its tools and runbooks. Accounts are never renamed or
deleted, so while the process runs a bound name still means the account it was bound to (a
feature that deletes or renames accounts must bind the lists again). Since a listed name
that has no account yet could be taken by whoever registers first, the server refuses to
start with access lists while registration is open, unless the operator acknowledges it.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from youyou.adapters.settings import KnowledgeSourceSettings, McpServerSettings, Settings
from youyou.adapters.storage.catalog import fold
from youyou.domain.config import config_error
from youyou.workbench.store import WorkbenchStore

logger = logging.getLogger(__name__)
Entry = TypeVar("Entry", McpServerSettings, KnowledgeSourceSettings)


def check_registration(settings: Settings) -> None:
    """INVALID_CONFIG when access lists name anyone while anyone may sign up, unacknowledged
    (an empty list grants nobody, so nobody can take a name from it)."""
    server = settings.server
    lists = {where: names for where, names in settings.access_lists().items() if names}
    if not lists or not server.registration_open or server.open_registration_with_access_lists:
        return
    raise config_error(
        f"{', '.join(sorted(lists))}: a users access list needs closed registration, or "
        "anyone could sign up under a listed name that has no account yet. Set [server] "
        'registration = "closed" once the listed people have signed up, or set [server] '
        "open_registration_with_access_lists = true to accept that risk"
    )


async def bind_access_lists(settings: Settings, store: WorkbenchStore) -> Settings:
    """``settings`` with every access list reduced to the names whose accounts exist now,
    spelled as the accounts spell them; what was dropped and what was bound is logged."""
    lists = settings.access_lists()
    if not lists:
        return settings
    accounts = await store.users_by_names(name for names in lists.values() for name in names)
    by_fold = {fold(account.username): account for account in accounts}
    bound: dict[str, tuple[str, ...]] = {}
    for where, names in lists.items():
        present = [by_fold[fold(name)] for name in names if fold(name) in by_fold]
        if missing := [name for name in names if fold(name) not in by_fold]:
            logger.warning(
                "%s.users: %s has no account, so grants nothing until the server restarts "
                "after the account exists",
                where,
                ", ".join(missing),
            )
        logger.info(
            "%s.users bound to accounts: %s",
            where,
            ", ".join(f"{a.username} (id {a.id}, created {a.created_at:%Y-%m-%d})" for a in present)
            or "none",
        )
        bound[where] = tuple(account.username for account in present)
    return settings.model_copy(
        update={
            "mcp_servers": tuple(
                _with_users(s, bound.get(f"mcp_servers.{s.id}")) for s in settings.mcp_servers
            ),
            "knowledge": tuple(
                _with_users(k, bound.get(f"knowledge.{k.id}")) for k in settings.knowledge
            ),
        }
    )


def _with_users(entry: Entry, users: tuple[str, ...] | None) -> Entry:
    return entry if users is None else entry.model_copy(update={"users": users})
