"""Driving the real workbench: ``youyou serve`` in a subprocess on a free 127.0.0.1 port,
``httpx`` as the client, SSE parsed from the wire, and the ``openai`` provider pointed at the
protocol-faithful fake OpenAI server running in the test process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from fakes.http_server import RecordedRequest
from fakes.openai_server import FakeOpenAIServer, text_reply

_SCRIPT = Path(sys.executable).with_name("youyou")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "youyou"]
MODEL = "fake-model"
START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_config(
    root: Path,
    database_url: str,
    model_base_url: str,
    *,
    context_window: int = 128_000,
    extra: str = "",
    memory: bool = False,
) -> Path:
    """A ``youyou.toml`` for one fake OpenAI-compatible model."""
    config = root / "youyou.toml"
    config.write_text(
        f'[database]\nurl = "{database_url}"\n\n'
        f"[memory]\nenabled = {'true' if memory else 'false'}\n\n"
        f"{extra}\n\n"
        f'[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{model_base_url}"\n'
        "max_attempts = 1\ntimeout_s = 20\n\n"
        f'[[providers.models]]\nid = "{MODEL}"\ncontext_window = {context_window}\n'
        'capabilities = ["tool_use", "vision", "streaming"]\n',
        encoding="utf-8",
    )
    return config


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


@dataclass
class Server:
    """One ``youyou serve`` process; ``stop()`` sends SIGTERM and returns the exit code."""

    root: Path
    config: Path
    port: int
    process: subprocess.Popen[str] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / f"server-{self.port}.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("YOUYOU_")}
        env.update(
            HOME=str(self.root),
            XDG_DATA_HOME=str(self.root / "xdg-data"),
            NO_PROXY="127.0.0.1,localhost",
            **self.extra_env,
        )
        return env

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
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server did not start: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    def stop(self, timeout_s: float = 30) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout_s)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


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

    server: Server
    model: FakeOpenAIServer
    clients: list[Api] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def user(self, username: str) -> Api:
        api = Api.signed_up(self.url, username)
        self.clients.append(api)
        return api

    def close(self) -> None:
        for api in self.clients:
            api.close()
