"""Asking the person at the terminal whether a tool call may run (docs/approvals.md).

In a terminal ``youyou chat`` asks inline; Ctrl+C at the question cancels the turn. When stdin
is not a terminal nobody can be asked: every call that needs approval is denied, with a note on
stderr, unless ``--approve-all`` approves them all.
"""

from __future__ import annotations

import getpass
import json
import sys
from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Console
from rich.text import Text

from youyou.domain.approvals import Decision, PendingApproval, Remember

_ARGS_MAX = 120
CHOICES = "[y]es / [n]o / [a]lways this session / [v]iew arguments"
NO_TERMINAL_REASON = "stdin is not a terminal, so nobody could be asked"
APPROVE_ALL_REASON = "youyou chat --approve-all"


@dataclass(frozen=True, slots=True)
class Answer:
    decision: Decision
    reason: str | None = None
    remember: Remember | None = None


class Approver(Protocol):
    async def ask(self, request: PendingApproval) -> Answer | None:
        """The person's answer, or None to cancel the turn."""


def decider() -> str:
    """Who decided, for the ledger's audit record: the local user of this terminal."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "local user"
    return f"{user} (youyou chat)"


def compact_arguments(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= _ARGS_MAX else text[: _ARGS_MAX - 1] + "…"


def question(request: PendingApproval) -> str:
    return f"Allow {request.tool_name} {compact_arguments(request.arguments)}? {CHOICES} "


def parse(reply: str) -> Answer | str | None:
    """An answer, "view", or None for a reply that is none of the choices."""
    word = reply.strip().lower()
    if word in ("y", "yes"):
        return Answer("approve")
    if word in ("n", "no"):
        return Answer("deny", reason="denied at the terminal")
    if word in ("a", "always"):
        return Answer("approve", remember="session")
    if word in ("v", "view"):
        return "view"
    return None


class TerminalApprover:
    """Asks at the terminal with prompt_toolkit (which reads Ctrl+C as a key, so it cancels
    the turn here instead of killing the process)."""

    def __init__(self, console: Console) -> None:
        self._console = console

    async def ask(self, request: PendingApproval) -> Answer | None:
        # ~0.1 s to import: only when someone is asked.
        from prompt_toolkit import PromptSession
        from prompt_toolkit.output import create_output

        # On the console's stream: with -m the answer alone goes to stdout.
        out = sys.stderr if self._console.stderr else sys.stdout
        session: PromptSession[str] = PromptSession(output=create_output(stdout=out))
        if request.reason:
            self._console.print(Text(f"⏸ approval needed: {request.reason}", style="yellow"))
        while True:
            try:
                reply = await session.prompt_async(question(request))
            except KeyboardInterrupt:
                return None
            except EOFError:
                return Answer("deny", reason="no answer at the terminal")
            answer = parse(reply)
            if answer == "view":
                self._console.print_json(json.dumps(request.arguments, ensure_ascii=False))
            elif isinstance(answer, Answer):
                return answer


class FixedApprover:
    """For a stdin that is not a terminal: deny every call with a note, or (``--approve-all``)
    approve every call."""

    def __init__(self, console: Console, *, approve_all: bool) -> None:
        self._console = console
        self._approve_all = approve_all

    async def ask(self, request: PendingApproval) -> Answer | None:
        call = f"{request.tool_name} {compact_arguments(request.arguments)}"
        if self._approve_all:
            self._console.print(Text(f"approved {call} (--approve-all)", style="dim"))
            return Answer("approve", reason=APPROVE_ALL_REASON)
        self._console.print(
            Text(
                f"denied {call}: it needs approval and {NO_TERMINAL_REASON} "
                "(--approve-all allows every call)",
                style="yellow",
            )
        )
        return Answer("deny", reason=NO_TERMINAL_REASON)


def approver_for(console: Console, *, terminal: bool, approve_all: bool) -> Approver:
    """``--approve-all`` approves everything; otherwise a terminal asks and a pipe denies."""
    if approve_all or not terminal:
        return FixedApprover(console, approve_all=approve_all)
    return TerminalApprover(console)
