"""``/auth``: register, login, logout (here or everywhere), change the password, who am I,
and whether sign-up is open."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import StringConstraints

from youyou.workbench.auth import IssuedToken, bearer_token
from youyou.workbench.context import RequestIdDep, UserDep, Workbench, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.routes import COMMON_ERRORS
from youyou.workbench.schemas import (
    ApiModel,
    Credentials,
    Envelope,
    ErrorEnvelope,
    LoginBody,
    LoginOut,
    PasswordChange,
    UserOut,
)
from youyou.workbench.store import UserRecord

if TYPE_CHECKING:  # loaded only when single sign-on is configured
    from youyou.workbench.oidc import OidcLogin

router = APIRouter(prefix="/auth", tags=["auth"], responses=COMMON_ERRORS)


class RegisterOut(ApiModel):
    user: UserOut


class AuthSettingsOut(ApiModel):
    registration: bool
    """True while anyone may sign up."""
    registration_mode: Literal["open", "closed", "invite"]
    sso: bool
    """Single sign-on is configured (``GET /auth/oidc/start``)."""
    sso_name: str | None
    """The provider's name for a sign-in button (``[server.oidc] display_name``)."""
    password_login: bool


class SsoStartOut(ApiModel):
    authorization_url: str


class SsoCallback(ApiModel):
    code: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    state: Annotated[str, StringConstraints(min_length=1, max_length=256)]


def user_out(user: UserRecord) -> UserOut:
    return UserOut(
        id=user.id,
        username=user.username,
        created_at=user.created_at,
        role="admin" if user.is_admin else "member",
        disabled=user.disabled_at is not None,
    )


@router.get("/settings")
async def auth_settings(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[AuthSettingsOut]:
    """Lets a sign-in page hide registration when the server has turned it off, or show it
    only with an invite link."""
    server = wb.settings.server
    data = AuthSettingsOut(
        registration=server.registration_open and _password_login(wb),
        registration_mode=server.registration_mode,
        sso=wb.oidc is not None,
        sso_name=server.oidc.display_name if server.oidc is not None else None,
        password_login=_password_login(wb),
    )
    return Envelope(data=data, request_id=rid)


_THROTTLED: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorEnvelope, "description": "AUTH_RATE_LIMITED (Retry-After)"},
    503: {"model": ErrorEnvelope, "description": "AUTH_BUSY: too many sign-ins at once"},
}
_WEAK_PASSWORD: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "AUTH_PASSWORD_REJECTED or invalid fields"}
}


def _password_login(wb: Workbench) -> bool:
    oidc = wb.settings.server.oidc
    return oidc is None or oidc.password_login


def _sign_on(wb: Workbench) -> OidcLogin:
    if wb.oidc is None:
        raise ApiError(ApiCode.NOT_FOUND)
    return wb.oidc


_NO_SSO: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorEnvelope, "description": "NOT_FOUND: no [server.oidc] configured"},
    401: {"model": ErrorEnvelope, "description": "AUTH_SSO_FAILED: the provider failed"},
}


