"""Driving the real workbench over a real socket on a free 127.0.0.1 port: the app served by
uvicorn in a thread of the test process (``InProcessServer``, the default), or ``youyou serve``
in a subprocess (``Server``) where a test needs a process of its own (signals, crashes,
workers, the command line). ``httpx`` is the client, SSE is parsed from the wire, and the
``openai`` provider points at the protocol-faithful fake OpenAI server of the test process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from sqlalchemy import text

from fakes.http_server import RecordedRequest, StreamReply
from fakes.openai_server import FakeOpenAIServer, OpenAIStream, text_reply
from youyou.adapters.storage.engine import create_engine
from youyou.config import load_settings
from youyou.ports.tracer import Tracer
from youyou.workbench.app import create_app
from youyou.workbench.hub import SessionHub
from youyou.workbench.server import server_log_handler, uvicorn_config

_SCRIPT = Path(sys.executable).with_name("youyou")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "youyou"]
MODEL = "fake-model"
START_TIMEOUT_S = 60  # a loaded 2-core machine, several test runs at once


# Waiting for a server to listen: one client per wait, since ``httpx.get`` builds a client and
# its SSL context (~20 ms of CPU) on every call, which a start-up on a loaded machine can
# ill afford several times a second.
PROBE_INTERVAL_S = 0.05


def probe_client() -> httpx.Client:
    return httpx.Client(timeout=1)


def is_healthy(probe: httpx.Client, url: str) -> bool:
    """``GET /healthz`` answered 200 (False while nothing listens)."""
    try:
        return probe.get(f"{url}/healthz").status_code == 200
    except httpx.TransportError:
        return False


CHEAP_HASHING = "password_hash_memory_kib = 8192\npassword_hash_iterations = 1\n"
"""Argon2id at 8 MiB and 1 pass: a sign-up costs milliseconds instead of a fifth of a second,
and the many sign-ups of the suite still go through the real hashing."""


def with_table_keys(toml: str, table: str, keys: str) -> str:
    """``toml`` with ``keys`` in its ``[table]`` (one is added when it has none)."""
    lines = toml.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == f"[{table}]":
            return "".join([*lines[: index + 1], keys, *lines[index + 1 :]])
    return f"[{table}]\n{keys}\n{toml}"


def write_config(
    root: Path,
    database_url: str,
    model_base_url: str,
    *,
    context_window: int = 128_000,
    extra: str = "",
    memory: bool = False,
    memory_keys: str = "",
    model_keys: str = "",
) -> Path:
    """A ``youyou.toml`` for one fake OpenAI-compatible model; ``memory_keys`` and
    ``model_keys`` are more lines of its ``[memory]`` and ``[[providers.models]]`` tables.
    Password hashes are made at the lowest cost the server accepts (``CHEAP_HASHING``), unless
    ``extra`` sets their cost itself. ``extra`` may hold a ``[database]`` table (more keys
    beside the ``url``) and a ``[server]`` one."""
    config = root / "youyou.toml"
    if "password_hash_" not in extra:
        extra = with_table_keys(extra, "server", CHEAP_HASHING)
    extra = with_table_keys(extra, "database", f'url = "{database_url}"\n')
    config.write_text(
        f"[memory]\nenabled = {'true' if memory else 'false'}\n{memory_keys}\n\n"
        f"{extra}\n\n"
        f'[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{model_base_url}"\n'
        "max_attempts = 1\ntimeout_s = 20\n\n"
        f'[[providers.models]]\nid = "{MODEL}"\ncontext_window = {context_window}\n'
        f'capabilities = ["tool_use", "vision", "streaming"]\n{model_keys}\n',
        encoding="utf-8",
    )
    return config


async def ledger_id_of(db_url: str, chat_id: str) -> str:
    """The kernel session behind a chat session, read from the workbench's database."""
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            found = await conn.scalar(
                text("SELECT ledger_session_id FROM wb_chat_sessions WHERE id = :id"),
                {"id": chat_id},
            )
    finally:
        await engine.dispose()
    assert found is not None, f"no chat session {chat_id}"
    return str(found)


def answer_ok(request: RecordedRequest) -> Any:
    """Default reply of the fake model: a short answer to anything not scripted."""
    return text_reply("ok")


@dataclass
class Frame:
    id: int | None
    event: str
    data: dict[str, Any]


