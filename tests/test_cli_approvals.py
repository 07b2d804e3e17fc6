"""``youyou chat`` asks before a tool call that needs approval: inline in a pseudo-terminal
(yes, no, always, view, Ctrl+C), never through a pipe unless ``--approve-all``."""

from __future__ import annotations

import io
import re
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pexpect
import pytest

from cli_kit import COMMAND, PROMPT, TIMEOUT_S, Cli, quit_chat, screen
from mcp_kit import DEMO
from youyou.cli.approvals import Answer, parse, question
from youyou.domain.approvals import META_APPROVAL_DECIDED, PendingApproval
from youyou.domain.ledger import Metadata, ToolResult

TOOLS = (
    f'\n[[mcp_servers]]\nid = "tickets"\ncommand = "{sys.executable}"\nargs = ["{DEMO}", "stdio"]\n'
)
QUESTION = 'Allow tickets__write_note {"text": "42"}?'
CHOICES = re.compile(r"\[y\]es / \[n\]o / \[a\]lways\s+this\s+session / \[v\]iew\s+arguments")


def note(call_id: str) -> dict[str, Any]:
    return {
        "tool_calls": [{"id": call_id, "name": "tickets__write_note", "arguments": {"text": "42"}}]
    }


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def decisions(cli: Cli) -> list[dict[str, Any]]:
    [session_id] = cli.session_ids()
    return [
        e.payload.value
        for e in cli.stored(session_id)
        if isinstance(e.payload, Metadata) and e.payload.key == META_APPROVAL_DECIDED
    ]


def results(cli: Cli) -> dict[str, str]:
    [session_id] = cli.session_ids()
    return {
        e.payload.result.call_id: e.payload.result.output.content
        for e in cli.stored(session_id)
        if isinstance(e.payload, ToolResult)
    }


def test_yes_after_viewing_the_arguments_runs_the_call(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "noted it"}], extra=TOOLS)
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.expect(CHOICES)
    child.sendline("v")
    child.expect(r'"text": "42"')
    child.expect_exact(QUESTION)
    child.sendline("y")
    child.expect("noted it")
    child.expect(PROMPT)
    shown = quit_chat(child)
    assert "✓ tickets__write_note" in shown
    [decision] = decisions(cli)
    assert decision["decision"] == "approve"
    assert decision["decided_by"].endswith("(youyou chat)")
    assert results(cli) == {"c1": "noted 42"}


def test_no_denies_and_the_model_hears_it(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "fine, I will not"}], extra=TOOLS)
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.sendline("n")
    child.expect("fine, I will not")
    child.expect(PROMPT)
    quit_chat(child)
    [decision] = decisions(cli)
    assert decision["decision"] == "deny"
    assert "denied" in results(cli)["c1"]


def test_always_approves_the_tool_for_the_rest_of_the_session(cli: Cli) -> None:
    cli.write_config(
        [note("c1"), {"text": "first done"}, note("c2"), {"text": "second done"}], extra=TOOLS
    )
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.sendline("a")
    child.expect("first done")
    child.expect(PROMPT)
    child.sendline("again")
    child.expect("second done")
    child.expect(PROMPT)
    shown = quit_chat(child)
    first, second = shown.split("first done", 1)
    assert "Allow tickets__write_note" in first and "Allow" not in second
    [decision] = decisions(cli)
    assert decision["remember"] == "session"
    assert results(cli) == {"c1": "noted 42", "c2": "noted 42"}


def test_ctrl_c_at_the_question_cancels_the_turn(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "after the cancel"}], extra=TOOLS)
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.sendcontrol("c")
    child.expect("cancelled")
    child.expect(PROMPT)
    child.sendline("something else")
    child.expect("after the cancel")
    child.expect(PROMPT)
    quit_chat(child)
    assert decisions(cli) == []
    assert "cancelled" in results(cli)["c1"]
    assert "Traceback" not in screen(child)


def test_without_a_terminal_calls_are_denied_with_a_message(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "I could not note it"}], extra=TOOLS)
    result = cli.run("chat", "-m", "note 42")
    assert result.returncode == 0, result.stderr
    assert "I could not note it" in result.stdout
    said = " ".join(result.stderr.split())
    assert 'denied tickets__write_note {"text": "42"}: it needs approval' in said
    assert "--approve-all" in said
    [decision] = decisions(cli)
    assert decision["decision"] == "deny"
    assert "not a terminal" in results(cli)["c1"]


def test_approve_all_approves_without_a_terminal(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "noted"}], extra=TOOLS)
    result = cli.run("chat", "-m", "-", "--approve-all", stdin="note 42")
    assert result.returncode == 0, result.stderr
    assert "[tool tickets__write_note ok" in result.stderr
    [decision] = decisions(cli)
    assert (decision["decision"], decision["reason"]) == ("approve", "youyou chat --approve-all")
    assert results(cli) == {"c1": "noted 42"}


def test_a_chat_killed_at_the_question_asks_again_when_resumed(cli: Cli) -> None:
    cli.write_config([note("c1")], extra=TOOLS)
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.kill(signal.SIGKILL)
    child.close()
    [session_id] = cli.session_ids()
    assert results(cli) == {}  # the call still waits for its decision

    cli.write_config([{"text": "noted after the restart"}], extra=TOOLS)
    resumed = pexpect.spawn(
        COMMAND[0],
        [*COMMAND[1:], "chat", "-r", session_id],
        env=cli.env(),
        cwd=str(cli.root),
        encoding="utf-8",
        timeout=TIMEOUT_S,
        dimensions=(30, 160),
    )
    resumed.logfile_read = io.StringIO()
    resumed.expect("this session's last turn waits for approval")
    resumed.expect_exact(QUESTION)
    resumed.sendline("y")
    resumed.expect("noted after the restart")
    resumed.expect(PROMPT)
    quit_chat(resumed)
    assert results(cli) == {"c1": "noted 42"}


def test_the_question_and_the_replies() -> None:
    request = PendingApproval(
        call_id="c1",
        tool_name="tickets__close_ticket",
        arguments={"id": 42},
        reason="r",
        requested_at=datetime.now(UTC),
    )
    assert question(request) == (
        'Allow tickets__close_ticket {"id": 42}? '
        "[y]es / [n]o / [a]lways this session / [v]iew arguments "
    )
    assert parse(" Y ") == Answer("approve")
    assert parse("no") == Answer("deny", reason="denied at the terminal")
    assert parse("a") == Answer("approve", remember="session")
    assert parse("v") == "view"
    assert parse("maybe") is None


def test_one_message_in_a_terminal_asks_too(cli: Cli) -> None:
    cli.write_config([note("c1"), {"text": "noted in one go"}], extra=TOOLS)
    child = pexpect.spawn(
        COMMAND[0],
        [*COMMAND[1:], "chat", "-m", "note 42"],
        env=cli.env(),
        cwd=str(cli.root),
        encoding="utf-8",
        timeout=TIMEOUT_S,
        dimensions=(30, 160),
    )
    child.logfile_read = io.StringIO()
    child.expect_exact(QUESTION)
    child.sendline("y")
    child.expect("noted in one go")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)
    assert results(cli) == {"c1": "noted 42"}


def test_sigterm_at_the_question_cancels_the_turn_and_ends_the_chat(cli: Cli) -> None:
    cli.write_config([note("c1")], extra=TOOLS)
    child = cli.spawn()
    child.sendline("note 42")
    child.expect_exact(QUESTION)
    child.kill(signal.SIGTERM)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 143, screen(child)
    assert "cancelled" in results(cli)["c1"]
    assert "Traceback" not in screen(child)
