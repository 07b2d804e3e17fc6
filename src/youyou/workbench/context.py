"""Per-request plumbing: the request id (in every response and log line), the body limit,
request metrics, and the objects routes depend on."""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from youyou.adapters.settings import Settings
from youyou.bootstrap import BuiltApp
from youyou.workbench.auth import Authenticator
from youyou.workbench.errors import ApiCode, Language, catalog_message, language_of
from youyou.workbench.hub import SessionHub
from youyou.workbench.metrics import Metrics
from youyou.workbench.store import UserRecord, WorkbenchStore

request_id_var: ContextVar[str] = ContextVar("youyou_request_id", default="-")
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every log record (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


@dataclass(slots=True)
class Workbench:
    settings: Settings
    built: BuiltApp
    store: WorkbenchStore
    hub: SessionHub
    auth: Authenticator
    metrics: Metrics


def error_body(code: str, language: Language, detail: str | None, request_id: str) -> bytes:
    message = catalog_message(code, language, detail)
    payload = {"error": {"code": code, "message": message}, "requestId": request_id}
    return json.dumps(payload, ensure_ascii=False).encode()


class RequestContext:
    """Pure ASGI middleware, so SSE responses stream through untouched."""

    def __init__(self, app: ASGIApp, metrics: Metrics, max_body_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        request_id = given if _CLIENT_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        try:
            body = await self._bounded_body(headers, receive)
            if body is None:
                language = language_of(headers.get("accept-language"))
                await _send_error(
                    send_with_id, 413, ApiCode.PAYLOAD_TOO_LARGE, language, request_id
                )
                return
            await self.app(scope, _replay(body, receive), send_with_id)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", "unmatched")
            self.metrics.requests.labels(template, scope["method"], str(status)).inc()
            request_id_var.reset(token)

    async def _bounded_body(self, headers: dict[str, str], receive: Receive) -> bytes | None:
        """The whole body, or None when it is over the limit (told by Content-Length or
        counted while reading a chunked body)."""
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


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
    send: Send, status: int, code: ApiCode, language: Language, request_id: str
) -> None:
    body = error_body(code, language, None, request_id)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# -- dependencies ---------------------------------------------------------------------------------


def get_workbench(request: Request) -> Workbench:
    workbench: Workbench = request.app.state.workbench
    return workbench


def request_id(request: Request) -> str:
    value: str = request.scope.get("state", {}).get("request_id", "-")
    return value


def language(request: Request) -> Language:
    return language_of(request.headers.get("accept-language"))


_bearer = HTTPBearer(auto_error=False, description="The accessToken from POST /auth/login.")


async def current_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> UserRecord:
    return await get_workbench(request).auth.user_for(request.headers.get("authorization"))


WorkbenchDep = Annotated[Workbench, Depends(get_workbench)]
UserDep = Annotated[UserRecord, Depends(current_user)]
RequestIdDep = Annotated[str, Depends(request_id)]
LanguageDep = Annotated[Language, Depends(language)]
