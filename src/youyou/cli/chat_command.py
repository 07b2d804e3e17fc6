"""``youyou chat``: the interactive loop, or one message (``-m``) for scripts and pipes."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from youyou.api.session import SessionHandle
from youyou.bootstrap import BuiltApp, Writer, build_agent_from_settings
from youyou.cli.approvals import approver_for
from youyou.cli.attachments import read_attachment
from youyou.cli.chat import Chat
from youyou.cli.commands import dispatch
from youyou.cli.pending_memories import PENDING_DIR, PendingExtractions
from youyou.cli.process import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    agent_error_text,
    data_dir,
    err_console,
    warn,
)
from youyou.cli.render import (
    JsonTurnView,
    PlainTurnView,
    RichTurnView,
    TurnView,
)
from youyou.cli.runtime import OFFLINE_NOTE, Interrupts, in_daemon_thread, is_offline_model
from youyou.cli.transcript import resolve_one
from youyou.config import Settings, load_settings
from youyou.domain.config import SessionConfig
from youyou.domain.content import ContentBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.turn import OutcomeStatus

HISTORY_FILE = "chat_history"
_EXIT_CODES = {OutcomeStatus.COMPLETED: EXIT_OK, OutcomeStatus.CANCELLED: EXIT_INTERRUPTED}


@dataclass(frozen=True, slots=True)
class ChatOptions:
    config: Path | None = None
    message: str | None = None
    json: bool = False
    resume: str | None = None
    model: str | None = None
    skills_dir: Path | None = None
    attach: tuple[Path, ...] = ()
    approve_all: bool = False


@asynccontextmanager
async def opened_app(settings: Settings, skills_dir: Path | None) -> AsyncIterator[BuiltApp]:
    """The built agent; invalid skill files are reported on stderr and skipped."""
    app = await build_agent_from_settings(
        settings, skills_dir=skills_dir, writer=Writer("youyou chat")
    )
    try:
        for path, error in app.skill_errors:
            err_console.print(Text.assemble(("skipped invalid skill file ", "yellow"), str(path)))
            for item in error.violations:
                err_console.print(
                    Text.assemble("  - ", (item.rule_id, "yellow"), ": ", item.message("en"))
                )
        yield app
    finally:
        await app.close()


async def run_chat(options: ChatOptions) -> int:
    if options.resume and options.model:
        raise AgentError(
            ErrorCode.INVALID_CONFIG,
            "--model starts a new session; a resumed session keeps its model",
            source=ErrorSource.AGENT,
        )
    settings = load_settings(options.config)
    message = options.message
    interrupts = Interrupts()
    with interrupts.installed():
        try:  # before the session opens: input that cannot be sent leaves nothing stored
            if message == "-" or (message is None and not sys.stdin.isatty()):
                message = await interrupts.stoppable(
                    in_daemon_thread(_read_stdin), "reading the message from stdin"
                )
            attachments = [
                await interrupts.stoppable(read_attachment(str(p)), f"reading {p}")
                for p in options.attach
            ]
        except AgentError as error:
            err_console.print(agent_error_text(error))
            if error.code is not ErrorCode.REQUEST_CANCELLED:
                return EXIT_FAILED
            return EXIT_TERMINATED if interrupts.terminated else EXIT_INTERRUPTED
        async with opened_app(settings, options.skills_dir) as app:
            session = await _open_session(app, options)
            if is_offline_model(settings, session.config.pinned.model_id):
                err_console.print(OFFLINE_NOTE, style="dim", markup=False)
            console = err_console if message is not None else Console(highlight=False)
            chat = Chat(
                app,
                console,
                session,
                interrupts=interrupts,
                close_timeout_s=settings.memory.close_timeout_s,
                pending=_pending_extractions(),
                approver=approver_for(
                    console, terminal=sys.stdin.isatty(), approve_all=options.approve_all
                ),
            )
            try:
                if message is not None:
                    code = await _one_shot(chat, [TextBlock(text=message), *attachments], options)
                else:
                    code = await _interactive(chat, resumed=options.resume is not None)
            finally:
                await chat.finish_catch_up()
    return EXIT_TERMINATED if interrupts.terminated else code


def _read_stdin() -> str:
    """The piped message, which must be UTF-8 text (the kernel refuses what is not).

    Read from the file descriptor, not through ``sys.stdin``: a read left blocked on its
    daemon thread (a pipe never closed) must not hold the lock of the buffer the interpreter
    closes at exit."""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentError(
            ErrorCode.INPUT_VALIDATION,
            f"the message on stdin is not UTF-8 text (byte {exc.start} of {len(data):,}): "
            "pipe text, or attach a file with -a",
            source=ErrorSource.TURN_ENGINE,
        ) from None


async def _open_session(app: BuiltApp, options: ChatOptions) -> SessionHandle:
    if options.resume:
        return await app.agent.resume_session(
            await resolve_one(app.session_storage, options.resume, err_console)
        )
    return await app.agent.new_session(SessionConfig(model_id=options.model))


async def _one_shot(chat: Chat, blocks: list[ContentBlock], options: ChatOptions) -> int:
    """Exit 0 on a complete answer, 130 when cancelled (Ctrl+C), 1 on any error (and 143
    after SIGTERM, set by the caller). The session id is printed when the session is kept."""
    view: TurnView
    if options.json:
        view = JsonTurnView()
    elif sys.stdout.isatty():
        view = RichTurnView(Console())
    else:
        view = PlainTurnView()
    try:
        await chat.finish_stopped_turn(view)
        outcome = await chat.run(blocks, view)
    except AgentError as error:
        chat.show_error(error)
        return EXIT_FAILED
    finally:
        chat.catch_up()  # after the answer: a local model answers one request at a time
        kept = await chat.close_session()
    if kept and not options.json:
        err_console.print(Text(f"session {chat.session.session_id}", style="dim"))
    return _EXIT_CODES.get(outcome.status, EXIT_FAILED)


async def _interactive(chat: Chat, *, resumed: bool) -> int:
    """Until /exit, Ctrl+C or Ctrl+D at an empty prompt, or SIGTERM."""
    # Imported here: prompt_toolkit takes ~0.1 s to load, which ``-m`` runs need not pay.
    from youyou.cli.prompt import PROMPT, build_prompt

    console, app = chat.console, chat.app
    console.print(Text.assemble(chat.banner(), ("   /help for commands", "dim")))
    chat.catch_up()  # while the user types
    await chat.start_tools()
    if resumed:
        await chat.show_history()
        await chat.finish_stopped_turn()
    prompt = build_prompt(
        _history_file(),
        [s.name for s in app.skills],
        [m.model_id for m in app.agent.models()],
    )

    def stop_prompt() -> None:
        if prompt.app.is_running:
            prompt.app.exit(exception=EOFError())

    while not chat.interrupts.terminated:
        try:
            with chat.interrupts.on_terminate(stop_prompt):
                line = await prompt.prompt_async(PROMPT)
        except (EOFError, KeyboardInterrupt):
            break
        if line.strip() and not await dispatch(chat, line):
            break
    await chat.close_session()
    console.print(Text("bye", style="dim"))
    return EXIT_OK


def _pending_extractions() -> PendingExtractions | None:
    """Where a memory extraction that outlasts its bound is handed on; None where the data
    dir is unusable (the prompt history warns about it)."""
    try:
        return PendingExtractions(data_dir() / PENDING_DIR)
    except OSError:
        return None


def _history_file() -> Path | None:
    """The prompt history across runs; None (this run only) where the data dir is unusable."""
    try:
        return data_dir() / HISTORY_FILE
    except OSError as exc:
        warn(f"cannot keep the prompt history ({exc}); it lasts for this run only")
        return None
