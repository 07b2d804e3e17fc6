"""Who may use what: the ``users`` and ``groups`` access lists of ``[[mcp_servers]]`` and
``[[knowledge]]``, and the ``[server] admins`` list.

Access is decided by account id and group membership, never by a name someone could still
register. Each ``users`` name is looked up when the server starts (case-insensitively, as
usernames are unique) and replaced by the id of the account that has it then; a name without
an account is dropped until the next start, so nobody who signs up later under a listed name,
or under the name of a deleted account, inherits its tools and runbooks. ``groups`` name
groups, which only an administrator creates and fills, so they are matched by name at each
request. An entry with neither list is open to everyone; with one or both, to the union.

``admins`` are promoted the same way at each start: the accounts that have the names then.
Since a listed name that has no account yet could be taken by whoever registers first, the
server refuses to start with name lists while registration is open, unless the operator
acknowledges it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from youyou.adapters.storage.catalog import fold
from youyou.config import Settings
from youyou.domain.config import config_error
from youyou.workbench.store import UserRecord, WorkbenchStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Member:
    """Who asks, as access lists see them: the account and its groups' folded names."""

    account_id: str
    groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class Grant:
    """One entry's lists, bound: the account ids and folded group names it lets in."""

    account_ids: frozenset[str]
    groups: frozenset[str]


class AccessLists:
    """The bound lists of one server process, keyed like ``Settings.access_lists``."""

    def __init__(self, grants: Mapping[str, Grant] | None = None) -> None:
        self._grants = dict(grants or {})

    def allows(self, where: str, member: Member) -> bool:
        grant = self._grants.get(where)
        if grant is None:
            return True
        return member.account_id in grant.account_ids or bool(grant.groups & member.groups)

    def mcp_servers(self, member: Member) -> Callable[[str], bool]:
        """Whether ``member`` gets the tools of the MCP server with this id."""
        return lambda server_id: self.allows(f"mcp_servers.{server_id}", member)

    def knowledge(self, member: Member) -> Callable[[str], bool]:
        """Whether ``member`` searches the knowledge source with this id."""
        return lambda source_id: self.allows(f"knowledge.{source_id}", member)


def check_registration(settings: Settings) -> None:
    """INVALID_CONFIG when name lists (access lists or ``admins``) name anyone while anyone
    may sign up, unacknowledged (an empty list grants nobody, so nobody can take a name
    from it)."""
    server = settings.server
    lists = sorted(where for where, (users, _) in settings.access_lists().items() if users)
    if server.admins:
        lists.append("server.admins")
    if not lists or not server.registration_open or server.open_registration_with_access_lists:
        return
    raise config_error(
        f"{', '.join(lists)}: a list of usernames needs registration closed or by invite, or "
        "anyone could sign up under a listed name that has no account yet. Set [server] "
        'registration = "closed" (or "invite") once the listed people have signed up, or set '
        "[server] open_registration_with_access_lists = true to accept that risk"
    )


async def bind_access_lists(settings: Settings, store: WorkbenchStore) -> AccessLists:
    """The lists with every username replaced by the id of the account that has it now;
    what was dropped and what was bound is logged."""
    lists = settings.access_lists()
    names = [name for users, _ in lists.values() for name in users or ()]
    accounts = await store.users_by_names(names) if names else []
    by_fold = {fold(account.username): account for account in accounts}
    grants: dict[str, Grant] = {}
    for where, (users, groups) in lists.items():
        present = _bound(f"{where}.users", users, by_fold) if users is not None else []
        grants[where] = Grant(
            frozenset(account.id for account in present),
            frozenset(fold(group) for group in groups or ()),
        )
    return AccessLists(grants)


async def promote_admins(settings: Settings, store: WorkbenchStore) -> None:
    """``[server] admins``: the accounts that have these names now become administrators."""
    names = settings.server.admins
    if not names:
        return
    promoted = await store.promote_names(names)
    _bound("server.admins", names, {fold(account.username): account for account in promoted})


def _bound(where: str, names: tuple[str, ...], by_fold: dict[str, UserRecord]) -> list[UserRecord]:
    present = [by_fold[fold(name)] for name in names if fold(name) in by_fold]
    if missing := [name for name in names if fold(name) not in by_fold]:
        logger.warning(
            "%s: %s has no account, so grants nothing until the server restarts after the "
            "account exists",
            where,
            ", ".join(missing),
        )
    logger.info(
        "%s bound to accounts: %s",
        where,
        ", ".join(f"{a.username} (id {a.id}, created {a.created_at:%Y-%m-%d})" for a in present)
        or "none",
    )
    return present
