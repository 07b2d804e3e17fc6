"""Map database failures to the kernel's one error type.

A storage error is one line a user can act on: what failed, which database (a file path, or
host, port and name; never a password) and the likely fix. The driver's full error, with the
SQL and its bound parameters (which hold user text), goes to the log only.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
from pathlib import Path

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, OperationalError

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

_log = logging.getLogger(__name__)

# PostgreSQL serialization failure and deadlock: the transaction can simply be run again.
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
# What the asyncpg adapter puts before the server's message.
_CLASS_PREFIX = re.compile(r"^<class '[\w.]+'>:\s*")
_LOW_SPACE_BYTES = 1024 * 1024
# (pattern in the driver's message, likely fix), first match wins.
_FIXES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), fix)
    for pattern, fix in (
        (
            r"connection refused|connect call failed",
            "is the database server running and reachable, and is [database] url right?",
        ),
        (
            r"password authentication failed|no password supplied",
            "check the user and password in [database] url or YOUYOU_DATABASE_URL",
        ),
        (r'database ".*" does not exist', "create that database or fix [database] url"),
        (
            r"database is locked",
            "another process holds the database's write lock: try again when it is done",
        ),
        (
            r"readonly database|read-only file system",
            "the file or its directory is read-only: make it writable or point "
            "[database] url elsewhere",
        ),
        (
            r"unable to open database file|not a directory|file exists|permission denied|"
            r"is a directory",
            "check that the directory exists and is writable, or point [database] url elsewhere",
        ),
        (r"disk is full|no space left|disk full|could not extend file", "free some disk space"),
        (r"disk i/o error", "the disk may be full or failing: check its free space"),
        (
            r"file is not a database|malformed",
            "this file is not a YouYou database, or it is damaged: point [database] url "
            "at another file",
        ),
    )
)


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, OperationalError | OSError | TimeoutError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        return getattr(exc.orig, "sqlstate", None) in _RETRYABLE_SQLSTATES
    return False


def describe_database(url: URL) -> str:
    """Which database, for messages: the SQLite file, or PostgreSQL's host, port and name."""
    if url.get_backend_name() == "sqlite":
        file = (url.database or "").removeprefix("file:")
        return f"SQLite file {file}" if file else "SQLite in memory"
    return f"PostgreSQL {url.host or 'localhost'}:{url.port or 5432}/{url.database or ''}"


def _reason(exc: BaseException) -> str:
    """The driver's own message, first line only: no SQL, no parameters, no links."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if isinstance(cause, socket.gaierror):
        return f"cannot resolve the host name ({cause.strerror})"
    if isinstance(cause, OSError) and cause.errno is not None:
        return os.strerror(cause.errno)
    if isinstance(cause, TimeoutError):
        return "no answer in time"
    lines = str(cause).strip().splitlines()
    text = _CLASS_PREFIX.sub("", lines[0]) if lines else ""
    return text or type(cause).__name__


def _likely_fix(reason: str, url: URL | None) -> str:
    fix = next((fix for pattern, fix in _FIXES if pattern.search(reason)), "")
    if "disk" in fix and url is not None and url.get_backend_name() == "sqlite" and url.database:
        try:
            free = shutil.disk_usage(Path(url.database).parent).free
        except OSError:
            return fix
        if free < _LOW_SPACE_BYTES:
            return f"the disk is full ({free:,} bytes free): free some space"
    return fix


def storage_error(
    action: str, exc: BaseException | None = None, *, database: URL | None = None
) -> AgentError:
    """STORAGE_ERROR; retryable when the database was busy or the connection dropped.

    ``action`` says what failed ("appending event 3 of session 'abc'"); ``database``, when
    known, names where. The message is one line; ``exc`` in full goes to the log.
    """
    where = f" ({describe_database(database)})" if database is not None else ""
    message = f"{action} failed{where}"
    if exc is not None:
        _log.warning("%s", message, exc_info=exc)
        reason = _reason(exc)
        fix = _likely_fix(reason, database)
        message += f": {reason}" + (f"; {fix}" if fix else "")
    return AgentError(
        ErrorCode.STORAGE_ERROR,
        message,
        retryable=exc is not None and _is_retryable(exc),
        source=ErrorSource.STORAGE,
    )


def session_not_found(session_id: str) -> AgentError:
    return AgentError(
        ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found", source=ErrorSource.STORAGE
    )


def invalid_query(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.STORAGE)
