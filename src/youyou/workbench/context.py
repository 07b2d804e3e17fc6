"""Per-request plumbing: the request id (in every response and log line), the security
headers, the body limits, request metrics, and the objects routes depend on."""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from youyou.application.tracing import NOOP_TRACER
from youyou.bootstrap import BuiltApp
from youyou.config import Settings
from youyou.domain.errors import AgentError
from youyou.ports.tracer import SpanKind, Tracer, TraceSpan
from youyou.workbench.auth import Authenticator
from youyou.workbench.errors import (
    ApiError,
    Language,
    from_agent_error,
    language_of,
)
from youyou.workbench.hub import SessionHub
from youyou.workbench.intake import SIGNED_IN_USER, BodyLimits, read_body, refuse_nul
from youyou.workbench.metrics import Metrics
from youyou.workbench.store import UserRecord, WorkbenchStore
from youyou.workbench.store.sending import SendReads

if TYPE_CHECKING:  # loaded only when single sign-on is configured
    from youyou.workbench.oidc import OidcLogin

request_id_var: ContextVar[str] = ContextVar("youyou_request_id", default="-")
trace_id_var: ContextVar[str] = ContextVar("youyou_trace_id", default="-")
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every log record (``-`` outside a request), and the
    request's trace id (``-`` when it is not traced)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.trace_id = trace_id_var.get()
        return True


@dataclass(slots=True)
class Workbench:
    settings: Settings
    built: BuiltApp
    store: WorkbenchStore
    hub: SessionHub
    auth: Authenticator
    metrics: Metrics
    oidc: OidcLogin | None = None  # single sign-on, when [server.oidc] is configured


def error_body(error: ApiError, language: Language, request_id: str) -> bytes:
    message = error.message(language)
    payload = {"error": {"code": error.code.value, "message": message}, "requestId": request_id}
    return json.dumps(payload, ensure_ascii=False).encode()


# Sent with every response (API, static files, errors, SSE). The policy is the web UI's: its
# own scripts and styles only, and no other site may frame it.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class RequestContext:
    """Pure ASGI middleware, so SSE responses stream through untouched: the request id and
    the security headers on every response, the body read within its limits (``intake``),
    and the request metrics."""

    def __init__(self, app: ASGIApp, metrics: Metrics, limits: BodyLimits) -> None:
        self.app = app
        self.metrics = metrics
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _CLIENT_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        scope.setdefault("state", {})["request_id"] = request_id
        method = scope["method"]
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    *SECURITY_HEADERS,
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        attributes = {
            "http.request.method": method,
            "url.path": scope["path"],
            "youyou.request_id": request_id,
        }
        with _tracer_of(scope).span(method, attributes, SpanKind.SERVER) as span:
            trace_token = trace_id_var.set(span.trace_id or "-")
            try:
                try:
                    body = await read_body(scope, headers, receive, self.limits)
                    refuse_nul(scope, headers, body)
                except AgentError as exc:
                    await _send_error(send_with_id, from_agent_error(exc), headers, request_id)
                    return
                except ApiError as exc:
                    await _send_error(send_with_id, exc, headers, request_id)
                    return
                await self.app(scope, _replay(body, receive), send_with_id)
            finally:
                route = scope.get("route")
                template = getattr(route, "path", "unmatched")
                self.metrics.requests.labels(template, method, str(status)).inc()
                _end_request_span(span, method, template if route else None, status)
                trace_id_var.reset(trace_token)
                request_id_var.reset(token)


def _end_request_span(span: TraceSpan, method: str, route: str | None, status: int) -> None:
    """Named by its route template once the request was routed (HTTP conventions)."""
    if route:
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_error(str(status), f"HTTP {status}")


def _tracer_of(scope: Scope) -> Tracer:
    """The kernel's tracer once the app has started (the no-op one before)."""
    workbench = getattr(scope["app"].state, "workbench", None) if "app" in scope else None
    return workbench.built.tracer if isinstance(workbench, Workbench) else NOOP_TRACER


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the client's disconnect

    return replay


async def _send_error(
    send: Send, error: ApiError, headers: dict[str, str], request_id: str
) -> None:
    """The error envelope, and the connection closed: the rest of the body is never read."""
    language = language_of(headers.get("accept-language"))
    body = error_body(error, language, request_id)
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *((k.lower().encode(), v.encode()) for k, v in error.headers.items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# -- dependencies ---------------------------------------------------------------------------------


# The dependencies below are coroutines although they never wait: FastAPI runs a plain
# function dependency in its thread pool, a trip to another thread for every request.


def get_workbench(request: Request) -> Workbench:
    workbench: Workbench = request.app.state.workbench
    return workbench


async def workbench(request: Request) -> Workbench:
    return get_workbench(request)


def request_id(request: Request) -> str:
    value: str = request.scope.get("state", {}).get("request_id", "-")
    return value


async def request_id_of(request: Request) -> str:
    return request_id(request)


async def language(request: Request) -> Language:
    return language_of(request.headers.get("accept-language"))


_bearer = HTTPBearer(auto_error=False, description="The accessToken from POST /auth/login.")


async def current_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> UserRecord:
    """The request's user: the one intake already checked for a large body, or looked up."""
    checked = getattr(request.state, SIGNED_IN_USER, None)
    if isinstance(checked, UserRecord):
        return checked
    return await get_workbench(request).auth.user_for(request.headers.get("authorization"))


async def sender(
    request: Request,
    session_id: str,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> SendReads:
    """``current_user`` for a send to ``session_id``, with the session's row and the user's
    assets read in the same transaction."""
    wb = get_workbench(request)
    checked = getattr(request.state, SIGNED_IN_USER, None)
    if isinstance(checked, UserRecord):
        return await wb.store.send_reads_of(checked, session_id)
    return await wb.auth.sender_for(request.headers.get("authorization"), session_id)


WorkbenchDep = Annotated[Workbench, Depends(workbench)]
UserDep = Annotated[UserRecord, Depends(current_user)]
SenderDep = Annotated[SendReads, Depends(sender)]
RequestIdDep = Annotated[str, Depends(request_id_of)]
LanguageDep = Annotated[Language, Depends(language)]
