"""The input line: history across runs, completion, multi-line input, Ctrl+C / Ctrl+D.

Enter sends; a line ending in a backslash continues on the next line; pasted text keeps its
newlines (bracketed paste). Ctrl+C clears a non-empty line and quits at an empty one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, NestedCompleter, PathCompleter
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from youyou.bootstrap import MEMORY_MODE_NAMES
from youyou.cli.commands import COMMANDS

PROMPT = "you> "
CONTINUATION = "...  "


def build_completer(skill_names: Iterable[str], model_ids: Iterable[str]) -> Completer:
    """``/command`` and ``/skill-name`` at the start of the line, then their arguments."""
    nested: dict[str, object] = {f"/{name}": None for name in COMMANDS}
    nested["/mode"] = {name: None for name in MEMORY_MODE_NAMES}
    nested["/model"] = {model: None for model in model_ids}
    nested["/attach"] = PathCompleter(expanduser=True)
    nested.update({f"/{name}": None for name in skill_names})
    return NestedCompleter.from_nested_dict(nested)


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


def build_prompt(history_file: Path, skill_names: Sequence[str],
                 model_ids: Sequence[str]) -> PromptSession[str]:
    return PromptSession(
        history=FileHistory(str(history_file)),
        completer=build_completer(skill_names, model_ids),
        complete_while_typing=True,
        key_bindings=_key_bindings(),
        multiline=True,
        prompt_continuation=CONTINUATION,
        enable_history_search=False,
    )
