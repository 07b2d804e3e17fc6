"""``deploy/nginx.conf`` in front of two ``youyou serve`` processes on one PostgreSQL database:
one port for both, answers streamed through it unbuffered, and a stopped process's sessions
served by the other. The committed configuration is used as it is, with only the upstream
ports and the listening address changed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from fakes.openai_server import FakeOpenAIServer, OpenAIStream
from port_kit import free_port
from server_kit import Api, Frame, Server, parse_sse, start_together, write_config
from youyou.config import parse_settings
from youyou.domain.errors import AgentError

REPO = Path(__file__).resolve().parents[1]
PIECE_S = 0.4  # the fake model's pause between the pieces of an answer


def _nginx_config(root: Path, port: int, upstreams: tuple[int, int]) -> Path:
    site = (REPO / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    ports = iter(upstreams)
    site, replaced = re.subn(
        r"server 127\.0\.0\.1:800[12]", lambda _: f"server 127.0.0.1:{next(ports)}", site
    )
    assert replaced == 2, "deploy/nginx.conf names its two upstreams 127.0.0.1:8001 and :8002"
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    (root / "youyou-site.conf").write_text(site, encoding="utf-8")
    main = root / "nginx.conf"
    user = "user root;\n" if os.geteuid() == 0 else ""
    main.write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {root}/nginx.pid;\n"
        f"error_log {root}/nginx-error.log;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"  access_log off;\n  client_body_temp_path {root}/body;\n"
        f"  proxy_temp_path {root}/proxy;\n"
        f"  include {root}/youyou-site.conf;\n"
        "}\n",
        encoding="utf-8",
    )
    return main


def _read_stream(api: Api, session_id: str, text: str) -> list[tuple[float, Frame]]:
    """Each frame of the answer with the time it arrived."""
    arrived: list[tuple[float, Frame]] = []
    with api.http.stream(
        "POST", f"/chat/sessions/{session_id}/messages", json={"content": text}
    ) as response:
        assert response.status_code == 200, response.read().decode()
        for frame in parse_sse(response.iter_lines()):
            if isinstance(frame, Frame):
                arrived.append((time.monotonic(), frame))
    return arrived


def test_two_servers_behind_nginx_stream_unbuffered_and_cover_for_each_other(
    tmp_path: Path, migrated_pg_url: str
) -> None:
    # Never skipped: CI installs nginx (.ci/run), so a machine without it fails here.
    assert shutil.which("nginx"), "nginx is needed: apt-get install nginx-light"
    with FakeOpenAIServer() as model:
        model.default = lambda _request: (
            OpenAIStream()
            .text("Checked ", "the pods: ", "all ", "healthy.", delay_s=PIECE_S)
            .finish()
            .usage(10, 4)
            .reply()
        )
        config = write_config(
            tmp_path, migrated_pg_url, model.base_url, extra='[server]\nregistration = "open"'
        )
        servers = (
            Server(tmp_path, config, free_port()),
            Server(tmp_path, config, free_port()),
        )
        port = free_port()
        main = _nginx_config(tmp_path, port, (servers[0].port, servers[1].port))
        start_together(*servers)
        nginx = subprocess.Popen(
            ["nginx", "-c", str(main), "-p", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        try:
            _check_through(f"http://127.0.0.1:{port}", servers)
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
            for server in servers:
                server.kill()


def _check_through(url: str, servers: tuple[Server, Server]) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "nginx did not start"
        time.sleep(0.1)

    api = Api.signed_up(url, "oncall")
    session = api.new_session()
    arrived = _read_stream(api, session["id"], "is checkout healthy?")
    deltas = [at for at, frame in arrived if frame.event == "text_delta"]
    assert arrived[-1][1].event == "turn_complete"
    assert len(deltas) >= 3
    # Unbuffered (proxy_buffering off, and the server says X-Accel-Buffering: no): the first
    # piece reached the client well before the last one was written.
    assert deltas[-1] - deltas[0] > 2 * PIECE_S

    # Both processes answer behind the one port: stop one, and the same session goes on.
    assert servers[0].stop() == 0
    arrived = _read_stream(api, session["id"], "and now?")
    assert arrived[-1][1].event == "turn_complete"
    history = api.data("GET", f"/chat/sessions/{session['id']}/messages")
    assert "all healthy." in str(history)
    api.close()


def _register(url: str, username: str, client: str) -> int:
    response = httpx.post(
        f"{url}/auth/register",
        json={"username": username, "password": "correct horse"},
        headers={"X-Forwarded-For": client},
        timeout=30,
    )
    return response.status_code


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted proxy", "no proxy configured"])
def test_per_address_limits_count_each_client_behind_a_trusted_proxy_only(
    tmp_path: Path, fake_model: FakeOpenAIServer, trusted: bool
) -> None:
    proxies = 'trusted_proxies = ["127.0.0.0/8"]\n' if trusted else ""
    config = write_config(
        tmp_path,
        f"sqlite:///{tmp_path / 'youyou.db'}",
        fake_model.base_url,
        extra=f'[server]\nregistration = "open"\nregistration_attempts = 1\n{proxies}',
    )
    server = Server(tmp_path, config, free_port()).start()
    try:
        assert _register(server.url, "ann", "203.0.113.5") == 201
        assert _register(server.url, "bob", "203.0.113.5") == 429
        # Another client behind the same proxy: its own count, unless the header is ignored.
        assert _register(server.url, "cid", "198.51.100.7") == (201 if trusted else 429)
    finally:
        assert server.stop() == 0


def test_a_trusted_proxy_must_be_an_address_or_network() -> None:
    with pytest.raises(AgentError) as info:
        parse_settings({"server": {"trusted_proxies": ["proxy.internal"]}})
    assert "'proxy.internal' is not an IP address or network" in info.value.message
