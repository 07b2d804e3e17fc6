"""What every ``youyou`` command shares: exit codes, the stderr console, the log file, and
running a command so that a kernel error ends it as one line with its code.

Kept free of the kernel's modules (sessions, events, the storage package): ``youyou users``,
``db`` and ``kb`` start without loading what only ``youyou chat`` needs.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import traceback
from collections.abc import Callable, Coroutine
from contextlib import suppress
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from youyou.adapters.private_files import data_dir as youyou_data_dir
from youyou.adapters.private_files import private_directory, private_file
from youyou.domain.errors import AgentError, ErrorCode

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT: cancelled with Ctrl+C
EXIT_TERMINATED = 143  # 128 + SIGTERM: what shells report for a process SIGTERM ended
LOG_FILE = "youyou.log"

# soft_wrap: an error stays one line in a log or CI output; a terminal wraps it by itself.
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def data_dir() -> Path:
    """Per-user directory for the prompt history and the log file, only its owner's (OSError
    if unusable)."""
    return private_directory(youyou_data_dir())


def warn(message: str) -> None:
    """One plain line on stderr, for problems that must not stop the command."""
    with suppress(OSError, ValueError):
        sys.stderr.write(f"youyou: warning: {message}\n")
        sys.stderr.flush()


class _LogFile(logging.FileHandler):
    """The log file; a write that fails (disk full…) is one warning, never a traceback."""

    _failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._failed:
            self._failed = True
            warn(f"cannot write {self.baseFilename} ({sys.exc_info()[1]}); log lines are dropped")


class _BriefFormatter(logging.Formatter):
    """On stderr, a logged exception is the first line of its summary, not a traceback (nor
    a database error's SQL and bound parameters, which hold the user's text)."""

    def formatException(self, ei: Any) -> str:
        lines = "".join(traceback.format_exception_only(ei[1])).strip().splitlines()
        return lines[0] if lines else ""


def setup_logging() -> None:
    """Kernel warnings (a failed memory extraction…) go to a file, not into the chat.

    Logging never ends a command: a log file that cannot be opened sends warnings to stderr
    (said once), and a failing handler prints no traceback.
    """
    logging.raiseExceptions = False
    handler: logging.Handler
    try:
        handler = _LogFile(private_file(data_dir() / LOG_FILE), encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError as exc:
        warn(f"cannot open the log file ({exc}); log lines go to stderr")
        handler = logging.StreamHandler()
        handler.setFormatter(_BriefFormatter("youyou: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def error_text(code: str, message: str) -> Text:
    """``✗ CODE: message``, how the CLI shows every error."""
    return Text.assemble(("✗ ", "red bold"), (code, "red bold"), (f": {message}", "red"))


def agent_error_text(error: AgentError) -> Text:
    return error_text(str(error.code), error.message)


def run(main: Coroutine[Any, Any, int]) -> int:
    """Run an async command; a kernel error ends it with its code, never with a traceback.
    A SQLite write that waits for another process's write lock says so on stderr."""
    from youyou.adapters.storage.engine import LOCK_WAIT_NOTICE  # the storage, when used

    LOCK_WAIT_NOTICE.set(_waiting_for_the_database)
    return guarded(lambda: asyncio.run(main))


def _waiting_for_the_database() -> None:
    err_console.print(
        "waiting for the database… (another process holds its write lock)",
        style="dim",
        markup=False,
    )


def guarded(command: Callable[[], int]) -> int:
    """Run a command; a kernel error ends it with its code, never with a traceback."""
    try:
        return command()
    except AgentError as error:
        err_console.print(agent_error_text(error))
        return EXIT_CONFIG if error.code is ErrorCode.INVALID_CONFIG else EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
