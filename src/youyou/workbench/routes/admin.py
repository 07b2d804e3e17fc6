"""``/admin``: accounts, invites and groups, for administrators only (403 for members).

The same operations as ``youyou users`` and ``youyou groups`` (``workbench/accounts.py``). An
administrator cannot disable, demote or delete their own account here, so a server never
loses its last administrator by a slip of the mouse (the command line still can).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import Field, StringConstraints

from youyou.workbench.accounts import Accounts
from youyou.workbench.context import RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.routes import COMMON_ERRORS
from youyou.workbench.routes.auth import client_address
from youyou.workbench.schemas import ApiModel, Envelope, ErrorEnvelope, Password
from youyou.workbench.store import GroupRecord, UserRecord

_ERROR = {"model": ErrorEnvelope}
ADMIN_ERRORS: dict[int | str, dict[str, Any]] = {
    **COMMON_ERRORS,
    403: {**_ERROR, "description": "FORBIDDEN: the signed-in user is not an administrator"},
    404: {**_ERROR, "description": "NOT_FOUND: unknown account or group"},
    409: {
        **_ERROR,
        "description": "ADMIN_OWN_ACCOUNT, AUTH_USERNAME_TAKEN, GROUP_NAME_TAKEN, or TURN_BUSY "
        "(a turn of the account runs)",
    },
}


async def current_admin(user: UserDep) -> UserRecord:
    if not user.is_admin:
        raise ApiError(ApiCode.FORBIDDEN)
    return user


AdminDep = Annotated[UserRecord, Depends(current_admin)]
router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    responses=ADMIN_ERRORS,
    dependencies=[Depends(current_admin)],
)


class AdminUserOut(ApiModel):
    id: str
    username: str
    role: Literal["admin", "member"]
    disabled: bool
    created_at: datetime
    groups: list[str]


class NewUser(ApiModel):
    username: str
    password: Password
    role: Literal["admin", "member"] = "member"


class NewPassword(ApiModel):
    password: Password


class RemovedOut(ApiModel):
    sessions: int
    ledger_events: int
    prompts: int
    skills: int
    knowledge_documents: int
    memories: int
    tokens: int
    group_memberships: int
    invites: int


class DeletedUserOut(ApiModel):
    username: str
    removed: RemovedOut


class InviteBody(ApiModel):
    expires_in_hours: float = Field(72.0, gt=0, le=720)


class InviteOut(ApiModel):
    token: str
    path: str
    """Where the sign-up page takes the invite (the token is in the fragment, so it never
    reaches a server log or a Referer)."""
    expires_at: datetime


class NewGroup(ApiModel):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class GroupOut(ApiModel):
    id: str
    name: str
    created_at: datetime
    member_ids: list[str]


async def _accounts(wb: WorkbenchDep, request: Request) -> Accounts:
    """New passwords are hashed behind the server's hashing gate, like sign-up's."""
    address = client_address(request)
    return Accounts(wb.store, lambda password: wb.auth.hash_password(password, address))


AccountsDep = Annotated[Accounts, Depends(_accounts)]


def _not_self(admin: UserRecord, user: UserRecord) -> None:
    if admin.id == user.id:
        raise ApiError(ApiCode.ADMIN_OWN_ACCOUNT)


async def _user_out(wb: WorkbenchDep, user: UserRecord) -> AdminUserOut:
    groups = [g.name for g in await wb.store.list_groups() if user.id in g.member_ids]
    return _admin_user(user, groups)


def _admin_user(user: UserRecord, groups: list[str]) -> AdminUserOut:
    return AdminUserOut(
        id=user.id,
        username=user.username,
        role="admin" if user.is_admin else "member",
        disabled=user.disabled_at is not None,
        created_at=user.created_at,
        groups=groups,
    )


def _group_out(group: GroupRecord) -> GroupOut:
    return GroupOut(
        id=group.id, name=group.name, created_at=group.created_at, member_ids=list(group.member_ids)
    )


@router.get("/users")
async def list_users(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[list[AdminUserOut]]:
    """Every account, oldest first, with its role, state and groups."""
    groups = await wb.store.list_groups()
    users = [
        _admin_user(user, [g.name for g in groups if user.id in g.member_ids])
        for user in await wb.store.list_users()
    ]
    return Envelope(data=users, request_id=rid)


@router.post("/users", status_code=201)
async def create_user(
    body: NewUser, wb: WorkbenchDep, accounts: AccountsDep, rid: RequestIdDep
) -> Envelope[AdminUserOut]:
    """Whatever the registration setting; the password policy of sign-up applies."""
    user = await accounts.add(body.username, body.password, admin=body.role == "admin")
    return Envelope(data=_admin_user(user, []), request_id=rid)


@router.post("/users/{user_id}/disable")
async def disable_user(
    user_id: str, wb: WorkbenchDep, accounts: AccountsDep, admin: AdminDep, rid: RequestIdDep
) -> Envelope[AdminUserOut]:
    """Every token of the account stops working at once, in every server process; its
    running turns in this process are cancelled; its data stays."""
    user = await accounts.user_by_id(user_id)
    _not_self(admin, user)
    user = await accounts.set_disabled(user, True)
    await wb.hub.let_go_of(user.id)
    return Envelope(data=await _user_out(wb, user), request_id=rid)


@router.post("/users/{user_id}/enable")
async def enable_user(
    user_id: str, wb: WorkbenchDep, accounts: AccountsDep, rid: RequestIdDep
) -> Envelope[AdminUserOut]:
    user = await accounts.set_disabled(await accounts.user_by_id(user_id), False)
    return Envelope(data=await _user_out(wb, user), request_id=rid)


@router.post("/users/{user_id}/promote")
async def promote_user(
    user_id: str, wb: WorkbenchDep, accounts: AccountsDep, rid: RequestIdDep
) -> Envelope[AdminUserOut]:
    user = await accounts.set_role(await accounts.user_by_id(user_id), admin=True)
    return Envelope(data=await _user_out(wb, user), request_id=rid)


@router.post("/users/{user_id}/demote")
async def demote_user(
    user_id: str, wb: WorkbenchDep, accounts: AccountsDep, admin: AdminDep, rid: RequestIdDep
) -> Envelope[AdminUserOut]:
    user = await accounts.user_by_id(user_id)
    _not_self(admin, user)
    user = await accounts.set_role(user, admin=False)
    return Envelope(data=await _user_out(wb, user), request_id=rid)


@router.post("/users/{user_id}/password", status_code=204, response_class=Response)
async def reset_password(user_id: str, body: NewPassword, accounts: AccountsDep) -> Response:
    """A new password; every token of the account is revoked."""
    await accounts.reset_password(await accounts.user_by_id(user_id), body.password)
    return Response(status_code=204)


@router.delete("/users/{user_id}")
async def delete_user(
    user_id: str, wb: WorkbenchDep, accounts: AccountsDep, admin: AdminDep, rid: RequestIdDep
) -> Envelope[DeletedUserOut]:
    """The account and everything it owns, in one transaction; answers how many of each
    kind went. 409 TURN_BUSY while a turn of the account runs anywhere."""
    user = await accounts.user_by_id(user_id)
    _not_self(admin, user)
    await wb.hub.let_go_of(user.id)
    removed = await accounts.delete(user)
    data = DeletedUserOut(username=user.username, removed=RemovedOut(**asdict(removed)))
    return Envelope(data=data, request_id=rid)


@router.post("/invites", status_code=201)
async def create_invite(
    wb: WorkbenchDep, admin: AdminDep, rid: RequestIdDep, body: InviteBody | None = None
) -> Envelope[InviteOut]:
    """A one-time sign-up link: registering with its token works once, before it expires,
    whatever the registration setting except ``closed``."""
    hours = (body or InviteBody()).expires_in_hours
    issued = await wb.auth.create_invite(admin, timedelta(hours=hours))
    data = InviteOut(
        token=issued.token, path=f"/#invite={issued.token}", expires_at=issued.expires_at
    )
    return Envelope(data=data, request_id=rid)


@router.get("/groups")
async def list_groups(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[list[GroupOut]]:
    return Envelope(data=[_group_out(g) for g in await wb.store.list_groups()], request_id=rid)


@router.post("/groups", status_code=201)
async def create_group(
    body: NewGroup, accounts: AccountsDep, rid: RequestIdDep
) -> Envelope[GroupOut]:
    return Envelope(data=_group_out(await accounts.add_group(body.name)), request_id=rid)


@router.delete("/groups/{group_id}", status_code=204, response_class=Response)
async def delete_group(group_id: str, accounts: AccountsDep) -> Response:
    """The group and its memberships; the accounts stay."""
    await accounts.delete_group(await accounts.group_by_id(group_id))
    return Response(status_code=204)


@router.put("/groups/{group_id}/members/{user_id}", status_code=204, response_class=Response)
async def add_member(group_id: str, user_id: str, accounts: AccountsDep) -> Response:
    group = await accounts.group_by_id(group_id)
    await accounts.add_member(group, await accounts.user_by_id(user_id))
    return Response(status_code=204)


@router.delete("/groups/{group_id}/members/{user_id}", status_code=204, response_class=Response)
async def remove_member(group_id: str, user_id: str, accounts: AccountsDep) -> Response:
    group = await accounts.group_by_id(group_id)
    await accounts.remove_member(group, await accounts.user_by_id(user_id))
    return Response(status_code=204)
