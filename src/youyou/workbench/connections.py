"""uvicorn's HTTP protocol with the two guards it lacks: a deadline for a request's headers,
and connections beyond the cap closed as soon as they are accepted.

uvicorn times out only a kept-alive connection between two requests, and forgets even that
once a byte arrives: a client that connects and sends nothing, or a header a byte at a time,
holds its connection (a file descriptor) forever. Here a connection must have sent its
request line and headers within ``header_timeout_s`` of opening, or of its previous answer
ending; the body's own deadline is the application's (``intake``). A connection accepted
while ``limit_concurrency`` connections are open is closed at once, so an idle crowd cannot
keep file descriptors that uvicorn would only answer 503 on.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

# File descriptors a server process needs besides its connections (database pool, log,
# the model's HTTP clients, imported files).
RESERVED_DESCRIPTORS = 64


class ServeConfig(uvicorn.Config):
    """uvicorn's configuration plus the header deadline; a module-level class, so it reaches
    the worker processes (``--workers N``) intact."""

    def __init__(self, app: str | FastAPI, *, header_timeout_s: float, **options: Any) -> None:
        super().__init__(app, http=GuardedHttpProtocol, **options)
        self.header_timeout_s = header_timeout_s


class GuardedHttpProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._header_timeout_s = getattr(config, "header_timeout_s", None)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limit = self.limit_concurrency
        if limit is not None and len(self.connections) > limit:
            transport.close()
            return
        self._await_headers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._stop_timer()
        if self._header_timeout_s is not None:
            self._header_timer = self.loop.call_later(self._header_timeout_s, self._headers_overdue)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_overdue(self) -> None:
        self._header_timer = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()


def raise_descriptor_limit(wanted: int) -> int:
    """Raise this process's soft limit of open files towards ``wanted`` (never above the hard
    limit); the limit in force is returned."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft
