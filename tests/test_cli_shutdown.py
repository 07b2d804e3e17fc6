"""How ``youyou chat`` ends: SIGTERM keeps the partial answer like Ctrl+C and exits 143, and the
memory extraction of the closing session never holds the exit hostage to a dead provider."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pexpect
import pytest

from cli_kit import COMMAND, PROMPT, TIMEOUT_S, Cli, plain
from fakes.http_server import Delay, StreamReply
from fakes.openai_server import FakeOpenAIServer, text_reply
from youyou.cli.pending_memories import PENDING_DIR
from youyou.domain.content import TextBlock
from youyou.domain.ledger import AssistantMessage, MessageStatus, UserMessage

SLOW_TEXT = "part " * 100
SLOW = {"text": SLOW_TEXT, "chunks": 100, "delay_ms": 300}  # 30 s unless interrupted
HANG = StreamReply((Delay(600),))  # headers, then nothing: a provider that stopped answering


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def hung_model() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI endpoint that answers what the test enqueues, then hangs."""
    with FakeOpenAIServer() as server:
        server.default = lambda _request: HANG
        yield server


def _use_fake(cli: Cli, server: FakeOpenAIServer, provider: str = "", memory: str = "") -> None:
    cli.write_config(
        extra=f'\n[agent]\ndefault_model = "gpt"\n\n[memory]\n{memory}\n'
        f'\n[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{server.base_url}"\n'
        f'{provider}\n[[providers.models]]\nid = "gpt"\ncontext_window = 8192\n'
    )


def _answers(cli: Cli) -> list[tuple[str, MessageStatus]]:
    [session_id] = cli.session_ids()
    return [
        ("".join(b.text for b in e.payload.content if isinstance(b, TextBlock)), e.payload.status)
        for e in cli.stored(session_id)
        if isinstance(e.payload, AssistantMessage)
    ]


def _start(cli: Cli, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*COMMAND, "chat", *args],
        env=cli.env(),
        cwd=str(cli.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline and process.poll() is None, "gave up waiting"
        time.sleep(0.05)


def test_sigterm_mid_answer_keeps_the_partial_answer_and_exits_143(cli: Cli) -> None:
    cli.write_config([SLOW])
    chat = _start(cli, "-m", "why is checkout down?")
    try:
        assert chat.stdout is not None
        assert chat.stdout.read(5) == "part "  # the answer is streaming
        chat.send_signal(signal.SIGTERM)
        _, err = chat.communicate(timeout=TIMEOUT_S)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == 143, err
    [(partial, status)] = _answers(cli)
    assert status is MessageStatus.INCOMPLETE
    assert partial.startswith("part ") and len(partial) < len(SLOW_TEXT)
    assert "cancelled" in err and "Traceback" not in err


def test_sigterm_ends_an_interactive_chat_keeping_the_partial_answer(cli: Cli) -> None:
    cli.write_config([SLOW])
    child = cli.spawn()
    child.sendline("why is checkout down?")
    child.expect("part")
    child.kill(signal.SIGTERM)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 143
    [(partial, status)] = _answers(cli)
    assert status is MessageStatus.INCOMPLETE and partial.startswith("part")


def test_sigterm_at_the_prompt_closes_the_session_and_exits_143(cli: Cli) -> None:
    cli.write_config([{"text": "restart the pods"}])
    child = cli.spawn()
    child.sendline("why is checkout down?")
    child.expect("restart the pods")
    child.expect(PROMPT)
    child.kill(signal.SIGTERM)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 143
    assert _answers(cli) == [("restart the pods", MessageStatus.COMPLETE)]


def test_after_a_provider_failure_closing_does_not_ask_the_provider_again(
    cli: Cli, hung_model: FakeOpenAIServer
) -> None:
    _use_fake(cli, hung_model, provider="timeout_s = 1\nmax_attempts = 2\nretry_base_delay_s = 0")

    result = cli.run("chat", "-m", "why is checkout down?")

    assert result.returncode == 1
    assert "PROVIDER_ERROR" in result.stderr
    assert len(hung_model.requests) == 2  # the turn's two attempts, no memory extraction
    [session_id] = cli.session_ids()  # the question is kept for a later extraction
    assert any(isinstance(e.payload, UserMessage) for e in cli.stored(session_id))


def test_memory_extraction_on_close_has_a_deadline(cli: Cli, hung_model: FakeOpenAIServer) -> None:
    hung_model.enqueue(text_reply("restart the pods"))
    _use_fake(cli, hung_model, memory="close_timeout_s = 1")

    result = cli.run("chat", "-m", "why is checkout down?")  # the provider would wait 60 s

    assert result.returncode == 0, result.stderr
    assert result.stdout == "restart the pods\n"
    assert "not saved" not in plain(result.stderr)  # handed to the next start, not lost
    [session_id] = cli.session_ids()
    assert (cli.data_dir / PENDING_DIR / session_id).exists()
    assert len(hung_model.requests) == 2
    assert hung_model.requests[1].disconnected.wait(5)  # the extraction request was dropped


def test_an_extraction_that_cannot_be_handed_on_says_it_was_not_saved(
    cli: Cli, hung_model: FakeOpenAIServer
) -> None:
    hung_model.enqueue(text_reply("restart the pods"))
    _use_fake(cli, hung_model, memory="close_timeout_s = 1")
    cli.data_dir.mkdir(parents=True)
    (cli.data_dir / PENDING_DIR).write_text("a file where the markers' directory belongs")

    result = cli.run("chat", "-m", "why is checkout down?")

    assert result.returncode == 0, result.stderr
    assert "long-term memories were not saved (it took longer than 1 s)" in plain(result.stderr)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 0), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_the_memory_extraction_at_once(
    cli: Cli, hung_model: FakeOpenAIServer, signum: signal.Signals, code: int
) -> None:
    hung_model.enqueue(text_reply("restart the pods"))
    _use_fake(cli, hung_model, memory="close_timeout_s = 600")
    chat = _start(cli, "-m", "why is checkout down?")
    try:
        _wait_for(lambda: len(hung_model.requests) == 2, chat)  # the extraction is waiting
        chat.send_signal(signum)
        out, err = chat.communicate(timeout=TIMEOUT_S)
    finally:
        if chat.poll() is None:
            chat.kill()
    assert chat.returncode == code, err
    assert out == "restart the pods\n"
    assert "long-term memories were not saved (stopped)" in plain(err)
    assert _answers(cli) == [("restart the pods", MessageStatus.COMPLETE)]


