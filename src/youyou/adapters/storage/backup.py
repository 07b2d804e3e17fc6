"""``youyou db backup``: a consistent copy of the configured database, taken while it is in use.

SQLite: the sqlite3 online backup API copies every page in one step inside one read
transaction, so the copy is the database as of one commit; in WAL mode the server's writers go
on meanwhile. The copy is checked (``PRAGMA quick_check``) and switched out of WAL mode, so it
is one self-contained file. PostgreSQL: PostgreSQL's own ``pg_dump`` (custom format, restored
with ``pg_restore``) is run with the connection details in libpq's environment variables, so
the password never shows on a command line.

The copy is written next to the target under a temporary name and only then put in place:
a failed backup leaves no half-written file, and an existing file is replaced only when asked.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from youyou.adapters.private_files import PRIVATE_FILE_MODE
from youyou.adapters.storage.engine import SQLITE_BUSY_TIMEOUT_MS, normalize_url
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

PG_DUMP = "pg_dump"


@dataclass(frozen=True, slots=True)
class BackupReport:
    backend: str
    """``sqlite`` or ``postgresql``."""
    target: Path
    size_bytes: int


def backup_database(url: str, target: Path, *, force: bool = False) -> BackupReport:
    """Copy the database at ``url`` to ``target``; an existing ``target`` is refused unless
    ``force`` (INPUT_VALIDATION), every other failure is STORAGE_ERROR."""
    parsed = normalize_url(url)
    if target.exists() and not force:
        raise _exists(target)
    if target.is_dir():
        raise _error(ErrorCode.INPUT_VALIDATION, f"{target} is a directory: name a file")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    try:
        if parsed.get_backend_name() == "postgresql":
            _pg_dump(parsed, partial, target)
        else:
            _sqlite_backup(parsed, partial)
        _put_in_place(partial, target, force=force)
    finally:
        partial.unlink(missing_ok=True)
    return BackupReport(parsed.get_backend_name(), target, target.stat().st_size)


def _sqlite_backup(url: URL, partial: Path) -> None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        raise _error(
            ErrorCode.INPUT_VALIDATION,
            f"cannot back up the SQLite database {database or '(in memory)'!r}: "
            "only a database file named by its path is backed up",
        )
    source_path = Path(database)
    if not source_path.is_file():
        raise _error(ErrorCode.STORAGE_ERROR, f"no SQLite database at {source_path}")
    os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    try:
        source = sqlite3.connect(source_path, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)
        try:
            copy = sqlite3.connect(partial)
            try:
                source.backup(copy)  # every page in one step: one snapshot
                copy.execute("PRAGMA journal_mode=DELETE")
                check = copy.execute("PRAGMA quick_check").fetchone()
                if check is None or check[0] != "ok":
                    raise _error(ErrorCode.STORAGE_ERROR, f"the copy failed its check: {check}")
            finally:
                copy.close()
        finally:
            source.close()
    except sqlite3.Error as exc:
        raise _error(ErrorCode.STORAGE_ERROR, f"backing up {source_path}: {exc}") from exc


def _pg_dump(url: URL, partial: Path, target: Path) -> None:
    program = shutil.which(PG_DUMP)
    if program is None:
        raise _error(
            ErrorCode.STORAGE_ERROR,
            "pg_dump was not found on PATH: a PostgreSQL database is backed up with "
            "PostgreSQL's own pg_dump. Install the PostgreSQL client (its major version at "
            "least the server's), or run it where it is installed: "
            f"pg_dump --format=custom --file {target} {_libpq_url(url)}",
        )
    environment = {**os.environ, **_libpq_environment(url)}
    command = [program, "--format=custom", "--no-password", f"--file={partial}"]
    try:
        done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise _error(ErrorCode.STORAGE_ERROR, f"running pg_dump: {exc}") from exc
    if done.returncode != 0:
        said = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        raise _error(ErrorCode.STORAGE_ERROR, f"pg_dump failed: {said}")
    os.chmod(partial, PRIVATE_FILE_MODE)


def _libpq_environment(url: URL) -> dict[str, str]:
    """libpq's variables for ``url`` (asyncpg's ``ssl`` query option becomes ``PGSSLMODE``)."""
    values = {
        "PGHOST": url.host,
        "PGPORT": str(url.port) if url.port else None,
        "PGUSER": url.username,
        "PGPASSWORD": url.password,
        "PGDATABASE": url.database,
        "PGSSLMODE": _query_value(url, "sslmode") or _query_value(url, "ssl"),
    }
    return {name: value for name, value in values.items() if value}


def _query_value(url: URL, name: str) -> str | None:
    value = url.query.get(name)
    return value if isinstance(value, str) or value is None else value[-1]


def _libpq_url(url: URL) -> str:
    """The URL as pg_dump takes it, password left out."""
    plain = url.set(drivername="postgresql", password=None, query={})
    return plain.render_as_string(hide_password=False)


def _put_in_place(partial: Path, target: Path, *, force: bool) -> None:
    """Flush the copy, then move it to ``target``: ``os.replace`` when replacing is allowed,
    otherwise a hard link, which fails if a file appeared there meanwhile."""
    try:
        fd = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if force:
            os.replace(partial, target)
        else:
            os.link(partial, target)
    except FileExistsError as exc:
        raise _exists(target) from exc
    except OSError as exc:
        raise _error(ErrorCode.STORAGE_ERROR, f"writing {target}: {exc}") from exc


def _exists(target: Path) -> AgentError:
    return _error(
        ErrorCode.INPUT_VALIDATION, f"{target} exists already; pass --force to replace it"
    )


def _error(code: ErrorCode, message: str) -> AgentError:
    return AgentError(code, message, source=ErrorSource.STORAGE)
