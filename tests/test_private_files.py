"""The data directory, the database files and the log are their owner's only, after a real
``youyou chat`` and a real ``youyou serve`` under the common umask 022."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli_kit import Cli
from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import Server


@pytest.fixture(autouse=True)
def common_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_chat_keeps_its_data_directory_database_and_log_private(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.write_config([{"text": "ok"}])
    # the default database: in the data directory
    cli.config.write_text(
        cli.config.read_text(encoding="utf-8").split("\n\n", 1)[1], encoding="utf-8"
    )
    result = cli.run("chat", "-m", "hello")
    assert result.returncode == 0, result.stderr
    data = cli.data_dir
    assert mode(data) == 0o700
    files = {p.name: mode(p) for p in data.iterdir()}
    assert {"youyou.db", "youyou.log"} <= files.keys(), files
    assert set(files.values()) == {0o600}, files


def test_an_old_readable_data_directory_is_closed(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.write_config([{"text": "ok"}])
    cli.data_dir.mkdir(parents=True, mode=0o755)
    assert cli.run("chat", "-m", "hello").returncode == 0
    assert mode(cli.data_dir) == 0o700


def test_serve_keeps_the_database_and_its_wal_private(
    tmp_path: Path, fake_model: FakeOpenAIServer
) -> None:
    config = tmp_path / "youyou.toml"
    config.write_text(
        f'[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{fake_model.base_url}"\n'
        '[[providers.models]]\nid = "m"\ncontext_window = 8000\n',
        encoding="utf-8",
    )
    server = Server(tmp_path, config, free_port()).start()
    try:
        register = httpx.post(
            f"{server.url}/auth/register", json={"username": "ann", "password": "long enough"}
        )
        assert register.status_code == 201, register.text
        data = tmp_path / "xdg-data" / "youyou"
        assert mode(data) == 0o700
        files = {p.name: mode(p) for p in data.iterdir()}
        assert {"youyou.db", "youyou.db-wal", "youyou.db-shm"} <= files.keys(), files
        assert set(files.values()) == {0o600}, files
    finally:
        assert server.stop() == 0
