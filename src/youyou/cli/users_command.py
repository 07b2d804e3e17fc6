"""``youyou users …`` and ``youyou groups …``: the workbench's accounts and groups, on the
configured database (SQLite or PostgreSQL) with no server running.

A password is read from a prompt (twice, not echoed) or, when stdin is not a terminal, from
the first line of stdin; never from an argument, which other users of the machine could read
in the process list. Only typer is imported here at start (``youyou --help`` stays light).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from youyou.cli.options import ConfigOption

if TYPE_CHECKING:
    from rich.console import Console

    from youyou.workbench.accounts import Accounts
    from youyou.workbench.store import UserRecord, WorkbenchStore

    Action = Callable[[Accounts, WorkbenchStore, Console], Awaitable[None]]

_PLAIN: dict[str, Any] = {"no_args_is_help": True, "rich_markup_mode": None}
users_app = typer.Typer(help="Workbench accounts: add, list, disable, roles, delete.", **_PLAIN)
groups_app = typer.Typer(help="Workbench groups, which access lists can name.", **_PLAIN)

Name = Annotated[str, typer.Argument(metavar="NAME", help="Username (or account id).")]
Group = Annotated[str, typer.Argument(metavar="GROUP", help="Group name (or id).")]


@asynccontextmanager
async def _opened(config: Path | None) -> AsyncIterator[tuple[Accounts, WorkbenchStore]]:
    """The migrated database (the kernel's tables too: deleting an account deletes its
    ledgers) and the account operations on it."""
    import asyncio

    from youyou.adapters.storage.engine import upgrade_database
    from youyou.config import load_settings
    from youyou.workbench.accounts import Accounts
    from youyou.workbench.auth import Passwords
    from youyou.workbench.store import WorkbenchStore

    settings = load_settings(config)
    passwords = Passwords(settings.server)
    url = settings.database.url
    await upgrade_database(url)
    store = await WorkbenchStore.open(url)
    try:
        yield Accounts(store, lambda password: asyncio.to_thread(passwords.hash, password)), store
    finally:
        await store.close()


def _run(config: Path | None, action: Action) -> None:
    """Run ``action``; a refusal is one line on stderr and exit code 1."""
    from rich.console import Console

    from youyou.cli.process import EXIT_FAILED, EXIT_OK, err_console, run
    from youyou.workbench.errors import ApiError, catalog_message

    async def main() -> int:
        try:
            async with _opened(config) as (accounts, store):
                await action(accounts, store, Console(highlight=False, soft_wrap=True))
        except ApiError as refused:
            message = catalog_message(refused.code, "en", refused.detail)
            err_console.print(f"error: {message}", markup=False)
            return EXIT_FAILED
        return EXIT_OK

    code = run(main())
    if code:
        raise typer.Exit(code)


def read_password(confirm: bool = True) -> str:
    """From a hidden prompt on a terminal (asked twice), else the first line of stdin."""
    import getpass
    import sys

    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass("Password: ")
    if confirm and getpass.getpass("Repeat the password: ") != password:
        raise typer.BadParameter("the two passwords differ")
    return password


@users_app.command("list")
def users_list(config: ConfigOption = None) -> None:
    """Every account: role, whether it is disabled, groups, creation date, id."""

    async def show(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        from rich.table import Table

        users = await store.list_users()
        if not users:
            console.print("no accounts")
            return
        groups: dict[str, list[str]] = {}
        for group in await store.list_groups():
            for member in group.member_ids:
                groups.setdefault(member, []).append(group.name)
        table = Table("username", "role", "status", "groups", "created", "id")
        for user in users:
            table.add_row(
                user.username,
                user.role,
                "disabled" if user.disabled_at else "active",
                ", ".join(groups.get(user.id, [])),
                f"{user.created_at:%Y-%m-%d}",
                user.id,
                style="dim" if user.disabled_at else None,
            )
        console.print(table)

    _run(config, show)


@users_app.command("add")
def users_add(
    name: Name,
    config: ConfigOption = None,
    admin: Annotated[bool, typer.Option("--admin", help="Make it an administrator.")] = False,
) -> None:
    """Create an account; the password is asked for (or read from stdin)."""
    password = read_password()

    async def add(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        user = await accounts.add(name, password, admin=admin)
        console.print(f"added {user.username} ({user.role}, id {user.id})", markup=False)

    _run(config, add)


def _on_user(
    name: str, config: Path | None, change: Callable[[Accounts, UserRecord], Awaitable[str]]
) -> None:
    async def act(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        console.print(await change(accounts, await accounts.user(name)), markup=False)

    _run(config, act)


@users_app.command("disable")
def users_disable(name: Name, config: ConfigOption = None) -> None:
    """Refuse the account's sign-ins and revoke its tokens at once; its data stays."""

    async def change(accounts: Accounts, user: UserRecord) -> str:
        await accounts.set_disabled(user, True)
        return f"disabled {user.username}"

    _on_user(name, config, change)