@router.get("/oidc/start", responses=_NO_SSO)
async def sso_start(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[SsoStartOut]:
    """Where to send the browser to sign in at the provider (404 without ``[server.oidc]``);
    the provider sends it back to ``redirect_uri`` with ``code`` and ``state``."""
    url = await _sign_on(wb).start()
    return Envelope(data=SsoStartOut(authorization_url=url), request_id=rid)


@router.post(
    "/oidc/callback",
    responses={
        **_NO_SSO,
        403: {"model": ErrorEnvelope, "description": "AUTH_ACCOUNT_DISABLED"},
        409: {"model": ErrorEnvelope, "description": "AUTH_USERNAME_TAKEN by another account"},
    },
)
async def sso_callback(
    body: SsoCallback, wb: WorkbenchDep, rid: RequestIdDep
) -> Envelope[LoginOut]:
    """The provider's ``code`` and ``state`` for a token, as a login answers; each state
    works once. 401 AUTH_SSO_FAILED when the sign-on does not verify."""
    user = await _sign_on(wb).finish(body.code, body.state)
    return _signed_in(await wb.auth.issue(user), rid)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


@router.post(
    "/register",
    status_code=201,
    responses={
        **_THROTTLED,
        **_WEAK_PASSWORD,
        403: {
            "model": ErrorEnvelope,
            "description": "AUTH_REGISTRATION_DISABLED, or AUTH_INVITE_INVALID (by invitation)",
        },
        409: {"model": ErrorEnvelope, "description": "AUTH_USERNAME_TAKEN"},
    },
)
async def register(
    body: Credentials, request: Request, wb: WorkbenchDep, rid: RequestIdDep
) -> Envelope[RegisterOut]:
    """Refused for a common password or one too close to the username (400), and after too
    many sign-ups from one address (429). With registration by invite, ``invite`` must be
    the token of an unused, unexpired invite link; it is used up by this account."""
    mode = wb.settings.server.registration_mode
    if not _password_login(wb):
        raise ApiError(ApiCode.AUTH_PASSWORD_LOGIN_DISABLED)
    if mode == "closed":
        raise ApiError(ApiCode.AUTH_REGISTRATION_DISABLED)
    if mode == "invite" and body.invite is None:
        raise ApiError(ApiCode.AUTH_INVITE_INVALID)
    user = await wb.auth.register(
        body.username, body.password, client_address(request), body.invite
    )
    return Envelope(data=RegisterOut(user=user_out(user)), request_id=rid)


@router.post(
    "/login",
    responses={
        **_THROTTLED,
        403: {"model": ErrorEnvelope, "description": "AUTH_ACCOUNT_DISABLED"},
    },
)
async def login(
    body: LoginBody, request: Request, wb: WorkbenchDep, rid: RequestIdDep
) -> Envelope[LoginOut]:
    """429 after too many failures for this username from this address, or from this address
    whatever the usernames."""
    if not _password_login(wb):
        raise ApiError(ApiCode.AUTH_PASSWORD_LOGIN_DISABLED)
    issued = await wb.auth.login(body.username.strip(), body.password, client_address(request))
    return _signed_in(issued, rid)


def _signed_in(issued: IssuedToken, rid: str) -> Envelope[LoginOut]:
    data = LoginOut(
        access_token=issued.token, expires_at=issued.expires_at, user=user_out(issued.user)
    )
    return Envelope(data=data, request_id=rid)


@router.post(
    "/password",
    status_code=204,
    response_class=Response,
    responses={
        **_THROTTLED,
        **_WEAK_PASSWORD,
        401: {"model": ErrorEnvelope, "description": "AUTH_INVALID_CREDENTIALS or no token"},
    },
)
async def change_password(
    body: PasswordChange, request: Request, wb: WorkbenchDep, user: UserDep
) -> Response:
    """The current password is checked like a login; every other token of the user is
    revoked, the one of this request stays valid."""
    token = bearer_token(request.headers.get("authorization"))
    assert token is not None  # UserDep has accepted it
    await wb.auth.change_password(
        user,
        token,
        body.current_password,
        body.new_password,
        client_address(request),
    )
    return Response(status_code=204)


@router.post("/logout", status_code=204, response_class=Response)
async def logout(request: Request, wb: WorkbenchDep, user: UserDep) -> Response:
    """The token is revoked at once: the next request with it is 401."""
    await wb.auth.logout(request.headers.get("authorization"))
    return Response(status_code=204)


@router.get("/me")
async def me(user: UserDep, rid: RequestIdDep) -> Envelope[UserOut]:
    return Envelope(data=user_out(user), request_id=rid)


@router.post("/logout-all", status_code=204, response_class=Response)
async def logout_everywhere(wb: WorkbenchDep, user: UserDep) -> Response:
    """Signs the user out on every device: all their tokens, this one included, are revoked."""
    await wb.auth.logout_everywhere(user)
    return Response(status_code=204)
