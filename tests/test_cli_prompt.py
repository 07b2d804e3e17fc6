"""The chat's input line in a pseudo-terminal: multi-line input, history across runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_kit import PROMPT, Cli, quit_chat
from youyou.domain.content import TextBlock


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _user_texts(cli: Cli) -> list[str]:
    return [
        block.text
        for message in cli.user_messages()
        for block in message.content
        if isinstance(block, TextBlock)
    ]


def test_a_trailing_backslash_continues_the_message_on_the_next_line(cli: Cli) -> None:
    cli.write_config([{"text": "got both lines"}])
    child = cli.spawn()
    child.send("first line \\\r")
    child.send("second line\r")
    child.expect("got both lines")
    child.expect(PROMPT)
    quit_chat(child)
    assert _user_texts(cli) == ["first line \nsecond line"]


def test_pasted_text_keeps_its_newlines(cli: Cli) -> None:
    cli.write_config([{"text": "pasted"}])
    child = cli.spawn()
    child.send("\x1b[200~line one\rline two\x1b[201~")  # bracketed paste
    child.send("\r")
    child.expect("pasted")
    child.expect(PROMPT)
    quit_chat(child)
    assert _user_texts(cli) == ["line one\nline two"]


def test_history_survives_a_restart(cli: Cli) -> None:
    cli.write_config([{"text": "first"}])
    child = cli.spawn()
    child.sendline("remember this line")
    child.expect("first")
    child.expect(PROMPT)
    quit_chat(child)
    assert "remember this line" in (cli.data_dir / "chat_history").read_text(encoding="utf-8")
    cli.write_config([{"text": "second"}])
    child = cli.spawn()
    child.send("\x1b[A")  # Up: the previous run's line comes back
    child.expect("remember this line")
    child.send("\r")
    child.expect("second")
    child.expect(PROMPT)
    quit_chat(child)
    assert _user_texts(cli).count("remember this line") == 2
