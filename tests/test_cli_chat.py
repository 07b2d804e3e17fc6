"""``youyou chat`` in a pseudo-terminal: streaming, Ctrl+C, errors that never end the loop."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pytest

from cli_kit import COMMAND, PROMPT, TIMEOUT_S, Cli, loose, quit_chat
from fakes.http_server import Silence
from fakes.openai_server import FakeOpenAIServer
from youyou.domain.content import TextBlock
from youyou.domain.ledger import AssistantMessage, MessageStatus

SLOW = {"text": "Alpha beta gamma delta epsilon zeta eta theta", "chunks": 8, "delay_ms": 250}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _assistant_texts(cli: Cli, session_id: str) -> list[tuple[str, MessageStatus]]:
    return [
        ("".join(b.text for b in e.payload.content if isinstance(b, TextBlock)), e.payload.status)
        for e in cli.stored(session_id)
        if isinstance(e.payload, AssistantMessage)
    ]


def test_the_answer_streams_before_the_turn_ends(cli: Cli) -> None:
    cli.write_config([SLOW])
    child = cli.spawn()
    child.sendline("first question")
    child.expect("Alpha")
    first = time.monotonic()
    child.expect("theta")
    last = time.monotonic()
    child.expect(r"context \d+ / 32,000 tokens")
    child.expect(PROMPT)
    quit_chat(child)
    # Eight chunks, 250 ms apart: the last one cannot arrive with the first.
    assert last - first >= 1.0


def test_ctrl_c_cancels_the_turn_keeps_the_partial_answer_and_prompts_again(cli: Cli) -> None:
    cli.write_config([SLOW, {"text": "after the cancel"}])
    child = cli.spawn()
    child.sendline("first question")
    child.expect("Alpha")
    child.sendintr()
    child.expect("cancelled: the answer above is incomplete")
    child.expect(PROMPT)
    child.sendline("second question")
    child.expect("after the cancel")
    child.expect(PROMPT)
    quit_chat(child)
    [session_id] = cli.session_ids()
    (partial, status), (complete, complete_status) = _assistant_texts(cli, session_id)
    assert status is MessageStatus.INCOMPLETE
    assert partial.startswith("Alpha") and "theta" not in partial
    assert (complete, complete_status) == ("after the cancel", MessageStatus.COMPLETE)


def test_ctrl_c_at_an_empty_prompt_closes_the_session_and_exits(cli: Cli) -> None:
    cli.write_config([{"text": "hello"}])
    child = cli.spawn()
    child.sendline("hi")
    child.expect("hello")
    child.expect(PROMPT)
    child.send("typed but not sent")
    child.sendintr()  # a non-empty line is only cleared
    child.sendintr()
    child.expect("closing the session")
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert len(cli.user_messages()) == 1


def test_a_silent_endpoint_shows_the_wait_then_fails_at_the_first_byte_timeout(
    cli: Cli,
) -> None:
    with FakeOpenAIServer() as server:
        server.default = lambda _: Silence()
        cli.config.write_text(
            f'[database]\nurl = "{cli.db_url}"\n\n[agent]\nmodel_wait_notice_ms = 200\n\n'
            f'[[providers]]\nid = "gw"\ntype = "openai"\nbase_url = "{server.base_url}"\n'
            "first_byte_timeout_s = 1.5\nmax_attempts = 1\n"
            '[[providers.models]]\nid = "silent"\ncontext_window = 8000\n',
            encoding="utf-8",
        )
        child = cli.spawn()
        child.sendline("anyone there?")
        started = time.monotonic()
        child.expect(r"waiting for the model… 1 s")
        child.expect("PROVIDER_ERROR")
        child.expect(loose("no response within 1.5 s (first_byte_timeout_s)"))
        failed = time.monotonic() - started
        child.expect(PROMPT)
        quit_chat(child)
    assert failed < 10  # the default read timeout alone would wait 60 s


def test_errors_are_shown_with_their_code_and_the_loop_goes_on(cli: Cli) -> None:
    cli.write_config(
        [
            {"error": {"kind": "provider", "message": "upstream exploded"}},
            {"text": "still here"},
        ]
    )
    child = cli.spawn()
    child.sendline("/no-such-skill please")
    child.expect("SKILL_NOT_FOUND")
    child.expect(PROMPT)
    child.sendline("/mode sometimes")
    child.expect("INPUT_VALIDATION")
    child.expect(PROMPT)
    child.sendline("trigger the failure")
    child.expect("PROVIDER_ERROR")
    child.expect("upstream exploded")
    child.expect(PROMPT)
    child.sendline("again")
    child.expect("still here")
    child.expect(PROMPT)
    quit_chat(child)


def test_the_answer_is_rendered_as_markdown_and_tools_show_their_result(cli: Cli) -> None:
    cli.write_config(
        [
            {
                "tool_calls": [
                    {"id": "c1", "name": "get_current_time", "arguments": {"timezone": "UTC"}}
                ]
            },
            {
                "reasoning": "thinking it over",
                "text": "It is **late**.\n\n- one\n- two",
                "chunks": 3,
            },
        ]
    )
    child = cli.spawn()
    child.sendline("what time is it?")
    child.expect("late")
    child.expect(PROMPT)
    shown = quit_chat(child)
    assert "thinking it over" in shown
    assert re.search(r'✓ get_current_time \{"timezone":"UTC"\} · \d+ ms → \{"datetime"', shown)
    assert "It is late." in shown  # rendered, not raw Markdown
    assert "• one" in shown


def test_a_read_only_database_is_said_once_though_closing_fails_the_same_way(cli: Cli) -> None:
    cli.write_config([{"text": "first"}, {"text": "second"}])
    assert cli.run("chat", "-m", "first question").returncode == 0
    [session_id] = cli.session_ids()
    read_only = f"sqlite+aiosqlite:///file:{cli.root / 'youyou.db'}?mode=ro&uri=true"
    cli.config.write_text(cli.config.read_text().replace(cli.db_url, read_only))

    result = cli.run("chat", "-r", session_id, "-m", "second question")

    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if "✗" in line]
    assert line.startswith("✗ STORAGE_ERROR: ") and "readonly database" in line
    assert (cli.data_dir / "youyou.log").read_text().count(f"closing session {session_id}") == 1


def _limited(size: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_full_disk_is_said_once_though_closing_fails_the_same_way(cli: Cli) -> None:
    """A full disk, honestly simulated: the process may not grow any file beyond a limit, so
    SQLite's writes into its WAL fail part-way, as they do when the disk runs out of space.
    Across limits the turn fails at different writes; each run says it in one line."""
    cli.write_config([{"text": "first"}] * 20)
    assert cli.run("chat", "-m", "first question").returncode == 0
    pristine = (cli.root / "youyou.db").read_bytes()
    failed_runs = 0
    for size in range(36 * 1024, 68 * 1024, 4 * 1024):
        for name in ("youyou.db-wal", "youyou.db-shm", "youyou.db"):
            (cli.root / name).unlink(missing_ok=True)
        (cli.root / "youyou.db").write_bytes(pristine)
        result = subprocess.run(
            [*COMMAND, "chat", "-m", "next question"],
            capture_output=True,
            text=True,
            env=cli.env(),
            cwd=cli.root,
            timeout=TIMEOUT_S,
            preexec_fn=_limited(size),
            check=False,
        )
        errors = [line for line in result.stderr.splitlines() if "✗" in line]
        assert len(errors) == result.returncode, (size, result.stderr)
        failed_runs += result.returncode
        if errors:
            assert errors[0].startswith("✗ STORAGE_ERROR: ") and "disk" in errors[0]
    assert failed_runs >= 4


def _hold_write_lock(database: Path) -> subprocess.Popen[str]:
    """Another process holding SQLite's write lock until it is killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('BEGIN IMMEDIATE')\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
            str(database),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


WAITING = "waiting for the database… (another process holds its write lock)"


@pytest.mark.parametrize("released", [True, False])
def test_a_write_lock_held_by_another_process_is_waited_for_visibly(
    cli: Cli, released: bool
) -> None:
    cli.write_config([{"text": "first"}])
    assert cli.run("chat", "-m", "first question").returncode == 0
    [session_id] = cli.session_ids()
    cli.write_config([{"text": "second"}])
    holder = _hold_write_lock(cli.root / "youyou.db")
    try:
        chat = subprocess.Popen(
            [*COMMAND, "chat", "-r", session_id, "-m", "second question"],
            env=cli.env(),
            cwd=cli.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert chat.stderr is not None
        assert chat.stderr.readline() == WAITING + "\n"
        if released:  # within the busy timeout: the chat goes on
            holder.kill()
        out, err = chat.communicate(timeout=TIMEOUT_S)
    finally:
        holder.kill()
        holder.wait()
    if released:
        assert (chat.returncode, out) == (0, "second\n"), err
    else:
        assert chat.returncode == 1
        [error] = [line for line in err.splitlines() if "✗" in line]
        assert error.startswith("✗ STORAGE_ERROR: ")
        assert "another process holds the database's write lock" in error
