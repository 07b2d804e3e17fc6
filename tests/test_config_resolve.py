"""The one resolve step (``youyou.config.load``): the file, then the environment, then the
command line's server options, validated together. A configuration file that cannot be used
is INVALID_CONFIG naming it (exit 2), never a traceback; a provider or MCP URL without a
scheme is refused where it is written. ``youyou serve``'s workers resolve exactly what the
command resolved, so ``--host`` decides who may sign up in every worker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from cli_kit import COMMAND, TIMEOUT_S, Cli
from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import START_TIMEOUT_S, Server, kill_tree, start_together, write_config
from youyou.config import CONFIG_ENV, DATABASE_URL_ENV, ServerOverrides, load_settings
from youyou.domain.errors import AgentError, ErrorCode


def _config_error(path: Path) -> str:
    with pytest.raises(AgentError) as info:
        load_settings(path, environ={})
    assert info.value.code is ErrorCode.INVALID_CONFIG
    return info.value.message


def test_a_binary_file_is_not_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "youyou.toml"
    path.write_bytes(b"\xc2\x00\xff binary" * 10)
    assert _config_error(path) == f"{path} is not UTF-8 text (byte 0): is it really youyou.toml?"


def test_a_directory_is_not_a_configuration_file(tmp_path: Path) -> None:
    assert _config_error(tmp_path) == f"{tmp_path} is a directory, not a configuration file"


def test_an_endless_file_is_read_only_up_to_its_limit() -> None:
    assert "larger than 1 MiB" in _config_error(Path("/dev/zero"))


@pytest.mark.parametrize(
    ("table", "key"),
    [
        (
            '[[providers]]\nid = "p"\ntype = "openai"\nbase_url = "{url}"\n'
            '[[providers.models]]\nid = "m"\ncontext_window = 100\n',
            "providers[0].base_url",
        ),
        ('[[mcp_servers]]\nid = "s"\nurl = "{url}"\n', "mcp_servers[0].url"),
    ],
)
@pytest.mark.parametrize("url", ["localhost:8080/v1", "127.0.0.1:8080", "ftp://host/v1", "http://"])
def test_a_url_needs_a_scheme_and_a_host(tmp_path: Path, table: str, key: str, url: str) -> None:
    path = tmp_path / "youyou.toml"
    path.write_text(table.format(url=url), encoding="utf-8")
    assert f"{key}: must be an absolute http:// or https:// URL" in _config_error(path)


def test_the_cli_reports_an_unusable_config_with_exit_2(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    env_dir = tmp_path / "conf.d"
    env_dir.mkdir()
    cli.config.write_bytes(bytes(range(256)))
    for args, env in (
        (("sessions", "list"), {CONFIG_ENV: str(cli.config)}),
        (("sessions", "list"), {CONFIG_ENV: str(env_dir)}),
        (("chat", "-m", "hi"), {CONFIG_ENV: str(env_dir)}),
    ):
        result = subprocess.run(
            [*COMMAND, *args],
            capture_output=True,
            text=True,
            env={**cli.env(with_config=False), **env},
            timeout=TIMEOUT_S,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert "INVALID_CONFIG" in result.stderr and "Traceback" not in result.stderr


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_config_path_comes_from_the_environment_and_an_explicit_path_wins(
    tmp_path: Path,
) -> None:
    from_env = _write(tmp_path / "env.toml", "[server]\nport = 9001\n")
    explicit = _write(tmp_path / "explicit.toml", "[server]\nport = 9002\n")

    assert load_settings(environ={CONFIG_ENV: str(from_env)}).server.port == 9001
    assert load_settings(explicit, environ={CONFIG_ENV: str(from_env)}).server.port == 9002


def test_the_database_url_variable_wins_over_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "youyou.toml", '[database]\nurl = "sqlite:///./file.db"\n')
    url = "postgresql+asyncpg://app@127.0.0.1:5432/youyou"

    assert load_settings(path, environ={DATABASE_URL_ENV: url}).database.url == url
    assert load_settings(environ={DATABASE_URL_ENV: url}).database.url == url
    assert load_settings(path, environ={}).database.url == "sqlite:///./file.db"


def test_invalid_toml_and_a_missing_file(tmp_path: Path) -> None:
    assert "is not valid TOML" in _config_error(_write(tmp_path / "youyou.toml", "[server\n"))
    assert "configuration file not found" in _config_error(tmp_path / "missing.toml")


def test_command_line_server_options_win_over_the_file_and_keep_its_other_keys(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path / "youyou.toml",
        '[server]\nhost = "127.0.0.1"\nport = 9001\nworkers = 1\ntoken_ttl_hours = 2\n',
    )
    settings = load_settings(
        path, server=ServerOverrides(host="0.0.0.0", port=9100, workers=3), environ={}
    )
    server = settings.server
    assert (server.host, server.port, server.workers) == ("0.0.0.0", 9100, 3)
    assert server.token_ttl_hours == 2
    # what follows from the address follows the override: sign-up closes off loopback
    assert server.registration_mode == "closed"

    kept = load_settings(path, server=ServerOverrides(port=9200), environ={}).server
    assert (kept.host, kept.port, kept.workers, kept.registration_mode) == (
        "127.0.0.1",
        9200,
        1,
        "open",
    )
    assert load_settings(server=ServerOverrides(host="::1"), environ={}).server.host == "::1"


def test_an_override_is_validated_like_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "youyou.toml", "[server]\nport = 9001\n")
    with pytest.raises(AgentError) as info:
        load_settings(path, server=ServerOverrides(port=0), environ={})
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert f"invalid {path}: server.port: Input should be greater than or equal to 1" == (
        info.value.message
    )


@pytest.mark.parametrize(
    ("in_the_file", "on_the_command_line", "registration"),
    [
        ("", "0.0.0.0", "closed"),  # the file's default host is loopback
        ('host = "0.0.0.0"', "127.0.0.1", "open"),
    ],
)
def test_every_worker_of_serve_listens_to_the_command_line(
    tmp_path: Path,
    pg_url: str,
    fake_model: FakeOpenAIServer,
    in_the_file: str,
    on_the_command_line: str,
    registration: str,
) -> None:
    """Workers are processes of their own that resolve the settings again: given only the
    file, a server started with ``--host 0.0.0.0`` left sign-up open as if on loopback."""
    config = write_config(tmp_path, pg_url, fake_model.base_url, extra=f"[server]\n{in_the_file}")
    server = Server(tmp_path, config, free_port())
    args = ("--host", on_the_command_line, "--workers", "2")
    try:
        start_together(server, args=args, timeout_s=3 * START_TIMEOUT_S)
        for attempt in range(4):  # a new connection each time, so either worker may answer
            settings = httpx.get(f"{server.url}/auth/settings", timeout=30)
            assert settings.json()["data"]["registrationMode"] == registration
            signed_up = httpx.post(
                f"{server.url}/auth/register",
                json={"username": f"user{attempt}", "password": "correct horse"},
                timeout=30,
            )
            if registration == "open":
                assert signed_up.status_code == 201, signed_up.text
            else:
                assert signed_up.status_code == 403, signed_up.text
                assert signed_up.json()["error"]["code"] == "AUTH_REGISTRATION_DISABLED"
        assert server.stop() == 0
    finally:
        kill_tree(server)
