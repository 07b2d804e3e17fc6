"""Storage errors are one line a user can act on (what failed, which database, the likely
fix) and leak nothing: no SQL, no bound parameters (the user's text), no password, no link;
the details go to the log. Reading needs no write lock: a read-only command is not blocked by
another process's long write."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from cli_kit import Cli, plain
from port_kit import free_port
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import LedgerEvent, UserMessage
from youyou.domain.session import SessionListQuery, next_summary

SECRET_LINE = "the root password of prod is hunter2"

_SQLITE_TRIGGER = (
    "CREATE TRIGGER refuse BEFORE INSERT ON ledger_events "
    "BEGIN SELECT RAISE(ABORT, 'the storage refused the row'); END"
)
_PG_TRIGGER = (
    "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
    "RAISE EXCEPTION 'the storage refused the row'; END $$ LANGUAGE plpgsql",
    "CREATE TRIGGER refuse BEFORE INSERT ON ledger_events FOR EACH ROW EXECUTE FUNCTION refuse()",
)


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


def _first_event(session_id: str) -> tuple[LedgerEvent, object]:
    event = LedgerEvent.model_validate(
        {
            "seq": 1,
            "timestamp": "2026-01-01T00:00:00Z",
            "payload": {"kind": "user_message", "content": [{"type": "text", "text": SECRET_LINE}]},
        }
    )
    assert isinstance(event.payload, UserMessage)
    return event, next_summary(None, session_id, event)


async def test_a_failed_write_is_one_line_without_sql_or_user_text(
    storage: SqlSessionStorage, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with storage.engine.begin() as conn:
        for statement in _PG_TRIGGER if "postgresql" in db_url else (_SQLITE_TRIGGER,):
            await conn.execute(text(statement))
    event, summary = _first_event("s1")

    with caplog.at_level(logging.WARNING), pytest.raises(AgentError) as info:
        await storage.append_event("s1", event, summary)  # type: ignore[arg-type]

    message = info.value.message
    assert info.value.code is ErrorCode.STORAGE_ERROR
    assert "\n" not in message
    assert message.startswith("appending event 1 to session 's1'")
    assert "the storage refused the row" in message
    for leak in (SECRET_LINE, "INSERT", "[SQL", "parameters", "sqlalche.me"):
        assert leak not in message
    url = make_url(db_url)
    where = url.database if url.get_backend_name() == "sqlite" else f"{url.host}:{url.port}"
    assert str(where) in message
    assert "INSERT INTO ledger_events" in caplog.text  # the details are in the log


@pytest.fixture(params=["sqlite", "postgresql"])
def unreachable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(database URL that cannot be opened, what the error must name)."""
    if request.param == "sqlite":
        (tmp_path / "data").write_text("a file where the directory should be")
        yield f"sqlite+aiosqlite:///{tmp_path / 'data' / 'youyou.db'}", str(tmp_path / "data")
    else:
        port = free_port()
        yield f"postgresql+asyncpg://youyou:s3cret-pw@127.0.0.1:{port}/youyou", f"127.0.0.1:{port}"


async def test_a_database_that_cannot_be_opened_names_where_and_the_fix(
    unreachable: tuple[str, str],
) -> None:
    url, where = unreachable
    with pytest.raises(AgentError) as info:
        await SqlSessionStorage.open(url)
    message = info.value.message
    assert info.value.code is ErrorCode.STORAGE_ERROR
    assert "\n" not in message and where in message
    assert "migration" not in message and "s3cret-pw" not in message
    assert "[database] url" in message  # the likely fix


def test_the_cli_shows_a_refused_connection_as_one_line(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    port = free_port()
    cli.write_config()
    url = f"postgresql://youyou:s3cret-pw@127.0.0.1:{port}/youyou"
    cli.config.write_text(
        cli.config.read_text(encoding="utf-8").replace(cli.db_url, url), encoding="utf-8"
    )
    result = cli.run("sessions", "list")
    err = plain(result.stderr)
    assert result.returncode == 1
    assert err.count("\n") == 1  # one line even in a log: no hard wrapping
    assert err.strip() == (
        f"✗ STORAGE_ERROR: opening the database failed (PostgreSQL 127.0.0.1:{port}/youyou): "
        "Connection refused; is the database server running and reachable, and is [database] "
        "url right?"
    )


def test_a_held_write_lock_does_not_block_reading_commands(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.write_config([{"text": "restart the pods"}])
    assert cli.run("chat", "-m", "why is checkout down?").returncode == 0
    writer = sqlite3.connect(tmp_path / "youyou.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
        listed = cli.run("sessions", "list")
        shown = cli.run("sessions", "show", cli_session_id(cli))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert listed.returncode == 0, listed.stderr
    assert "why is checkout down?" in listed.stdout
    assert shown.returncode == 0, shown.stderr
    assert "restart the pods" in shown.stdout


def cli_session_id(cli: Cli) -> str:
    [session_id] = cli.session_ids()
    return session_id


async def test_a_database_at_head_is_opened_without_the_write_lock(sqlite_url: str) -> None:
    await (await SqlSessionStorage.open(sqlite_url)).close()  # creates and migrates
    writer = sqlite3.connect(make_url(sqlite_url).database or "", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        storage = await SqlSessionStorage.open(sqlite_url)
        page = await storage.list_sessions(SessionListQuery(limit=5))
        await storage.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert list(page.items) == []


def test_a_failed_write_logged_to_stderr_shows_no_sql_or_user_text(tmp_path: Path) -> None:
    """Without a usable data directory log lines go to stderr: still without the SQL and the
    user's text that the database error carries."""
    cli = Cli(tmp_path)
    cli.write_config([{"text": "restart the pods"}])
    assert cli.run("sessions", "list").returncode == 0  # creates the database
    with sqlite3.connect(tmp_path / "youyou.db") as conn:
        conn.execute(_SQLITE_TRIGGER)
    shutil.rmtree(tmp_path / "xdg-data")
    (tmp_path / "xdg-data").write_text("a file where the data directory should be")

    result = cli.run("chat", "-m", SECRET_LINE)

    assert result.returncode == 1
    assert "cannot open the log file" in result.stderr
    assert "STORAGE_ERROR" in result.stderr and "the storage refused the row" in result.stderr
    for leak in (SECRET_LINE, "INSERT", "[SQL", "sqlalche.me", "Traceback"):
        assert leak not in result.stderr
