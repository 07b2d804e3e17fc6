"""The FastAPI application: storages and the agent opened in the lifespan, routes, and the
one error envelope for every failure."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from youyou import __version__
from youyou.adapters.settings import Settings
from youyou.bootstrap import build_agent_from_settings
from youyou.domain.errors import AgentError
from youyou.workbench.assembly import MANDATORY_CHAT_INSTRUCTIONS
from youyou.workbench.auth import Authenticator, LoginLimiter
from youyou.workbench.context import RequestContext, Workbench, error_body, request_id
from youyou.workbench.errors import ApiCode, ApiError, from_agent_error, language_of
from youyou.workbench.hub import SessionHub
from youyou.workbench.metrics import Metrics
from youyou.workbench.openapi import describe_real_responses
from youyou.workbench.routes import assets, auth, chat, knowledge, ops
from youyou.workbench.store import WorkbenchStore

logger = logging.getLogger(__name__)

SignalHandler = Callable[[int, FrameType | None], None]
_STATUS_CODES = {404: ApiCode.NOT_FOUND, 405: ApiCode.NOT_FOUND, 401: ApiCode.AUTH_UNAUTHENTICATED}


def workbench_settings(settings: Settings) -> Settings:
    """The workbench's mandatory instructions come first, before any configured ones."""
    agent = settings.agent.model_copy(
        update={
            "system_instructions": (
                MANDATORY_CHAT_INSTRUCTIONS,
                *settings.agent.system_instructions,
            )
        }
    )
    return settings.model_copy(update={"agent": agent})


def _error_response(request: Request, error: ApiError) -> Response:
    language = language_of(request.headers.get("accept-language"))
    body = error_body(error.code, language, error.detail, request_id(request))
    return Response(
        body, status_code=error.status, media_type="application/json", headers=error.headers
    )


def _field_problems(exc: RequestValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"] if part != "body")
        problems.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    return "; ".join(problems)


def _install_shutdown_hook(hub: SessionHub) -> None:
    """Cancel running turns the moment a stop signal arrives, so their streams end and the
    server's graceful shutdown does not wait on them; then let the server handle it."""
    loop = asyncio.get_running_loop()

    def chained(previous: Callable[[int, FrameType | None], Any]) -> SignalHandler:
        def handler(number: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(hub.begin_shutdown)
            previous(number, frame)

        return handler

    for signum in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(signum)
        if callable(previous):
            signal.signal(signum, chained(previous))


def create_app(settings: Settings) -> FastAPI:
    metrics = Metrics()
    settings = workbench_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        built = await build_agent_from_settings(settings, knowledge=True)
        try:
            store = await WorkbenchStore.on(built.session_storage.engine)
        except BaseException:
            await built.close()
            raise
        server = settings.server
        hub = SessionHub(
            built.agent,
            built.session_storage,
            store,
            server,
            settings.compaction.mode,
            metrics,
            built.mcp,
            settings.memory.close_timeout_s,
            built.knowledge,
            memories=built.memory_storage,
        )
        authenticator = Authenticator(
            store,
            LoginLimiter(server.login_attempts, server.login_window_s),
            timedelta(hours=server.token_ttl_hours),
        )
        app.state.workbench = Workbench(settings, built, store, hub, authenticator, metrics)
        hub.start()
        _install_shutdown_hook(hub)
        # Everything built so far (modules, schemas, the agent) lives as long as the process:
        # kept out of full collections, a gen-2 pause drops from ~100 ms to a few ms.
        gc.freeze()
        logger.info("workbench ready (process %s)", hub.holder)
        try:
            yield
        finally:
            await hub.shutdown()
            await built.close()
            await store.close()
            logger.info("workbench stopped")

    app = FastAPI(
        title="YouYou workbench",
        version=__version__,
        description="HTTP + SSE API of the YouYou on-call workbench.",
        lifespan=lifespan,
    )
    for router in (auth.router, assets.router, knowledge.router, chat.router, ops.router):
        app.include_router(router)
    describe_real_responses(app)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return _error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        return _error_response(
            request, ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, _field_problems(exc))
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = _STATUS_CODES.get(exc.status_code, ApiCode.VALIDATION_INVALID_ARGUMENT)
        return _error_response(request, ApiError(code))

    @app.exception_handler(AgentError)
    async def kernel_error(request: Request, exc: AgentError) -> Response:
        logger.warning("request failed: %s", exc, exc_info=exc)
        return _error_response(request, from_agent_error(exc))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        logger.error("unhandled error", exc_info=exc)
        return _error_response(request, ApiError(ApiCode.INTERNAL_ERROR))

    app.mount("/", StaticFiles(directory=Path(__file__).with_name("static"), html=True), name="web")
    app.add_middleware(
        RequestContext, metrics=metrics, max_body_bytes=settings.server.max_body_bytes
    )
    return app
