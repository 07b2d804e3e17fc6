"""``youyou serve``: check the configuration, migrate once, then run uvicorn (one or more
worker processes) with logs that carry the request id."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

import uvicorn
import uvicorn.supervisors
from fastapi import FastAPI
from sqlalchemy.engine import make_url

from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.config import ServerOverrides, Settings, is_loopback, load_settings
from youyou.workbench.access import check_registration
from youyou.workbench.connections import RESERVED_DESCRIPTORS, ServeConfig, raise_descriptor_limit
from youyou.workbench.context import RequestIdFilter
from youyou.workbench.redaction import RedactSecrets
from youyou.workbench.store import WorkbenchStore

if TYPE_CHECKING:
    from youyou.config import ServerSettings
    from youyou.workbench.hub import SessionHub

LogFormat = Literal["text", "json"]
# The app is built by uvicorn's factory, in worker processes of their own when there are
# several: it resolves its settings from these exactly as ``serve`` did (file and overrides).
_CONFIG_ENV = "YOUYOU_SERVE_CONFIG"
_OVERRIDES_ENV = "YOUYOU_SERVE_OVERRIDES"
_LOG_ENV = "YOUYOU_SERVE_LOG_FORMAT"
# An SSE stream still open at shutdown is given this long after its turn was cancelled.
GRACEFUL_SHUTDOWN_S = 10
# A worker that does not answer uvicorn's health ping for this long is killed and replaced.
# A new worker answers only once it has imported the server (several seconds on a busy
# machine), so uvicorn's default of 5 s kills every worker before it starts, forever.
WORKER_HEALTHCHECK_S = 60
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    config: Path | None
    server: ServerOverrides = field(default_factory=ServerOverrides)
    log_format: LogFormat = "text"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "request_id": getattr(record, "request_id", "-"),
            "message": record.getMessage(),
        }
        trace_id = getattr(record, "trace_id", "-")
        if trace_id != "-":  # the request's trace, when [telemetry] is on and it is sampled
            entry["trace_id"] = trace_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:  # ``RedactSecrets`` leaves a redacted traceback here
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


def server_log_handler(handler: logging.Handler, log_format: LogFormat) -> logging.Handler:
    """``handler`` as every server log line goes out: with its request id, credentials
    blanked, as text or JSON."""
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecrets())
    handler.setFormatter(
        JsonFormatter()
        if log_format == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
    )
    return handler


def setup_server_logging(log_format: LogFormat) -> None:
    handler = server_log_handler(logging.StreamHandler(sys.stderr), log_format)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


def uses_demo_model(settings: Settings) -> bool:
    return all(p.offline_demo for p in settings.providers)


async def migrate_database(url: str) -> None:
    """Bring both schemas (the sessions' and the workbench's) to this version's newest: once
    before any worker starts, so a schema problem is one clear error; also ``db upgrade``."""
    storage = await SqlSessionStorage.open(url)
    await storage.close()
    store = await WorkbenchStore.open(url)
    await store.close()


SignalHandler = Callable[[int, FrameType | None], None]


def _chain_shutdown(hub: SessionHub) -> None:
    """Cancel running turns the moment a stop signal arrives, so their streams end and the
    server's graceful shutdown does not wait on them; then let uvicorn handle the signal."""
    loop = asyncio.get_running_loop()

    def chained(previous: Callable[[int, FrameType | None], Any]) -> SignalHandler:
        def handler(number: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(hub.begin_shutdown)
            previous(number, frame)

        return handler

    for signum in _STOP_SIGNALS:
        previous = signal.getsignal(signum)
        if callable(previous):
            signal.signal(signum, chained(previous))


def setup_server_process(hub: SessionHub) -> None:
    """What a server process (not the app) owns: stop signals reach the hub at once, and
    everything built so far (modules, schemas, the agent), which lives as long as the
    process, is kept out of full collections so a gen-2 pause stays a few ms."""
    _chain_shutdown(hub)
    gc.freeze()


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process: the settings ``serve`` resolved, command-line
    overrides included (without them a worker would listen to the file alone, and for
    ``--host 0.0.0.0`` leave sign-up open as if on loopback)."""
    from youyou.workbench.app import create_app

    log_format: LogFormat = "json" if os.environ.get(_LOG_ENV) == "json" else "text"
    setup_server_logging(log_format)
    config = os.environ.get(_CONFIG_ENV) or None
    overrides = ServerOverrides(**json.loads(os.environ.get(_OVERRIDES_ENV) or "{}"))
    settings = load_settings(Path(config) if config else None, server=overrides)
    return create_app(settings, on_started=setup_server_process)


def serve(options: ServeOptions, say: Callable[[str], None]) -> int:
    """``say`` prints the start-up lines (the URL, warnings)."""
    settings = load_settings(options.config, server=options.server)
    check_registration(settings)
    server = settings.server
    url = make_url(settings.database.url)
    if server.workers > 1 and url.get_backend_name() == "sqlite":
        say(
            "error: --workers > 1 needs PostgreSQL: SQLite has one writer per file, so "
            "several server processes cannot share it. Set [database] url or "
            "YOUYOU_DATABASE_URL to a postgresql:// URL, or run one worker."
        )
        return 2
    asyncio.run(migrate_database(settings.database.url))
    if not is_loopback(server.host):
        say(
            f"warning: listening on {server.host}, reachable from other machines; put TLS "
            f"in front of it. Registration is {server.registration_mode}."
        )
    if uses_demo_model(settings):
        say(
            "note: using the offline demo model. To use a real model, add [[providers]] to "
            "youyou.toml and start with --config PATH (see the README's 'Using real models')."
        )
    say(f"database: {url.render_as_string(hide_password=True)}")
    say(f"YouYou workbench on http://{_url_host(server.host)}:{server.port}  (Ctrl+C stops it)")
    os.environ[_CONFIG_ENV] = str(options.config.resolve()) if options.config else ""
    os.environ[_OVERRIDES_ENV] = json.dumps(options.server.values())
    os.environ[_LOG_ENV] = options.log_format
    setup_server_logging(options.log_format)
    descriptors = raise_descriptor_limit(server.max_connections + RESERVED_DESCRIPTORS)
    if descriptors < server.max_connections + RESERVED_DESCRIPTORS:
        say(
            f"warning: this process may open only {descriptors} files (ulimit -n), too few "
            f"for [server] max_connections = {server.max_connections}; lower it or raise "
            "the limit."
        )
    config = uvicorn_config(server, "youyou.workbench.server:app_from_environment")
    if server.workers > 1:
        sock = config.bind_socket()
        uvicorn.supervisors.Multiprocess(config, sockets=[sock]).run()
    else:
        _QuietServer(config).run()
    return 0


def uvicorn_config(server: ServerSettings, app: str | FastAPI) -> ServeConfig:
    """The one uvicorn configuration of a workbench: ``app`` is the worker factory's import
    path for ``youyou serve``, or an app built in this process (tests, embedding)."""
    return ServeConfig(
        app,
        header_timeout_s=server.header_timeout_s,
        factory=isinstance(app, str),
        host=server.host,
        port=server.port,
        workers=server.workers,
        log_config=None,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        timeout_keep_alive=server.keep_alive_timeout_s,
        limit_concurrency=server.max_connections,
        server_header=False,
        # X-Forwarded-For is believed only from the configured proxies: uvicorn takes the
        # nearest address that is not one of them.
        proxy_headers=bool(server.trusted_proxies),
        forwarded_allow_ips=list(server.trusted_proxies) or None,
    )


class _QuietServer(uvicorn.Server):
    """A stop signal is the normal way to end a server: after the graceful shutdown it exits
    0 instead of re-raising the signal (uvicorn's default, which exits -15)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in _STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
