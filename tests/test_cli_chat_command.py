"""``youyou chat -m``: answers for scripts and pipes, JSON events, exit codes, resume, skills."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pexpect
import pytest

from cli_kit import COMMAND, PROMPT, TIMEOUT_S, Cli, plain, quit_chat, screen
from kernel_kit import block_text
from youyou.domain.ledger import (
    META_SKILL_INVOCATIONS,
    AssistantMessage,
    Metadata,
    UserMessage,
)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_message_prints_only_the_answer_on_stdout_and_exits_zero(cli: Cli) -> None:
    cli.write_config([{"text": "The disk is full.", "chunks": 3}])
    result = cli.run("chat", "-m", "why is the service down?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The disk is full.\n"
    [session_id] = cli.session_ids()
    assert f"session {session_id}" in result.stderr


def test_message_dash_reads_stdin(cli: Cli) -> None:
    cli.write_config([{"text": "read it"}])
    result = cli.run("chat", "-m", "-", stdin="a question\nover two lines\n")
    assert result.returncode == 0, result.stderr
    [user] = cli.user_messages()
    assert block_text(user.content[0]) == "a question\nover two lines\n"


def test_json_prints_the_event_stream_as_json_lines(cli: Cli) -> None:
    cli.write_config([{"text": "one two three", "chunks": 3}])
    result = cli.run("chat", "-m", "hi", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["payload"]["type"] for e in events]
    assert types == ["turn_started", "text_delta", "text_delta", "text_delta", "turn_complete"]
    assert [e["sequence"] for e in events] == [1, 2, 3, 4, 5]
    assert (
        "".join(e["payload"]["text"] for e in events if e["payload"]["type"] == "text_delta")
        == "one two three"
    )
    assert events[-1]["payload"]["context"]["window"] == 32_000


def test_a_provider_error_exits_non_zero_with_its_code(cli: Cli) -> None:
    cli.write_config([{"error": {"kind": "transport", "message": "slow down"}}])
    result = cli.run("chat", "-m", "hi")
    assert result.returncode == 1
    assert "PROVIDER_ERROR" in result.stderr and "slow down" in result.stderr


def test_json_carries_the_error_event(cli: Cli) -> None:
    cli.write_config([{"error": {"kind": "provider", "message": "boom"}}])
    result = cli.run("chat", "-m", "hi", "--json")
    assert result.returncode == 1
    errors = [
        json.loads(line)["payload"] for line in result.stdout.splitlines() if '"error"' in line
    ]
    assert errors and errors[-1]["code"] == "PROVIDER_ERROR"


def test_resume_continues_a_session_with_its_history(cli: Cli) -> None:
    cli.write_config([{"text": "first answer"}])
    assert cli.run("chat", "-m", "first question").returncode == 0
    [session_id] = cli.session_ids()
    cli.write_config([{"text": "second answer"}])  # each process replays its script anew
    result = cli.run("chat", "-m", "second question", "--resume", session_id[:8])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "second answer\n"
    assert cli.session_ids() == [session_id]
    messages = [
        e.payload
        for e in cli.stored(session_id)
        if isinstance(e.payload, UserMessage | AssistantMessage)
    ]
    assert len(messages) == 4


def test_resume_and_model_together_are_refused(cli: Cli) -> None:
    cli.write_config()
    result = cli.run("chat", "-m", "x", "--resume", "abc", "--model", "youyou-demo")
    assert result.returncode == 2
    assert "INVALID_CONFIG" in result.stderr


def test_unknown_model_and_unknown_session_fail_clearly(cli: Cli) -> None:
    cli.write_config()
    result = cli.run("chat", "-m", "x", "--model", "gpt-9")
    assert result.returncode == 1 and "MODEL_NOT_SUPPORTED" in result.stderr
    result = cli.run("chat", "-m", "x", "--resume", "ffffffff")
    assert result.returncode == 1 and "SESSION_NOT_FOUND" in result.stderr


def test_without_configuration_the_offline_model_answers_and_says_how_to_configure(
    cli: Cli,
) -> None:
    result = cli.run("chat", "-m", "hello", with_config=False)
    assert result.returncode == 0, result.stderr
    assert "offline demo model" in result.stdout
    assert "[[providers]]" in result.stderr and "youyou.toml" in result.stderr
    assert (cli.data_dir / "youyou.db").exists()


def _write_skill(root: Path, folder: str, text: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "SKILL.md").write_text(text, encoding="utf-8")


def test_invalid_skill_files_are_reported_with_every_rule_and_valid_ones_load(
    cli: Cli, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    _write_skill(
        skills,
        "disk-full",
        "---\nname: disk-full\ndescription: Free disk space\n---\nCheck df -h first.\n",
    )
    _write_skill(skills, "broken", "---\nname: Bad_Name\ndescription: ''\n---\nbody\n")
    cli.write_config([{"text": "following the runbook"}])
    result = cli.run("chat", "--skills", str(skills), "-m", "/disk-full the db host")
    assert result.returncode == 0, result.stderr
    assert "broken/SKILL.md" in result.stderr
    assert "skill.name_charset" in result.stderr or "skill.name" in result.stderr
    assert result.stderr.count("\n  - ") >= 2  # both failing rules are listed
    [session_id] = cli.session_ids()
    audits = [
        e.payload
        for e in cli.stored(session_id)
        if isinstance(e.payload, Metadata) and e.payload.key == META_SKILL_INVOCATIONS
    ]
    assert audits and "disk-full" in json.dumps(audits[0].value)
    unknown = cli.run("chat", "--skills", str(skills), "-m", "/broken please")
    assert unknown.returncode == 1 and "SKILL_NOT_FOUND" in unknown.stderr


def test_message_in_a_terminal_is_rendered(cli: Cli) -> None:
    cli.write_config([{"text": "Use **df -h**.", "chunks": 2}])
    child = pexpect.spawn(
        COMMAND[0],
        [*COMMAND[1:], "chat", "-m", "disk?"],
        env=cli.env(),
        encoding="utf-8",
        timeout=TIMEOUT_S,
        dimensions=(30, 100),
    )
    child.expect(pexpect.EOF)
    child.close()
    shown = plain(child.before or "")
    assert child.exitstatus == 0
    assert "Use df -h." in shown and "context " in shown


def test_attach_sends_a_file_with_the_message(cli: Cli, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("ERROR disk full\n", encoding="utf-8")
    cli.write_config([{"text": "seen"}])
    result = cli.run("chat", "-m", "look", "--attach", str(log))
    assert result.returncode == 0, result.stderr
    [user] = cli.user_messages()
    assert user.content[1].model_dump() == {
        "type": "file",
        "file_name": "app.log",
        "media_type": "text/plain",
        "text": "ERROR disk full\n",
    }


def test_a_message_over_the_hard_limit_is_refused_with_its_code(cli: Cli) -> None:
    cli.write_config(extra='\n[[providers.models]]\nid = "tiny"\ncontext_window = 400\n')
    result = cli.run("chat", "-m", "word " * 2000)
    assert result.returncode == 1
    assert "CHAT_CONTEXT_LIMIT_REACHED" in result.stderr
    assert cli.session_ids() == []  # nothing was stored, so the empty session is not kept


def test_piped_stdin_without_message_is_one_question(cli: Cli) -> None:
    cli.write_config([{"text": "from the pipe"}])
    result = cli.run("chat", stdin="tail of a log\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "from the pipe\n"


def test_interactive_resume_prints_the_history_first(cli: Cli) -> None:
    cli.write_config([{"text": "earlier answer"}])
    assert cli.run("chat", "-m", "earlier question").returncode == 0
    [session_id] = cli.session_ids()
    child = cli.spawn("--resume", session_id[:8])
    shown = quit_chat(child)  # asserts exit status 0
    assert shown.index("earlier question") < shown.index("earlier answer") < shown.index("bye")


def test_a_model_without_tool_use_answers_without_tools(cli: Cli) -> None:
    cli.write_config(
        [{"text": "no tools needed"}],
        extra='\n[[providers.models]]\nid = "small"\ncontext_window = 8192\n'
        'capabilities = ["streaming"]\n',
    )
    result = cli.run("chat", "-m", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "no tools needed\n"


def test_a_second_process_is_refused_while_the_first_writes_the_session(cli: Cli) -> None:
    slow = "part " * 100  # 100 chunks, 0.3 s apart: busy until the test interrupts it
    cli.write_config([{"text": "opened"}])
    assert cli.run("chat", "-m", "open the session").returncode == 0
    [session_id] = cli.session_ids()
    cli.write_config([{"text": slow, "chunks": 100, "delay_ms": 300}])
    first = subprocess.Popen(
        [*COMMAND, "chat", "-r", session_id, "-m", "first"],
        env=cli.env(),
        cwd=str(cli.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # a process start can take long on a loaded machine; its answer then still runs
        # 30 s, so waiting longer for the question cannot let the answer end first
        deadline = time.monotonic() + 3 * TIMEOUT_S
        while "first" not in _user_texts(cli, session_id):  # its question is stored
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.1)
        second = cli.run("chat", "-r", session_id, "-m", "second")
        first.send_signal(signal.SIGINT)  # Ctrl+C: the partial answer is kept
        first.communicate(timeout=TIMEOUT_S)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 1
    assert "in use by another process" in plain(second.stderr)
    assert f"pid {first.pid}" in plain(second.stderr)
    assert first.returncode == 130
    assert _user_texts(cli, session_id) == ["open the session", "first"]
    answers = [e.payload for e in cli.stored(session_id) if isinstance(e.payload, AssistantMessage)]
    assert [a.status.value for a in answers] == ["complete", "incomplete"]


def _user_texts(cli: Cli, session_id: str) -> list[str]:
    return [
        block_text(e.payload.content[0])
        for e in cli.stored(session_id)
        if isinstance(e.payload, UserMessage)
    ]


def test_an_open_chat_reloads_a_session_another_process_appended_to(cli: Cli) -> None:
    cli.write_config([{"text": "noted"}, {"text": "noted again"}])
    setup = cli.run("chat", "-m", "open the session")
    [session_id] = cli.session_ids()
    assert setup.returncode == 0, setup.stderr
    child = cli.spawn("-r", session_id)
    other = cli.run("chat", "-r", session_id, "-m", "from another terminal")
    assert other.returncode == 0, other.stderr
    child.sendline("from the open chat")
    child.expect("noted")
    child.expect(PROMPT)
    assert "reloading" in screen(child)
    quit_chat(child)
    assert _user_texts(cli, session_id) == [
        "open the session",
        "from another terminal",
        "from the open chat",
    ]
