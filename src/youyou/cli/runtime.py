"""What every ``youyou`` command shares: settings, data directory, logging, exit codes."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import platformdirs
from rich.console import Console

from youyou.adapters.settings import ProviderType, Settings
from youyou.api.session import SessionHandle, UserInput
from youyou.application.turn_engine import TurnOptions
from youyou.cli.render import TurnView, agent_error_text
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import ProviderCapability
from youyou.domain.turn import TurnOutcome

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130
SKILLS_DIR_ENV = "YOUYOU_SKILLS_DIR"
LOG_FILE = "youyou.log"

err_console = Console(stderr=True, highlight=False)


def data_dir() -> Path:
    """Per-user directory for the prompt history and the log file (OSError if unusable)."""
    path = Path(platformdirs.user_data_dir("youyou"))
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    """On stderr, a logged exception is its one-line summary, not a traceback."""

    def formatException(self, ei: Any) -> str:
        return "".join(traceback.format_exception_only(ei[1])).strip()


def setup_logging() -> None:
    """Kernel warnings (a failed memory extraction…) go to a file, not into the chat.

    Logging never ends a command: a log file that cannot be opened sends warnings to stderr
    (said once), and a failing handler prints no traceback.
    """
    logging.raiseExceptions = False
    handler: logging.Handler
    try:
        handler = _LogFile(data_dir() / LOG_FILE, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    except OSError as exc:
        warn(f"cannot open the log file ({exc}); log lines go to stderr")
        handler = logging.StreamHandler()
        handler.setFormatter(_BriefFormatter("youyou: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def is_offline_model(settings: Settings, model_id: str) -> bool:
    """The built-in demo answers (a scripted provider without a script of its own)."""
    return any(
        provider.type is ProviderType.SCRIPTED
        and provider.script_path is None
        and model_id in {m.model_id for m in provider.model_infos()}
        for provider in settings.providers
    )


OFFLINE_NOTE = (
    "Using the offline demo model. To chat with a real model, add a [[providers]] table to "
    "youyou.toml and pass --config PATH or set YOUYOU_CONFIG (see docs/cli.md)."
)


@contextmanager
def on_interrupt(callback: Callable[[], None]) -> Iterator[None]:
    """Route Ctrl+C (SIGINT) to ``callback`` while the block runs, then restore the handler.

    Where the loop cannot take signal handlers (Windows), Ctrl+C keeps its default effect.
    """
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        with suppress(TypeError, ValueError):
            signal.signal(signal.SIGINT, previous)


async def run_turn(session: SessionHandle, user_input: UserInput, view: TurnView) -> TurnOutcome:
    """Stream one turn into ``view``; Ctrl+C cancels it (the partial answer is kept).

    A refusal before the turn starts (INPUT_VALIDATION, SKILL_NOT_FOUND…) raises AgentError.
    """
    tool_use = ProviderCapability.TOOL_USE in session.model.capabilities
    turn = await session.send_message(user_input, options=TurnOptions(offer_tools=tool_use))
    with on_interrupt(turn.cancel):
        try:
            async for event in turn.events:
                view.handle(event)
        finally:
            view.close()
        return await turn.join()


def run(main: Coroutine[Any, Any, int]) -> int:
    """Run an async command; a kernel error ends it with its code, never with a traceback."""
    return guarded(lambda: asyncio.run(main))


def guarded(command: Callable[[], int]) -> int:
    """Run a command; a kernel error ends it with its code, never with a traceback."""
    try:
        return command()
    except AgentError as error:
        err_console.print(agent_error_text(error))
        return EXIT_CONFIG if error.code is ErrorCode.INVALID_CONFIG else EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
