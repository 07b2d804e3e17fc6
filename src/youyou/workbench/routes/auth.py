"""``/auth``: register, login, logout, who am I, and whether sign-up is open."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from youyou.workbench.context import RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.routes import COMMON_ERRORS
from youyou.workbench.schemas import (
    ApiModel,
    Credentials,
    Envelope,
    ErrorEnvelope,
    LoginBody,
    LoginOut,
    UserOut,
)
from youyou.workbench.store import UserRecord

router = APIRouter(prefix="/auth", tags=["auth"], responses=COMMON_ERRORS)


class RegisterOut(ApiModel):
    user: UserOut


class AuthSettingsOut(ApiModel):
    registration: bool


def user_out(user: UserRecord) -> UserOut:
    return UserOut(id=user.id, username=user.username, created_at=user.created_at)


@router.get("/settings")
async def auth_settings(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[AuthSettingsOut]:
    """Lets a sign-in page hide registration when the server has turned it off."""
    return Envelope(
        data=AuthSettingsOut(registration=wb.settings.server.registration), request_id=rid
    )


@router.post(
    "/register",
    status_code=201,
    responses={
        403: {"model": ErrorEnvelope, "description": "AUTH_REGISTRATION_DISABLED"},
        409: {"model": ErrorEnvelope, "description": "AUTH_USERNAME_TAKEN"},
    },
)
async def register(body: Credentials, wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[RegisterOut]:
    if not wb.settings.server.registration:
        raise ApiError(ApiCode.AUTH_REGISTRATION_DISABLED)
    user = await wb.auth.register(body.username, body.password)
    return Envelope(data=RegisterOut(user=user_out(user)), request_id=rid)


@router.post(
    "/login",
    responses={429: {"model": ErrorEnvelope, "description": "AUTH_RATE_LIMITED (Retry-After)"}},
)
async def login(
    body: LoginBody, request: Request, wb: WorkbenchDep, rid: RequestIdDep
) -> Envelope[LoginOut]:
    address = request.client.host if request.client else "unknown"
    issued = await wb.auth.login(body.username.strip(), body.password, address)
    data = LoginOut(
        access_token=issued.token, expires_at=issued.expires_at, user=user_out(issued.user)
    )
    return Envelope(data=data, request_id=rid)


@router.post("/logout", status_code=204, response_class=Response)
async def logout(request: Request, wb: WorkbenchDep, user: UserDep) -> Response:
    """The token is revoked at once: the next request with it is 401."""
    await wb.auth.logout(request.headers.get("authorization"))
    return Response(status_code=204)


@router.get("/me")
async def me(user: UserDep, rid: RequestIdDep) -> Envelope[UserOut]:
    return Envelope(data=user_out(user), request_id=rid)
