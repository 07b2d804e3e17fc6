"""``youyou db backup`` and ``youyou db upgrade`` through the real executable, on a real SQLite
file and a real PostgreSQL database; and the refusal of a database a newer YouYou migrated."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from cli_kit import COMMAND, TIMEOUT_S, Cli
from conftest import PG_ADMIN_DSN
from youyou.adapters.storage.tables import VERSION_TABLE
from youyou.workbench.store.tables import VERSION_TABLE as WORKBENCH_VERSION_TABLE

BATCH = 50  # rows the writer commits per transaction: a consistent copy holds whole batches


@dataclass
class UrlCli(Cli):
    """A CLI whose configuration names ``url`` as its database."""

    url: str = ""

    @property
    def db_url(self) -> str:
        return self.url or super().db_url


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _with_a_session(cli: Cli) -> str:
    cli.write_config([{"text": "look at the pods"}])
    assert cli.run("chat", "-m", "why is checkout down?").returncode == 0
    (session_id,) = cli.session_ids()
    return session_id


def _sessions_in(cli: Cli, url: str) -> str:
    """``youyou sessions list`` on the database at ``url``, as a user would check a copy."""
    env = {**cli.env(), "YOUYOU_DATABASE_URL": url}
    done = subprocess.run(
        [*COMMAND, "sessions", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        check=True,
    )
    return " ".join(done.stdout.split())


class _Writer(threading.Thread):
    """Commits batches of ``BATCH`` rows to the database file as fast as it can."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.batches = 0
        self.stop = threading.Event()

    def run(self) -> None:
        db = sqlite3.connect(self.path, timeout=5, isolation_level=None)
        db.execute("CREATE TABLE IF NOT EXISTS probe (batch INTEGER, n INTEGER, pad TEXT)")
        while not self.stop.is_set():
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO probe VALUES (?, ?, ?)",
                [(self.batches, n, "x" * 200) for n in range(BATCH)],
            )
            db.execute("COMMIT")
            self.batches += 1
        db.close()


@pytest.fixture
def writer(cli: Cli) -> Iterator[_Writer]:
    _with_a_session(cli)
    running = _Writer(cli.root / "youyou.db")
    running.start()
    while running.batches < 20:
        time.sleep(0.01)
    yield running
    running.stop.set()
    running.join(timeout=10)


def test_sqlite_backup_while_a_writer_commits_is_one_consistent_usable_copy(
    cli: Cli, writer: _Writer
) -> None:
    target = cli.root / "backups" / "youyou-copy.db"
    target.parent.mkdir()
    result = cli.run("db", "backup", str(target))
    batches_after = writer.batches

    assert result.returncode == 0, result.stderr
    assert f"to {target}" in " ".join(result.stdout.split())
    assert target.stat().st_mode & 0o777 == 0o600  # conversations: for the owner only
    assert not list(target.parent.glob(".*partial"))
    with sqlite3.connect(target) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one file
        rows, batches = copy.execute("SELECT count(*), count(DISTINCT batch) FROM probe").fetchone()
    assert rows == batches * BATCH  # whole transactions only
    assert 20 <= batches <= batches_after
    assert writer.is_alive()  # the backup did not stop the writer
    assert "why is checkout down?" in _sessions_in(cli, f"sqlite:///{target}")


def test_an_existing_file_is_kept_unless_force(cli: Cli) -> None:
    _with_a_session(cli)
    target = cli.root / "youyou-copy.db"
    target.write_text("yesterday's backup", encoding="utf-8")

    refused = cli.run("db", "backup", str(target))
    assert refused.returncode == 1
    message = " ".join(refused.stderr.split())
    assert message.startswith("✗ INPUT_VALIDATION:")
    assert f"{target} exists already; pass --force to replace it" in message
    assert target.read_text(encoding="utf-8") == "yesterday's backup"

    replaced = cli.run("db", "backup", "--force", str(target))
    assert replaced.returncode == 0, replaced.stderr
    assert "why is checkout down?" in _sessions_in(cli, f"sqlite:///{target}")


def test_a_missing_sqlite_database_is_one_clear_error(cli: Cli) -> None:
    cli.write_config()
    result = cli.run("db", "backup", str(cli.root / "copy.db"))
    assert result.returncode == 1
    assert f"no SQLite database at {cli.root / 'youyou.db'}" in " ".join(result.stderr.split())
    assert not (cli.root / "copy.db").exists()


@pytest.fixture
async def restore_url() -> AsyncIterator[str]:
    """A second, empty PostgreSQL database to restore a dump into."""
    name = f"youyou_r_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    yield f"{PG_ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def test_postgresql_backup_is_a_pg_dump_that_pg_restore_brings_back(
    tmp_path: Path, pg_url: str, restore_url: str
) -> None:
    cli = UrlCli(tmp_path, url=pg_url)
    await asyncio.to_thread(_with_a_session, cli)
    target = tmp_path / "youyou.dump"

    result = await asyncio.to_thread(cli.run, "db", "backup", str(target))

    assert result.returncode == 0, result.stderr
    assert "pg_restore" in result.stdout
    assert target.read_bytes()[:5] == b"PGDMP"  # pg_dump's custom format
    assert target.stat().st_mode & 0o777 == 0o600
    restore = ["pg_restore", "--no-owner", f"--dbname={restore_url}", str(target)]
    await asyncio.to_thread(subprocess.run, restore, check=True, timeout=TIMEOUT_S)
    listed = await asyncio.to_thread(_sessions_in, cli, restore_url)
    assert "why is checkout down?" in listed


def test_postgresql_without_pg_dump_says_how_to_back_it_up(tmp_path: Path, pg_url: str) -> None:
    cli = UrlCli(tmp_path, url=pg_url)
    cli.write_config()
    target = tmp_path / "youyou.dump"
    env = {**cli.env(), "PATH": str(tmp_path / "empty")}  # no pg_dump on it

    done = subprocess.run(
        [*COMMAND, "db", "backup", str(target)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )

    assert done.returncode == 1
    message = " ".join(done.stderr.split())
    assert "✗ STORAGE_ERROR: pg_dump was not found on PATH" in message
    assert f"pg_dump --format=custom --file {target} postgresql://" in message
    assert not target.exists()


def test_db_upgrade_migrates_the_workbench_tables_too(cli: Cli) -> None:
    cli.write_config()
    result = cli.run("db", "upgrade")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(cli.root / "youyou.db") as db:
        for table in (VERSION_TABLE, WORKBENCH_VERSION_TABLE):
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)


def test_serve_refuses_a_workbench_schema_from_a_newer_youyou(cli: Cli) -> None:
    cli.write_config()
    assert cli.run("db", "upgrade").returncode == 0
    with sqlite3.connect(cli.root / "youyou.db") as db:
        db.execute(f"UPDATE {WORKBENCH_VERSION_TABLE} SET version_num = 'wb0099_newer'")

    result = cli.run("serve", "--port", "1")
    message = " ".join(result.stderr.split())
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert message.startswith("✗ STORAGE_ERROR: the database schema is at revision 'wb0099_newer'")
    assert "Upgrade YouYou" in message
    with sqlite3.connect(cli.root / "youyou.db") as db:
        assert db.execute(f"SELECT version_num FROM {WORKBENCH_VERSION_TABLE}").fetchall() == [
            ("wb0099_newer",)
        ]
