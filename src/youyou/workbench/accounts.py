"""Administering accounts and groups: one set of operations behind ``youyou users``/``youyou
groups`` (on the database, no server needed) and the ``/admin`` routes. Refusals are
``ApiError``s, which the command line prints in English."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import TypeAdapter, ValidationError

from youyou.adapters.knowledge.tool import upload_scope
from youyou.adapters.storage.catalog import fold
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.passwords import check_new_password
from youyou.workbench.schemas import Username
from youyou.workbench.store import (
    ADMIN,
    MEMBER,
    AccountBusy,
    GroupNameTaken,
    GroupRecord,
    RemovedCounts,
    UsernameTaken,
    UserRecord,
    WorkbenchStore,
)

HashPassword = Callable[[str], Awaitable[str]]
_USERNAME: TypeAdapter[str] = TypeAdapter(Username)
_GROUP_NAME_CHARS = 64


def memory_namespace(owner_id: str) -> str:
    """Long-term memories are per user in the workbench."""
    return f"user:{owner_id}"


def checked_username(username: str) -> str:
    """A username as sign-up accepts it: 1 to 64 letters, digits and ``_.@-``."""
    try:
        return _USERNAME.validate_python(username)
    except ValidationError:
        raise ApiError(
            ApiCode.VALIDATION_INVALID_ARGUMENT,
            "username: 1 to 64 letters, digits and _ . @ -",
        ) from None


class Accounts:
    """``hash_password`` makes the Argon2id hash of a new password (off the event loop)."""

    def __init__(self, store: WorkbenchStore, hash_password: HashPassword) -> None:
        self._store = store
        self._hash = hash_password

    async def user(self, name_or_id: str) -> UserRecord:
        """The account with this username (case-insensitively) or id; NOT_FOUND otherwise."""
        found = await self._store.user_by_name(name_or_id) or await self._store.user_by_id(
            name_or_id
        )
        if found is None:
            raise ApiError(ApiCode.NOT_FOUND, f"no account {name_or_id!r}")
        return found

    async def user_by_id(self, user_id: str) -> UserRecord:
        found = await self._store.user_by_id(user_id)
        if found is None:
            raise ApiError(ApiCode.NOT_FOUND)
        return found

    async def add(self, username: str, password: str, *, admin: bool = False) -> UserRecord:
        """The password policy of sign-up applies."""
        name = checked_username(username)
        check_new_password(password, name)
        if await self._store.user_by_name(name) is not None:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN)
        digest = await self._hash(password)
        try:
            return await self._store.create_user(name, digest, ADMIN if admin else MEMBER)
        except UsernameTaken:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN) from None

    async def reset_password(self, user: UserRecord, password: str) -> None:
        """A new password, and every token of the account revoked."""
        check_new_password(password, user.username)
        await self._store.set_password_hash(user.id, await self._hash(password))
        await self._store.revoke_user_tokens(user.id)

    async def set_disabled(self, user: UserRecord, disabled: bool) -> UserRecord:
        """Disabling revokes every token of the account; its data stays."""
        await self._store.set_disabled(user.id, disabled)
        return await self.user_by_id(user.id)

    async def set_role(self, user: UserRecord, admin: bool) -> UserRecord:
        await self._store.set_role(user.id, ADMIN if admin else MEMBER)
        return await self.user_by_id(user.id)

    async def delete(self, user: UserRecord) -> RemovedCounts:
        """The account and everything it owns, in one transaction (TURN_BUSY while one of its
        sessions runs a turn anywhere: disable the account, wait, and delete again)."""
        try:
            removed = await self._store.delete_user(
                user.id, memory_namespace(user.id), upload_scope(user.id)
            )
        except AccountBusy:
            raise ApiError(
                ApiCode.TURN_BUSY, "one of the account's sessions is running a turn"
            ) from None
        if removed is None:
            raise ApiError(ApiCode.NOT_FOUND, f"no account {user.username!r}")
        return removed

    async def group(self, name_or_id: str) -> GroupRecord:
        """The group with this name (case-insensitively) or id; NOT_FOUND otherwise."""
        for group in await self._store.list_groups():
            if group.id == name_or_id or fold(group.name) == fold(name_or_id):
                return group
        raise ApiError(ApiCode.NOT_FOUND, f"no group {name_or_id!r}")

    async def group_by_id(self, group_id: str) -> GroupRecord:
        for group in await self._store.list_groups():
            if group.id == group_id:
                return group
        raise ApiError(ApiCode.NOT_FOUND)

    async def add_group(self, name: str) -> GroupRecord:
        name = name.strip()
        if not name or len(name) > _GROUP_NAME_CHARS or not name.isprintable():
            raise ApiError(
                ApiCode.VALIDATION_INVALID_ARGUMENT,
                f"name: 1 to {_GROUP_NAME_CHARS} printable characters",
            )
        try:
            return await self._store.create_group(name)
        except GroupNameTaken:
            raise ApiError(ApiCode.GROUP_NAME_TAKEN) from None

    async def delete_group(self, group: GroupRecord) -> None:
        await self._store.delete_group(group.id)

    async def add_member(self, group: GroupRecord, user: UserRecord) -> None:
        if not await self._store.add_member(group.id, user.id):
            raise ApiError(ApiCode.NOT_FOUND)

    async def remove_member(self, group: GroupRecord, user: UserRecord) -> None:
        await self._store.remove_member(group.id, user.id)
