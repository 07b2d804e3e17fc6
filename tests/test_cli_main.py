"""``youyou sessions list|show|delete``, ``youyou db upgrade`` and ``python -m youyou``."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cli_kit import COMMAND, Cli
from youyou.adapters.storage.tables import VERSION_TABLE


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def two_sessions(cli: Cli) -> list[str]:
    """Ids of two stored sessions, the newest first."""
    cli.write_config([{"text": "the disk is full"}])
    assert cli.run("chat", "-m", "why did checkout fail?").returncode == 0
    cli.write_config([{"text": "restart it"}])
    assert cli.run("chat", "-m", "what about the queue?").returncode == 0
    return cli.session_ids()


def test_sessions_list_shows_newest_first_and_searches(cli: Cli, two_sessions: list[str]) -> None:
    listed = cli.run("sessions", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert two_sessions[0] in lines[1] and "what about the queue?" in lines[1]
    assert two_sessions[1] in lines[2] and "why did checkout fail?" in lines[2]
    found = cli.run("sessions", "list", "-q", "CHECKOUT")
    assert two_sessions[1] in found.stdout and two_sessions[0] not in found.stdout


def test_sessions_show_prints_the_history(cli: Cli, two_sessions: list[str]) -> None:
    shown = cli.run("sessions", "show", two_sessions[1][:8])
    assert shown.returncode == 0, shown.stderr
    assert "why did checkout fail?" in shown.stdout
    assert "the disk is full" in shown.stdout
    assert "2 messages" in shown.stdout


def test_sessions_delete_removes_a_session(cli: Cli, two_sessions: list[str]) -> None:
    deleted = cli.run("sessions", "delete", two_sessions[0])
    assert deleted.returncode == 0, deleted.stderr
    assert cli.session_ids() == [two_sessions[1]]
    again = cli.run("sessions", "show", two_sessions[0])
    assert again.returncode == 1 and "SESSION_NOT_FOUND" in again.stderr


def test_sessions_show_needs_an_unambiguous_prefix(cli: Cli, two_sessions: list[str]) -> None:
    ambiguous = cli.run("sessions", "show", "")
    assert ambiguous.returncode == 1 and "SESSION_NOT_FOUND" in ambiguous.stderr


def test_db_upgrade_creates_and_then_keeps_the_schema(cli: Cli) -> None:
    cli.write_config()
    first = cli.run("db", "upgrade")
    assert first.returncode == 0, first.stderr
    assert "database is up to date" in first.stdout
    with sqlite3.connect(cli.root / "youyou.db") as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master")}
        version = db.execute(f"select version_num from {VERSION_TABLE}").fetchall()
    assert {"sessions", "ledger_events", VERSION_TABLE} <= tables
    assert len(version) == 1
    assert cli.run("db", "upgrade").returncode == 0


def test_a_bad_configuration_exits_2_naming_the_key(cli: Cli) -> None:
    cli.config.write_text('[agent]\ndefault_model = "nope"\n', encoding="utf-8")
    result = cli.run("sessions", "list")
    assert result.returncode == 2
    assert "INVALID_CONFIG" in result.stderr and "agent.default_model" in result.stderr


def test_python_dash_m_youyou_runs_the_same_app(cli: Cli) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "youyou", "--help"],
        capture_output=True,
        text=True,
        env=cli.env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    for command in ("chat", "sessions", "db"):
        assert command in result.stdout


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (("--help",), "([[knowledge]])"),
        (("kb", "--help"), "[[knowledge]] directories"),
        (("mcp", "--help"), "[[mcp_servers]] entry"),
        (("chat", "--help"), "[agent].default_model"),
    ],
)
def test_help_names_configuration_tables_verbatim(
    cli: Cli, command: tuple[str, ...], shown: str
) -> None:
    """Help is plain text: a configuration table such as [[knowledge]] is shown as written."""
    result = cli.run(*command)
    assert result.returncode == 0
    assert shown in " ".join(result.stdout.split())


def test_a_database_from_a_newer_youyou_is_one_clear_error_and_stays_unchanged(
    cli: Cli,
) -> None:
    cli.write_config([{"text": "hello"}])
    assert cli.run("db", "upgrade").returncode == 0
    with sqlite3.connect(cli.root / "youyou.db") as db:
        db.execute(f"update {VERSION_TABLE} set version_num = '0099_from_a_newer_youyou'")
    before = _dump(cli.root / "youyou.db")
    for command in (["sessions", "list"], ["chat", "-m", "hi"], ["db", "upgrade"]):
        result = cli.run(*command)
        message = " ".join(result.stderr.split())
        assert result.returncode == 1, command
        assert "Traceback" not in result.stderr
        assert message.startswith("✗ STORAGE_ERROR: the database schema is at revision")
        assert "'0099_from_a_newer_youyou'" in message and "its newest is '0002'" in message
        assert "Upgrade YouYou" in message
    assert _dump(cli.root / "youyou.db") == before


def _dump(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return "\n".join(db.iterdump())


CONFIG_COMMANDS = (
    ("chat", "-m", "hi"),
    ("serve",),
    ("sessions", "list"),
    ("sessions", "show", "abc"),
    ("sessions", "delete", "abc"),
    ("db", "upgrade"),
    ("mcp", "list"),
    ("kb", "index"),
    ("kb", "search", "disk"),
)


@pytest.mark.parametrize("command", CONFIG_COMMANDS, ids=" ".join)
def test_config_option_reports_an_unusable_path_as_youyou_config_does(
    cli: Cli, command: tuple[str, ...]
) -> None:
    """``-c DIRECTORY`` is the same INVALID_CONFIG line and exit 2 as ``YOUYOU_CONFIG``, not a
    usage error of the option parser."""
    directory = cli.root / "conf.d"
    directory.mkdir()
    by_option = cli.run(*command, "-c", str(directory), with_config=False)
    env = {**cli.env(with_config=False), "YOUYOU_CONFIG": str(directory)}
    by_env = subprocess.run(
        [*COMMAND, *command], capture_output=True, text=True, env=env, cwd=cli.root, check=False
    )
    assert by_option.stderr.startswith("✗ INVALID_CONFIG: ")
    assert str(directory) in by_option.stderr
    assert (by_option.returncode, by_option.stderr) == (2, by_env.stderr)
    assert by_env.returncode == 2
