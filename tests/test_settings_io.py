"""A configuration file that cannot be used is INVALID_CONFIG naming it (exit 2), never a
traceback; a provider or MCP URL without a scheme is refused where it is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_kit import COMMAND, TIMEOUT_S, Cli
from youyou.adapters.settings import CONFIG_ENV, load_settings
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