def _opened_twice(pid: int, inherited: int) -> bool:
    """Whether process ``pid`` opened the pipe it inherited as ``inherited`` once more."""
    pipe = os.readlink(f"/proc/self/fd/{inherited}")
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with suppress(OSError):
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return links.count(pipe) >= 2


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_reading_an_attachment_from_a_pipe_that_never_closes(
    cli: Cli, signum: signal.Signals, code: int
) -> None:
    cli.write_config([{"text": "never asked"}])
    read_end, write_end = os.pipe()  # the test keeps the write end open: no end of file
    try:
        chat = subprocess.Popen(
            [*COMMAND, "chat", "-m", "read this", "-a", f"/dev/fd/{read_end}"],
            env=cli.env(),
            cwd=str(cli.root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(read_end,),
        )
        _, err, took = _signal_when(chat, lambda: _opened_twice(chat.pid, read_end), signum)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert chat.returncode == code, err
    assert took < 5
    assert f"✗ REQUEST_CANCELLED: reading /dev/fd/{read_end} was stopped" in plain(err)
    assert "session" not in err and "Traceback" not in err
    assert cli.session_ids() == []


def test_sigterm_stops_reading_the_message_from_a_stdin_that_never_closes(cli: Cli) -> None:
    cli.write_config([{"text": "never asked"}])
    read_end, write_end = os.pipe()
    try:
        chat = subprocess.Popen(
            [*COMMAND, "chat", "-m", "-"],
            env=cli.env(),
            cwd=str(cli.root),
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        reading = lambda: len(os.listdir(f"/proc/{chat.pid}/task")) > 1  # noqa: E731
        _, err, took = _signal_when(chat, reading, signal.SIGTERM)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert chat.returncode == 143, err
    assert took < 5
    assert "✗ REQUEST_CANCELLED: reading the message from stdin was stopped" in plain(err)
    assert cli.session_ids() == []


def _signal_when(
    chat: subprocess.Popen[str], ready: Callable[[], bool], signum: signal.Signals
) -> tuple[str, str, float]:
    """Send ``signum`` once ``ready()``; stdout, stderr and the seconds the exit took."""
    try:
        _wait_for(ready, chat)
        sent = time.monotonic()
        chat.send_signal(signum)
        out, err = chat.communicate(timeout=TIMEOUT_S)
        return out, err, time.monotonic() - sent
    finally:
        if chat.poll() is None:
            chat.kill()
