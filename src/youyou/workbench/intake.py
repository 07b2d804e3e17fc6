"""Reading a request before routing: how much body is read for whom, how long it may take,
and the one check of input that no storage accepts (the NUL character).

Nobody is made to hold memory for a stranger: a body larger than
``max_anonymous_body_bytes`` is read only after the sender's bearer token is checked, and
only messages and uploads (routes marked with ``large_body``) may then reach
``max_body_bytes``; other routes stop at ``SIGNED_IN_BODY_BYTES``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

from fastapi.routing import APIRoute, APIRouter
from starlette.routing import Match
from starlette.types import Receive, Scope

from youyou.config import ServerSettings
from youyou.workbench.errors import ApiCode, ApiError, Localized

# The largest JSON body of a signed-in user outside messages and uploads: a prompt of 12,000
# characters, each escaped as \uXXXX, is under 80 KB.
SIGNED_IN_BODY_BYTES = 1024 * 1024
_NUL_ESCAPE = b"\\u0000"
SIGNED_IN_USER = "signed_in_user"  # request state key of the user whose token intake checked

_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])
_LARGE_BODY_ENDPOINTS: set[Callable[..., Any]] = set()


def large_body(endpoint: _Endpoint) -> _Endpoint:
    """Marks a route whose body may reach ``max_body_bytes`` (a message, an upload)."""
    _LARGE_BODY_ENDPOINTS.add(endpoint)
    return endpoint


@dataclass(frozen=True, slots=True)
class BodyLimits:
    anonymous: int
    signed_in: int
    large: int
    timeout_s: float
    large_routes: tuple[APIRoute, ...]
    """The routes marked ``large_body``, read from the routers before the app includes them
    (an app's own route list nests included routers)."""

    @classmethod
    def of(cls, server: ServerSettings, routers: Iterable[APIRouter]) -> BodyLimits:
        return cls(
            anonymous=min(server.max_anonymous_body_bytes, server.max_body_bytes),
            signed_in=min(SIGNED_IN_BODY_BYTES, server.max_body_bytes),
            large=server.max_body_bytes,
            timeout_s=server.body_timeout_s,
            large_routes=tuple(
                route
                for router in routers
                for route in router.routes
                if isinstance(route, APIRoute) and route.endpoint in _LARGE_BODY_ENDPOINTS
            ),
        )


async def read_body(
    scope: Scope, headers: Mapping[str, str], receive: Receive, limits: BodyLimits
) -> bytes:
    """The whole body, or ``ApiError``: 413 over the limit, 401 for a large body with a bad
    token (nothing of it read), 408 when it is not all there within ``limits.timeout_s``."""
    limit = limits.anonymous
    raised = False
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        limit, raised = await _signed_in_limit(scope, headers, limits), True
        if int(declared) > limit:
            raise ApiError(ApiCode.PAYLOAD_TOO_LARGE)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.timeout_s):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit and not raised:
                    limit, raised = await _signed_in_limit(scope, headers, limits), True
                if size > limit:
                    raise ApiError(ApiCode.PAYLOAD_TOO_LARGE)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        raise ApiError(ApiCode.REQUEST_TIMEOUT) from None
    return b"".join(chunks)


async def _signed_in_limit(scope: Scope, headers: Mapping[str, str], limits: BodyLimits) -> int:
    authorization = headers.get("authorization")
    if authorization is None:
        raise ApiError(ApiCode.PAYLOAD_TOO_LARGE)
    # kept for the route's ``current_user``, so the token is looked up once per request
    scope.setdefault("state", {})[SIGNED_IN_USER] = await scope[
        "app"
    ].state.workbench.auth.user_for(authorization)
    large = any(route.matches(scope)[0] is Match.FULL for route in limits.large_routes)
    return limits.large if large else limits.signed_in


def refuse_nul(scope: Scope, headers: Mapping[str, str], body: bytes) -> None:
    """A NUL character in the path, the query or any string of a JSON body is refused (400):
    PostgreSQL cannot store it in text, and no field of the API has a use for it."""
    found = "\x00" in scope["path"] or b"\x00" in unquote_to_bytes(scope["query_string"])
    if not found and _NUL_ESCAPE in body and "json" in headers.get("content-type", ""):
        try:
            found = _holds_nul(json.loads(body))
        except ValueError:
            return  # not JSON: the route's validation answers it
    if found:
        raise ApiError(
            ApiCode.VALIDATION_INVALID_ARGUMENT,
            Localized("NUL character (\\u0000)", "不允许 NUL 字符（\\u0000）"),
        )


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False