def parse_sse(lines: Iterator[str]) -> Iterator[Frame | str]:
    """Frames (and comment lines, as str) in the order they arrive on the wire."""
    event_id: int | None = None
    event = "message"
    data: list[str] = []
    for line in lines:
        if line.startswith(":"):
            yield line
        elif line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield Frame(event_id, event, json.loads("\n".join(data)))
            event_id, event, data = None, "message", []


def isolated_env(root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``youyou`` subprocess: no ``YOUYOU_*`` of the test run, its home
    and data directory under ``root``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("YOUYOU_")}
    env.update(
        HOME=str(root),
        XDG_DATA_HOME=str(root / "xdg-data"),
        NO_PROXY="127.0.0.1,localhost",
        **(extra or {}),
    )
    return env


class _Listening:
    """Where a server of the tests listens and writes its log."""

    root: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / f"server-{self.port}.log"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""


@dataclass
class Server(_Listening):
    """One ``youyou serve`` process; ``stop()`` sends SIGTERM and returns the exit code."""

    root: Path
    config: Path
    port: int
    process: subprocess.Popen[str] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return isolated_env(self.root, self.extra_env)

    def start(self, *args: str) -> Server:
        log = self.log_path.open("a", encoding="utf-8")
        self.process = subprocess.Popen(
            [*COMMAND, "serve", "--config", str(self.config), "--port", str(self.port), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=str(self.root),
            text=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        with probe_client() as probe:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited: {self.log()}")
                if is_healthy(probe, self.url):
                    return self
                time.sleep(PROBE_INTERVAL_S)
        self.kill()
        raise RuntimeError(f"server did not start: {self.log()}")

    def stop(self, timeout_s: float = 30) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class InProcessServer(_Listening):
    """The workbench app served by uvicorn in a thread of this process, with the same app and
    uvicorn configuration as ``youyou serve`` but no process start (a few hundred ms instead
    of seconds). Its log lines (the root logger's, while it runs) go to ``log_path``."""

    def __init__(
        self, root: Path, config: Path, port: int, *, tracer: Tracer | None = None
    ) -> None:
        self.root = root
        self.config = config
        self.port = port
        self.tracer = tracer  # instead of [telemetry]'s exporter: a test reading spans back
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._log_handler: logging.Handler | None = None
        self._hub: SessionHub | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._root_level = logging.WARNING

    def env(self) -> dict[str, str]:
        """For the ``youyou`` commands a test runs beside this server."""
        return isolated_env(self.root)

    def start(self) -> InProcessServer:
        self._capture_log()
        settings = load_settings(self.config)
        server_settings = settings.server.model_copy(update={"port": self.port})
        app = create_app(settings, on_started=self._started, tracer=self.tracer)
        self._server = uvicorn.Server(uvicorn_config(server_settings, app))
        self._thread = threading.Thread(target=self._serve, args=(self._server,), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start: {self.log()}")
            time.sleep(0.02)
        return self

    @staticmethod
    def _serve(server: uvicorn.Server) -> None:
        """A start-up failure ends uvicorn with SystemExit: here it ends only the thread, and
        ``start`` reports it with the log."""
        with contextlib.suppress(SystemExit):
            server.run()

    def _capture_log(self) -> None:
        handler = server_log_handler(logging.FileHandler(self.log_path, encoding="utf-8"), "text")
        root = logging.getLogger()
        self._root_level = root.level
        root.setLevel(logging.INFO)
        root.addHandler(handler)
        self._log_handler = handler

    def stop(self, timeout_s: float = 30) -> int:
        """What SIGTERM does to ``youyou serve``: running turns are cancelled at once, then a
        graceful shutdown; 0 once the server has stopped."""
        server, thread = self._server, self._thread
        if server is not None and thread is not None and thread.is_alive():
            if self._hub is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._hub.begin_shutdown)
            server.should_exit = True
            thread.join(timeout_s)
        self._release_log()
        return 0 if thread is None or not thread.is_alive() else 1

    def kill(self) -> None:
        self.stop()

    def _started(self, hub: SessionHub) -> None:
        self._hub = hub
        self._loop = asyncio.get_running_loop()

    def _release_log(self) -> None:
        if self._log_handler is not None:
            root = logging.getLogger()
            root.removeHandler(self._log_handler)
            root.setLevel(self._root_level)
            self._log_handler.close()
            self._log_handler = None


class Api:
    """An ``httpx`` client for one user of the workbench."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=30)
        self.token = token

    @classmethod
    def signed_up(cls, base_url: str, username: str, password: str = "correct horse") -> Api:
        anonymous = httpx.Client(base_url=base_url, timeout=30)
        response = anonymous.post(
            "/auth/register", json={"username": username, "password": password}
        )
        assert response.status_code == 201, response.text
        login = anonymous.post("/auth/login", json={"username": username, "password": password})
        assert login.status_code == 200, login.text
        anonymous.close()
        return cls(base_url, login.json()["data"]["accessToken"])

    def data(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> Any:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == expect, (
            f"{method} {path}: {response.status_code} {response.text}"
        )
        return response.json()["data"] if response.content else None

    def error(self, method: str, path: str, expect: int, **kwargs: Any) -> dict[str, Any]:
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == expect, (
            f"{method} {path}: {response.status_code} {response.text}"
        )
        body = response.json()
        assert body["requestId"] == response.headers["x-request-id"]
        error: dict[str, Any] = body["error"]
        return error

    def new_session(self, **body: Any) -> dict[str, Any]:
        session: dict[str, Any] = self.data("POST", "/chat/sessions", 201, json=body)
        return session

    def send(self, session_id: str, content: Any, **kwargs: Any) -> list[Frame]:
        """Send and read the whole SSE answer (keep-alive comments dropped)."""
        with self.http.stream(
            "POST", f"/chat/sessions/{session_id}/messages", json={"content": content}, **kwargs
        ) as response:
            assert response.status_code == 200, response.read().decode()
            assert response.headers["content-type"].startswith("text/event-stream")
            return [f for f in parse_sse(response.iter_lines()) if isinstance(f, Frame)]

    def close(self) -> None:
        self.http.close()


@dataclass
class Workbench:
    """A running server, its fake model, and helpers to sign users up."""

    server: Server | InProcessServer
    model: FakeOpenAIServer
    clients: list[Api] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def process(self) -> subprocess.Popen[str]:
        """The ``youyou serve`` process of a workbench started with ``process=True`` (or CLI
        arguments); a test that reads it on an in-process server is wrong, hence the assert."""
        assert isinstance(self.server, Server), "start_workbench(process=True) has a process"
        assert self.server.process is not None, "the server process has not started"
        return self.server.process

    def user(self, username: str) -> Api:
        api = Api.signed_up(self.url, username)
        self.clients.append(api)
        return api

    def signed_in(self, username: str, password: str = "correct horse") -> Api:
        """A user whose account exists already (made by ``with_accounts``)."""
        with httpx.Client(base_url=self.url, timeout=30) as anonymous:
            login = anonymous.post("/auth/login", json={"username": username, "password": password})
        assert login.status_code == 200, login.text
        api = Api(self.url, login.json()["data"]["accessToken"])
        self.clients.append(api)
        return api

    def close(self) -> None:
        for api in self.clients:
            api.close()


CLOSED_REGISTRATION = '[server]\nregistration = "closed"\n'


def with_accounts(
    start: Callable[..., Workbench], usernames: tuple[str, ...], **config: Any
) -> Workbench:
    """Signs ``usernames`` up on a first server, stops it, then starts the server ``config``
    describes on the same database: ``users`` access lists bind to the accounts that exist
    when the server starts, and need closed registration (``CLOSED_REGISTRATION``)."""
    signup = start()
    for username in usernames:
        signup.user(username)
    signup.close()
    assert signup.server.stop() == 0
    return start(**config)


# -- helpers for process-level tests (several servers, signals, streams read in the background) --


def start_together(
    *servers: Server, args: tuple[str, ...] = (), timeout_s: float | None = None
) -> None:
    """Start several servers at once; on a loaded machine they may take a while together
    (the default timeout is ``START_TIMEOUT_S`` per server)."""
    for server in servers:
        server.process = subprocess.Popen(
            [*COMMAND, "serve", "--config", str(server.config), "--port", str(server.port), *args],
            stdout=server.log_path.open("a", encoding="utf-8"),
            stderr=subprocess.STDOUT,
            env=server.env(),
            cwd=str(server.root),
            text=True,
        )
    deadline = time.monotonic() + (timeout_s or START_TIMEOUT_S * len(servers))
    with probe_client() as probe:
        for server in servers:
            process = server.process
            assert process is not None
            while not is_healthy(probe, server.url):
                if process.poll() is not None or time.monotonic() > deadline:
                    for each in servers:
                        each.kill()
                    raise RuntimeError(f"server {server.port} did not start: {server.log()}")
                time.sleep(PROBE_INTERVAL_S)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (uvicorn's worker processes), read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid …": comm may hold spaces and parentheses
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def kill_tree(server: Server) -> None:
    """SIGKILL a server and every process it started (``--workers N``)."""
    if server.process is None:
        return
    children = descendants(server.process.pid)
    server.kill()  # first the supervisor, so that it starts no new worker
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()


class StreamingSend:
    """A send whose SSE answer is read frame by frame in a background thread, so a test can
    act (cancel, signal, send elsewhere) while the turn runs."""

    def __init__(
        self,
        api: Api,
        session_id: str,
        content: Any,
        timeout_s: float = 60,
        *,
        last_event_id: int | None = None,
    ) -> None:
        """``last_event_id`` given: a re-attach (``GET …/stream``) instead of a send."""
        self.frames: list[Frame] = []
        self.status: int | None = None
        self.body = b""
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._changed = threading.Condition()
        self._http = httpx.Client(
            base_url=api.http.base_url, headers=api.http.headers, timeout=timeout_s
        )
        path = f"/chat/sessions/{session_id}"
        if last_event_id is None:
            request: dict[str, Any] = {
                "method": "POST",
                "url": f"{path}/messages",
                "json": {"content": content},
            }
        else:
            request = {
                "method": "GET",
                "url": f"{path}/stream",
                "headers": {"Last-Event-ID": str(last_event_id)},
            }
        self._thread = threading.Thread(target=self._read, args=(request,), daemon=True)
        self._thread.start()

    @classmethod
    def reattach(cls, api: Api, session_id: str, last_event_id: int = 0) -> StreamingSend:
        return cls(api, session_id, None, last_event_id=last_event_id)

    def _read(self, request: dict[str, Any]) -> None:
        try:
            with self._http.stream(**request) as response:
                self.status = response.status_code
                if response.status_code != 200:
                    self.body = response.read()
                    return
                for item in parse_sse(response.iter_lines()):
                    if isinstance(item, Frame):
                        with self._changed:
                            self.frames.append(item)
                            self._changed.notify_all()
        except httpx.HTTPError as exc:  # e.g. the server was killed mid-stream
            self.error = exc
        finally:
            self._http.close()
            with self._changed:
                self.done.set()
                self._changed.notify_all()

    def events(self) -> list[str]:
        return [frame.event for frame in self.frames]

    def wait_for(self, event: str, timeout_s: float = 30) -> Frame:
        """The first frame named ``event``; fails if the stream ends or times out first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for frame in self.frames:
                    if frame.event == event:
                        return frame
                left = deadline - time.monotonic()
                if self.done.is_set() or left <= 0:
                    raise AssertionError(
                        f"no {event!r} frame: status {self.status}, events {self.events()}, "
                        f"error {self.error!r}, body {self.body[:500]!r}"
                    )
                self._changed.wait(left)

    def join(self, timeout_s: float = 30) -> list[Frame]:
        """All frames, once the stream has ended."""
        assert self.done.wait(timeout_s), f"stream still open; events so far {self.events()}"
        return self.frames

    def text(self) -> str:
        return "".join(f.data["text"] for f in self.frames if f.event == "text_delta")


def try_send(api: Api, session_id: str, content: Any) -> tuple[int, list[Frame], str]:
    """(status, frames, error code) of one send, whatever its status."""
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": content}
    ) as response:
        if response.status_code != 200:
            response.read()
            code: str = response.json()["error"]["code"]
            return response.status_code, [], code
        frames = [f for f in parse_sse(response.iter_lines()) if isinstance(f, Frame)]
        return 200, frames, ""


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses a local socket listens on ``port`` (from /proc/net/tcp)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, _, hex_port = local.partition(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A = LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


def pausing_reply(first: str, pause_s: float) -> StreamReply:
    """``first`` at once, then nothing for ``pause_s`` (a hang-up cuts the pause short),
    then the end of the answer."""
    return OpenAIStream().text(first).delay(pause_s).text("Done.").finish().usage(10, 5).reply()


def text_of(message: dict[str, Any]) -> str:
    """The text of a message of ``GET …/messages``."""
    return "".join(block.get("text", "") for block in message["content"])


def model_messages(request: RecordedRequest) -> list[tuple[str, str]]:
    """(role, text) of every message a request to the fake model carried."""
    out = []
    for message in request.json["messages"]:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append((message["role"], content))
    return out
