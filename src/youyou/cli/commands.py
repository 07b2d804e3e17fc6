"""Slash commands of ``youyou chat``; any other ``/name`` is sent as an explicit skill use."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from youyou.api.session import SessionHandle
from youyou.cli.attachments import describe, read_attachment
from youyou.cli.chat import Chat
from youyou.cli.render import context_line, usage_text
from youyou.cli.transcript import (
    find_by_prefix,
    memories_table,
    recent_or_matching,
    sessions_table,
    unknown_prefix,
)
from youyou.config import MEMORY_MODE_NAMES, memory_mode_name
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

logger = logging.getLogger(__name__)

Handler = Callable[[Chat, str], Awaitable[bool]]
"""Runs a command with its argument text; returns False to end the chat."""


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    usage: str
    help: str
    run: Handler


def _usage_error(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.AGENT)


async def _help(chat: Chat, _: str) -> bool:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for command in COMMANDS.values():
        table.add_row(f"/{command.name} {command.usage}".rstrip(), command.help)
    table.add_row("/SKILL-NAME …", "use a skill explicitly for this message (see /skills)")
    chat.console.print(table)
    chat.console.print(
        Text(
            "Enter sends; end a line with \\ to continue it. Ctrl+C cancels a "
            "running answer; Ctrl+C or Ctrl+D at an empty prompt quits.",
            style="dim",
        )
    )
    return True


async def _skills(chat: Chat, _: str) -> bool:
    if not chat.app.skills:
        chat.console.print("no skills loaded (start with --skills DIR)")
    for skill in chat.app.skills:
        chat.console.print(Text.assemble((f"/{skill.name}", "bold"), f"  {skill.description}"))
    if chat.app.skill_errors:
        chat.console.print(
            Text(f"{len(chat.app.skill_errors)} invalid skill file(s) skipped", style="yellow")
        )
    return True


async def _compact(chat: Chat, _: str) -> bool:
    async def compact(session: SessionHandle) -> None:
        chat.console.print(context_line(await session.compact()))

    await chat.busy("compacting the conversation…", lambda: chat.exclusive(compact))
    return True


async def _mode(chat: Chat, argument: str) -> bool:
    mode = MEMORY_MODE_NAMES.get(argument.strip())
    if mode is None:
        names = " | ".join(MEMORY_MODE_NAMES)
        current = memory_mode_name(chat.session.memory_mode)
        raise _usage_error(f"memory mode is {current}; choose one of {names}")

    async def switch(session: SessionHandle) -> None:
        usage = await session.set_memory_mode(mode)
        chat.console.print(
            Text.assemble("memory mode: ", (argument.strip(), "bold"), "  ", context_line(usage))
        )

    await chat.busy("switching the memory mode…", lambda: chat.exclusive(switch))
    return True


async def _usage(chat: Chat, _: str) -> bool:
    summary = chat.session.summary
    chat.console.print(chat.banner())
    chat.console.print(
        Text(
            f"{summary.message_count if summary else 0} messages"
            + (f" · {summary.title}" if summary else ""),
            style="dim",
        )
    )
    chat.console.print(context_line(chat.session.usage()))
    price = chat.price  # this run's turns are priced at the current model's prices
    cost = price.cost(chat.used.input_tokens, chat.used.output_tokens) if price else None
    label = f"this run: {chat.turns_used} turns,"
    chat.console.print(Text(usage_text(chat.used, cost, label), style="dim"))
    return True


async def _sessions(chat: Chat, argument: str) -> bool:
    items = await recent_or_matching(chat.app.session_storage, argument.strip())
    if not items:
        chat.console.print("no sessions found")
        return True
    chat.console.print(sessions_table(items, current=chat.session.session_id))
    return True


async def _resume(chat: Chat, argument: str) -> bool:
    prefix = argument.strip()
    if not prefix:
        raise _usage_error("usage: /resume ID-PREFIX (see /sessions)")
    found = await find_by_prefix(chat.app.session_storage, prefix)
    if not found:
        raise unknown_prefix(prefix)
    if len(found) > 1:
        chat.console.print(f"{len(found)} sessions start with {prefix!r}; give more characters:")
        chat.console.print(sessions_table(found, full_ids=True))
        return True
    if found[0].session_id == chat.session.session_id:
        chat.console.print("that is the current session")
        return True
    await chat.resume(found[0].session_id)
    return True


async def _new(chat: Chat, _: str) -> bool:
    await chat.new_session()
    return True


async def _model(chat: Chat, argument: str) -> bool:
    models = chat.app.agent.models()
    known = [m.model_id for m in models]
    wanted = argument.strip()
    if not wanted:
        for model in models:
            marker = "*" if model.model_id == chat.model_id else " "
            chat.console.print(
                f"{marker} {model.model_id}  [dim]{model.display_name}, "
                f"{model.context_window:,} tokens[/]"
            )
        return True
    if wanted not in known:
        raise AgentError(
            ErrorCode.MODEL_NOT_SUPPORTED,
            f"unknown model {wanted!r}; configured: {', '.join(known)}",
            source=ErrorSource.SESSION_SERVICE,
        )
    await chat.new_session(wanted)
    return True


async def _attach(chat: Chat, argument: str) -> bool:
    if argument.strip() == "clear":
        chat.attachments.clear()
        chat.console.print("attachments cleared")
    elif argument.strip():
        block = await chat.interrupts.stoppable(
            read_attachment(argument), f"reading {argument.strip()}"
        )
        chat.attachments.append(block)
        chat.console.print(f"attached {describe(block)}; it is sent with your next message")
    else:
        for block in chat.attachments:
            chat.console.print(f"- {describe(block)}")
        if not chat.attachments:
            chat.console.print("no attachments pending (usage: /attach PATH, /attach clear)")
    return True


async def _memories(chat: Chat, _: str) -> bool:
    storage = chat.app.memory_storage
    if storage is None:
        chat.console.print("long-term memory is off ([memory] enabled = false)")
        return True
    namespace = chat.session.config.pinned.memory_namespace
    memories = await storage.list_all(namespace)
    if not memories:
        chat.console.print(f"no long-term memories in namespace {namespace!r} yet")
        return True
    chat.console.print(memories_table(memories))
    return True


async def _reasoning(chat: Chat, argument: str) -> bool:
    choice = argument.strip() or "show"
    if choice == "show":
        if chat.last_reasoning.strip():
            chat.console.print(Text(chat.last_reasoning.strip(), style="dim italic"))
        else:
            chat.console.print(Text("the last answer came with no reasoning", style="dim"))
    elif choice in ("full", "brief"):
        chat.expand_reasoning = choice == "full"
        chat.console.print(Text(f"reasoning is now shown {choice}", style="dim"))
    else:
        raise _usage_error("usage: /reasoning [show|full|brief]")
    return True


async def _exit(chat: Chat, _: str) -> bool:
    return False


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "", "this list", _help),
        Command("skills", "", "list the loaded skills", _skills),
        Command("compact", "", "summarize the history now (any memory mode)", _compact),
        Command(
            "mode", "|".join(MEMORY_MODE_NAMES), "when history is compacted automatically", _mode
        ),
        Command("usage", "", "session, model, context and token usage", _usage),
        Command(
            "sessions",
            "[QUERY]",
            "recent sessions, or those matching an id prefix or title",
            _sessions,
        ),
        Command("resume", "ID-PREFIX", "switch to a stored session and show its history", _resume),
        Command("new", "", "start a new session on the same model", _new),
        Command("model", "[ID]", "list models, or start a new session on model ID", _model),
        Command(
            "attach", "PATH|clear", "send a text file or an image with the next message", _attach
        ),
        Command("memories", "", "long-term memories of this namespace", _memories),
        Command(
            "reasoning",
            "[show|full|brief]",
            "show the last answer's reasoning, or keep it expanded/collapsed",
            _reasoning,
        ),
        Command("exit", "", "close the session and quit", _exit),
    )
}


def parse_command(line: str) -> tuple[Command, str] | None:
    """``(command, argument)`` for a known ``/command``; None for a message or a skill use."""
    if not line.startswith("/"):
        return None
    name, _, argument = line[1:].partition(" ")
    command = COMMANDS.get(name.strip())
    return (command, argument) if command else None


async def dispatch(chat: Chat, line: str) -> bool:
    """Run a command or send a message; every kernel error is shown, never raised."""
    parsed = parse_command(line.strip())
    try:
        if parsed is not None:
            command, argument = parsed
            return await command.run(chat, argument)
        await chat.send(line)
    except AgentError as error:
        chat.show_error(error)
    except Exception as exc:  # a bug must not end an engineer's session mid-incident
        logger.exception("chat input failed: %.80s", line)
        chat.show_error(
            AgentError(
                ErrorCode.INTERNAL_PANIC, f"{type(exc).__name__}: {exc} (details in youyou.log)"
            )
        )
    return True
