"""The input line: history across runs, completion, multi-line input, Ctrl+C / Ctrl+D.

Enter sends; a line ending in a backslash continues on the next line; pasted text keeps its
newlines (bracketed paste). Ctrl+C clears a non-empty line and quits at an empty one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import (
    CompleteEvent,
    Completer,
    Completion,
    PathCompleter,
    WordCompleter,
)
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from youyou.cli.commands import COMMANDS
from youyou.cli.process import warn
from youyou.config import MEMORY_MODE_NAMES

PROMPT = "you> "
CONTINUATION = "...  "


class SlashCompleter(Completer):
    """``/command`` and ``/skill-name`` at the start of the line, then the command's argument.

    Words are whitespace-delimited: names like ``disk-full`` or ``gpt-4o-mini`` are one word.
    """

    def __init__(self, skill_names: Iterable[str], model_ids: Iterable[str]) -> None:
        names = [f"/{name}" for name in (*COMMANDS, *skill_names)]
        self._first = WordCompleter(names, WORD=True)
        self._arguments: dict[str, Completer] = {
            "/mode": WordCompleter(list(MEMORY_MODE_NAMES), WORD=True),
            "/model": WordCompleter(list(model_ids), WORD=True),
            "/attach": PathCompleter(expanduser=True),
        }

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor.lstrip()
        if not text.startswith("/"):
            return
        name, space, argument = text.partition(" ")
        if not space:
            yield from self._first.get_completions(document, complete_event)
            return
        completer = self._arguments.get(name)
        if completer is not None:
            argument = argument.lstrip()
            yield from completer.get_completions(Document(argument, len(argument)), complete_event)


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        if buffer.document.is_cursor_at_the_end and buffer.text.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=EOFError())

    return bindings


class _FileHistory(FileHistory):
    """History across runs; a line that cannot be saved (disk full…) is kept for this run."""

    _failed = False

    def store_string(self, string: str) -> None:
        try:
            super().store_string(string)
        except OSError as exc:
            if not self._failed:
                self._failed = True
                warn(f"cannot save the prompt history ({exc})")


def build_prompt(
    history_file: Path | None, skill_names: Sequence[str], model_ids: Sequence[str]
) -> PromptSession[str]:
    """``history_file=None``: history for this run only."""
    history: History = (
        InMemoryHistory() if history_file is None else _FileHistory(str(history_file))
    )
    return PromptSession(
        history=history,
        completer=SlashCompleter(skill_names, model_ids),
        complete_while_typing=True,
        key_bindings=_key_bindings(),
        multiline=True,
        prompt_continuation=CONTINUATION,
        enable_history_search=False,
    )
