"""The FastAPI application: storages and the agent opened in the lifespan, routes, and the
one error envelope for every failure."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from youyou import __version__
from youyou.bootstrap import Writer, build_agent_from_settings
from youyou.config import Settings
from youyou.domain.errors import AgentError
from youyou.ports.tracer import Tracer
from youyou.workbench.access import (
    AccessLists,
    bind_access_lists,
    check_registration,
    promote_admins,
)
from youyou.workbench.assembly import MANDATORY_CHAT_INSTRUCTIONS
from youyou.workbench.auth import Authenticator, Passwords, Throttles
from youyou.workbench.context import RequestContext, Workbench, error_body, request_id
from youyou.workbench.errors import ApiCode, ApiError, from_agent_error, language_of
from youyou.workbench.hub import SessionHub
from youyou.workbench.intake import BodyLimits
from youyou.workbench.metrics import Metrics
from youyou.workbench.openapi import describe_real_responses
from youyou.workbench.routes import (
    admin,
    admin_usage,
    assets,
    auth,
    chat,
    knowledge,
    ops,
    session_export,
    session_search,
    ui_settings,
    usage,
)
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.turn_runner import LEASE_POLL_S
from youyou.workbench.validation import field_problems
from youyou.workbench.webui import WebUi, serve_web_ui

logger = logging.getLogger(__name__)

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
    body = error_body(error, language, request_id(request))
    return Response(
        body, status_code=error.status, media_type="application/json", headers=error.headers
    )


async def _prepared_accounts(settings: Settings) -> AccessLists:
    """Dead token rows purged, ``[server] admins`` promoted, and the access lists bound to
    the accounts that exist now (``youyou.workbench.access``)."""
    store = await WorkbenchStore.open(settings.database.url)
    try:
        await store.purge_tokens(datetime.now(UTC))
        await promote_admins(settings, store)
        return await bind_access_lists(settings, store)
    finally:
        await store.close()


def create_app(
    settings: Settings,
    *,
    on_started: Callable[[SessionHub], None] | None = None,
    tracer: Tracer | None = None,
) -> FastAPI:
    """The app, with no effect on the process: ``on_started`` (given by ``youyou serve``'s
    process setup) runs once the hub is up, for what belongs to a whole process (signal
    handlers, garbage-collector tuning). ``tracer`` takes the spans instead of the exporter
    of ``[telemetry]`` (an embedding program's, or a test's)."""
    metrics = Metrics()
    settings = workbench_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        check_registration(settings)
        access = await _prepared_accounts(settings)
        # The tag tells apart two lives of one pid (a restart that got the same number).
        writer = Writer("youyou serve", tag=uuid.uuid4().hex[:8], renew_every_s=LEASE_POLL_S)
        built = await build_agent_from_settings(
            settings, knowledge=True, tracer=tracer, writer=writer
        )
        try:
            store = await WorkbenchStore.on(built.session_storage.engine)
        except BaseException:
            await built.close()
            raise
        server = settings.server
        hub = SessionHub(
            agent=built.agent,
            storage=built.session_storage,
            store=store,
            settings=server,
            default_mode=settings.compaction.mode,
            metrics=metrics,
            mcp=built.mcp,
            close_timeout_s=settings.memory.close_timeout_s,
            knowledge=built.knowledge,
            memories=built.memory_storage,
            access=access,
            prices=settings.model_prices(),
        )
        authenticator = Authenticator(
            store,
            Throttles.of(server),
            timedelta(hours=server.token_ttl_hours),
            Passwords(server),
        )
        sign_on = None
        if server.oidc is not None:  # its libraries are loaded only for single sign-on
            from youyou.workbench.oidc import OidcLogin

            sign_on = OidcLogin(server.oidc, store, server.admins)
        app.state.workbench = Workbench(
            settings, built, store, hub, authenticator, metrics, sign_on
        )
        hub.start()
        if on_started is not None:
            on_started(hub)
        logger.info("workbench ready (process %s)", hub.holder)
        try:
            yield
        finally:
            await hub.shutdown()
            await store.close()  # first: it holds a connection of the storage's engine
            await built.close()
            logger.info("workbench stopped")

    # No trailing-slash redirects: Starlette builds their Location from the Host header.
    docs = settings.server.api_docs
    app = FastAPI(
        title="YouYou workbench",
        version=__version__,
        description="HTTP + SSE API of the YouYou on-call workbench.",
        lifespan=lifespan,
        redirect_slashes=False,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
    )
    routers = (
        auth.router,
        admin.router,
        admin_usage.router,
        assets.router,
        knowledge.router,
        session_search.router,  # before chat's /chat/sessions/{session_id}
        chat.router,
        session_export.router,
        usage.router,
        ops.router,
        ui_settings.router,
    )
    for router in routers:
        app.include_router(router)
    describe_real_responses(app)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> Response:
        return _error_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        return _error_response(
            request, ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, field_problems(exc.errors()))
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

    serve_web_ui(app, WebUi.load())
    app.add_middleware(
        RequestContext, metrics=metrics, limits=BodyLimits.of(settings.server, routers)
    )
    return app