@users_app.command("enable")
def users_enable(name: Name, config: ConfigOption = None) -> None:
    """Let a disabled account sign in again."""

    async def change(accounts: Accounts, user: UserRecord) -> str:
        await accounts.set_disabled(user, False)
        return f"enabled {user.username}"

    _on_user(name, config, change)


@users_app.command("promote")
def users_promote(name: Name, config: ConfigOption = None) -> None:
    """Make the account an administrator."""

    async def change(accounts: Accounts, user: UserRecord) -> str:
        await accounts.set_role(user, admin=True)
        return f"{user.username} is an administrator"

    _on_user(name, config, change)


@users_app.command("demote")
def users_demote(name: Name, config: ConfigOption = None) -> None:
    """Make the account a member (no administration)."""

    async def change(accounts: Accounts, user: UserRecord) -> str:
        await accounts.set_role(user, admin=False)
        return f"{user.username} is a member"

    _on_user(name, config, change)


@users_app.command("reset-password")
def users_reset_password(name: Name, config: ConfigOption = None) -> None:
    """Set a new password (asked for, or read from stdin) and sign the account out everywhere."""
    password = read_password()

    async def change(accounts: Accounts, user: UserRecord) -> str:
        await accounts.reset_password(user, password)
        return f"new password set for {user.username}; every token of it is revoked"

    _on_user(name, config, change)


@users_app.command("delete")
def users_delete(
    name: Name,
    config: ConfigOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete the account and everything it owns: sessions, prompts, skills, knowledge,
    memories, tokens."""
    if not yes:
        typer.confirm(f"Delete {name} and everything it owns?", abort=True)

    async def change(accounts: Accounts, user: UserRecord) -> str:
        from dataclasses import asdict

        removed = asdict(await accounts.delete(user))
        counts = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in removed.items())
        return f"deleted {user.username}: {counts}"

    _on_user(name, config, change)


@groups_app.command("list")
def groups_list(config: ConfigOption = None) -> None:
    """Every group and its members."""

    async def show(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        names = {user.id: user.username for user in await store.list_users()}
        groups = await store.list_groups()
        for group in groups:
            members = ", ".join(sorted(names[m] for m in group.member_ids if m in names))
            console.print(f"{group.name}: {members or '(no members)'}", markup=False)
        if not groups:
            console.print("no groups")

    _run(config, show)


@groups_app.command("add")
def groups_add(name: Group, config: ConfigOption = None) -> None:
    """Create a group."""

    async def add(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        group = await accounts.add_group(name)
        console.print(f"added group {group.name}", markup=False)

    _run(config, add)


@groups_app.command("delete")
def groups_delete(name: Group, config: ConfigOption = None) -> None:
    """Delete a group (its members' accounts stay)."""

    async def delete(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        group = await accounts.group(name)
        await accounts.delete_group(group)
        console.print(f"deleted group {group.name}", markup=False)

    _run(config, delete)


def _membership(group_name: str, user_name: str, config: Path | None, join: bool) -> None:
    async def change(accounts: Accounts, store: WorkbenchStore, console: Console) -> None:
        group, user = await accounts.group(group_name), await accounts.user(user_name)
        if join:
            await accounts.add_member(group, user)
        else:
            await accounts.remove_member(group, user)
        verb = "added to" if join else "removed from"
        console.print(f"{user.username} {verb} {group.name}", markup=False)

    _run(config, change)


@groups_app.command("add-member")
def groups_add_member(group: Group, name: Name, config: ConfigOption = None) -> None:
    """Put an account in a group."""
    _membership(group, name, config, join=True)


@groups_app.command("remove-member")
def groups_remove_member(group: Group, name: Name, config: ConfigOption = None) -> None:
    """Take an account out of a group."""
    _membership(group, name, config, join=False)
