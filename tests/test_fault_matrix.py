"""Fault matrix: the real ``youyou chat`` under the faults an operator meets.

Concurrent writers on one session, SIGKILL and SIGTERM at several points, a read-only and a
full disk, schema skew, and a provider that cuts, stalls or hangs, on SQLite and PostgreSQL
where storage is involved. For every fault two things are checked and tallied:

- **no acknowledged answer is lost**: an answer ``youyou chat -m`` printed whole and exited 0
  on is stored complete; a partial answer it printed before a cancel or a provider failure is
  stored as incomplete (a SIGKILL can save nothing, so its partial answer is not counted);
- **no traceback is shown**: no process prints ``Traceback`` on stderr.

The last test asserts the totals and prints the closing line (``-s`` shows it; it is also
written to ``fault_matrix.txt`` in pytest's base temp directory).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import text

from cli_kit import COMMAND, TIMEOUT_S, Cli, plain
from fakes.http_server import Delay, StreamReply
from fakes.openai_server import FakeOpenAIServer, OpenAIStream, text_reply
from youyou.adapters.storage.engine import create_engine, migrate
from youyou.adapters.storage.tables import VERSION_TABLE
from youyou.domain.content import TextBlock
from youyou.domain.ledger import AssistantMessage, MessageStatus


@dataclass
class Tally:
    """What the whole matrix saw; one entry per fault and backend."""

    tried: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"fault matrix: {len(self.tried)} faults tried, {len(self.lost)} answers lost, "
            f"{len(self.tracebacks)} tracebacks shown"
        )


TALLY = Tally()
WORDS = 40  # a slow answer: 40 words, 50 ms apart (2 s unless interrupted)


def slow_answer(tag: str, delay_s: float = 0.05) -> StreamReply:
    words = [f"{tag}{i} " for i in range(WORDS)]
    return OpenAIStream().text(*words, delay_s=delay_s).finish().usage(5, WORDS).reply()


HANG = StreamReply((Delay(600),))  # headers, then nothing


@dataclass
class MatrixCli(Cli):
    """``youyou chat`` on the database under test (SQLite file or PostgreSQL)."""

    url: str = ""

    @property
    def db_url(self) -> str:
        return self.url


@dataclass
class Shown:
    text: str
    complete: bool


class World:
    """One fault on one backend: the CLI, the fake model and what the user was shown."""

    def __init__(self, name: str, cli: MatrixCli, model: FakeOpenAIServer) -> None:
        self.name, self.cli, self.model = name, cli, model
        self.shown: list[Shown] = []
        TALLY.tried.append(name)

    def configure(self, provider: str = "", memory: str = "enabled = false") -> None:
        self.cli.write_config(
            extra=f'\n[agent]\ndefault_model = "gpt"\n\n[memory]\n{memory}\n'
            f'\n[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{self.model.base_url}"\n'
            f'{provider}\n[[providers.models]]\nid = "gpt"\ncontext_window = 8192\n'
        )

    def _stderr(self, err: str) -> None:
        if "Traceback" in err:
            TALLY.tracebacks.append(f"{self.name}: {err[-400:]}")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = self.cli.run(*args)
        self._stderr(result.stderr)
        if args[0] == "chat" and result.returncode == 0:
            self.shown.append(Shown(result.stdout.rstrip("\n"), complete=True))
        return result

    def ask(self, message: str, reply: StreamReply, *resume: str) -> str:
        """One acknowledged answer; returns the session id."""
        self.model.enqueue(reply)
        result = self.run("chat", *resume, "-m", message)
        assert result.returncode == 0, result.stderr
        return self.session_id()

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*COMMAND, *args],
            env=self.cli.env(),
            cwd=str(self.cli.root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(self, process: subprocess.Popen[str], printed: str = "") -> tuple[int, str]:
        """Wait for ``process``: (exit code, stderr). What it printed counts as shown: a whole
        answer when it exited 0, else a partial one (unless SIGKILL ended it)."""
        try:
            out, err = process.communicate(timeout=TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        self._stderr(err)
        answer = (printed + out).rstrip("\n")
        if process.returncode == 0:
            self.shown.append(Shown(answer, complete=True))
        elif process.returncode != -signal.SIGKILL and answer:
            self.shown.append(Shown(answer, complete=False))
        return process.returncode, err

    def session_id(self) -> str:
        return self.cli.session_ids()[0]

    def verify(self) -> None:
        """Every answer shown is stored: whole ones complete, partial ones incomplete."""
        stored = [
            (
                "".join(b.text for b in e.payload.content if isinstance(b, TextBlock)),
                e.payload.status,
            )
            for session_id in self.cli.session_ids()
            for e in self.cli.stored(session_id)
            if isinstance(e.payload, AssistantMessage)
        ]
        for shown in self.shown:
            if shown.complete:
                kept = (shown.text, MessageStatus.COMPLETE) in stored
            else:
                kept = any(
                    status is MessageStatus.INCOMPLETE and answer.startswith(shown.text)
                    for answer, status in stored
                )
            if not kept:
                TALLY.lost.append(f"{self.name}: {shown.text[:60]!r}")
        assert not [lost for lost in TALLY.lost if lost.startswith(f"{self.name}:")]
        assert not [tb for tb in TALLY.tracebacks if tb.startswith(f"{self.name}:")]


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path, db_url: str) -> Iterator[World]:
    with FakeOpenAIServer() as model:
        fault = request.node.name.removeprefix("test_")
        yield World(fault, MatrixCli(tmp_path, url=db_url), model)


@pytest.fixture
def sqlite_world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """For faults of the local disk, which only the SQLite file lives on."""
    with FakeOpenAIServer() as model:
        fault = request.node.name.removeprefix("test_") + "[sqlite]"
        url = f"sqlite+aiosqlite:///{tmp_path / 'disk' / 'youyou.db'}"
        yield World(fault, MatrixCli(tmp_path, url=url), model)


def _read_until(process: subprocess.Popen[str], wanted: str) -> str:
    """What ``process`` printed until ``wanted`` appeared (its answer is streaming)."""
    assert process.stdout is not None
    seen = b""
    while wanted.encode() not in seen:  # unbuffered: communicate() must see the rest
        byte = os.read(process.stdout.fileno(), 1)
        assert byte, f"the process ended before printing {wanted!r}"
        seen += byte
    return seen.decode()


def _wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline and process.poll() is None, "gave up waiting"
        time.sleep(0.02)


# -- concurrent writers ------------------------------------------------------------------------


def test_concurrent_writers(world: World) -> None:
    world.configure()
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    # The first answer waits at its gate until the second process has asked and been refused.
    asked = threading.Event()
    first_answer = OpenAIStream().text("first0 ").gate(asked).text("first1").finish().reply()
    world.model.enqueue(first_answer, text_reply("second answer"))
    first = world.start("chat", "-r", session_id, "-m", "and the database?")
    printed = _read_until(first, "first0")
    second = world.run("chat", "-r", session_id, "-m", "and the cache?")
    assert first.poll() is None, "the first answer ended before the second process asked"
    asked.set()
    assert second.returncode == 1
    assert f"is in use by another process (youyou chat, pid {first.pid} on" in second.stderr
    assert world.finish(first, printed)[0] == 0
    world.verify()


# -- SIGKILL and SIGTERM ----------------------------------------------------------------------


@pytest.mark.parametrize("point", ["start-up", "mid-answer", "memory-extraction"])
def test_sigkill(world: World, point: str) -> None:
    world.configure(
        provider="timeout_s = 30",
        memory="close_timeout_s = 60" if point == "memory-extraction" else "enabled = false",
    )
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    before = len(world.model.requests)
    if point == "mid-answer":
        world.model.enqueue(slow_answer("partial"))
    elif point == "memory-extraction":
        world.model.enqueue(text_reply("restart the pods"))
        world.model.default = lambda _request: HANG
    chat = world.start("chat", "-r", session_id, "-m", "what next?")
    printed = ""
    if point == "mid-answer":
        printed = _read_until(chat, "partial0")
    elif point == "memory-extraction":  # the answer is out, the extraction is waiting
        _wait_for(lambda: len(world.model.requests) >= before + 2, chat)
        printed = _read_until(chat, "restart the pods\n")
    chat.kill()
    chat.wait()
    if point == "memory-extraction":  # printed whole: acknowledged before the kill
        world.shown.append(Shown(printed.rstrip("\n"), complete=True))
    world.model.default = None
    world.ask("still there?", text_reply("yes"), "-r", session_id)  # the lease is not stuck
    world.verify()


@pytest.mark.parametrize("point", ["mid-answer", "memory-extraction"])
def test_sigterm(world: World, point: str) -> None:
    memory = "close_timeout_s = 60" if point == "memory-extraction" else "enabled = false"
    world.configure(memory=memory)
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    before = len(world.model.requests)
    if point == "mid-answer":
        world.model.enqueue(slow_answer("partial"))
    else:
        world.model.enqueue(text_reply("restart the pods"))
        world.model.default = lambda _request: HANG
    chat = world.start("chat", "-r", session_id, "-m", "what next?")
    if point == "mid-answer":
        printed = _read_until(chat, "partial0")
    else:
        _wait_for(lambda: len(world.model.requests) >= before + 2, chat)
        printed = ""
    chat.send_signal(signal.SIGTERM)
    code, err = world.finish(chat, printed)
    assert code == 143, err
    if point == "memory-extraction":  # printed whole before SIGTERM came: acknowledged
        world.shown[-1] = Shown(world.shown[-1].text, complete=True)
    world.verify()


# -- disks and databases --------------------------------------------------------------------


def _mount(*args: str) -> None:
    try:
        subprocess.run(["mount", *args], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount here ({exc}): needs root with CAP_SYS_ADMIN")


@pytest.fixture
def small_disk(sqlite_world: World) -> Iterator[Path]:
    """The database's directory on a 2 MiB tmpfs: a real disk that fills up."""
    disk = sqlite_world.cli.root / "disk"
    disk.mkdir()
    _mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk))
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False, timeout=10)


def test_full_disk(sqlite_world: World, small_disk: Path) -> None:
    world = sqlite_world
    world.configure()
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    filler = small_disk / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(bytes(64 * 1024))
                out.flush()
        except OSError:
            pass
    world.model.enqueue(text_reply("an answer that cannot be stored"))
    result = world.run("chat", "-r", session_id, "-m", "what next?")
    assert result.returncode == 1
    err = " ".join(plain(result.stderr).split())
    assert "STORAGE_ERROR" in err and str(small_disk / "youyou.db") in err
    assert "disk" in err.split("STORAGE_ERROR", 1)[1]  # the likely fix names the disk
    filler.unlink()
    world.ask("and now?", text_reply("the disk has room again"), "-r", session_id)
    world.verify()


def test_read_only_disk(sqlite_world: World, small_disk: Path) -> None:
    world = sqlite_world
    world.configure()
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    _mount("-o", "remount,ro", str(small_disk))
    # SQLite's WAL mode needs its -shm file even to read, so both fail: one line each,
    # naming the file and what to check.
    for args in (("chat", "-r", session_id, "-m", "what next?"), ("sessions", "list")):
        result = world.run(*args)
        err = " ".join(plain(result.stderr).split())
        assert result.returncode == 1
        assert err.startswith("✗ STORAGE_ERROR: opening the database failed (SQLite file ")
        assert str(small_disk / "youyou.db") in err and "writable" in err
    _mount("-o", "remount,rw", str(small_disk))
    world.verify()


def test_read_only_database(world: World, db_url: str) -> None:
    """PostgreSQL: a database set read-only; SQLite: a file the process may only read."""
    world.configure()
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    if db_url.startswith("postgresql"):
        asyncio.run(_execute(db_url, "ALTER DATABASE {db} SET default_transaction_read_only = on"))
    else:
        world.cli.config.write_text(
            world.cli.config.read_text(encoding="utf-8").replace(
                db_url, f"sqlite+aiosqlite:///file:{db_url.split('///', 1)[1]}?mode=ro&uri=true"
            ),
            encoding="utf-8",
        )
    result = world.run("chat", "-r", session_id, "-m", "what next?")
    assert result.returncode == 1
    err = " ".join(plain(result.stderr).split())
    assert err.startswith("✗ STORAGE_ERROR: acquiring the lease of session") and "read" in err
    listed = world.run("sessions", "list")
    assert listed.returncode == 0 and "why is checkout down?" in listed.stdout, listed.stderr
    world.verify()


async def _execute(url: str, statement: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            name = conn.engine.url.database
            await conn.execute(text("COMMIT"))
            await conn.execute(text(statement.format(db=f'"{name}"')))
    finally:
        await engine.dispose()


# -- schema skew -----------------------------------------------------------------------------


async def _stamp(url: str, revision: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": revision}
            )
    finally:
        await engine.dispose()


async def _migrate_to(url: str, revision: str) -> None:
    engine = create_engine(url)
    try:
        await migrate(engine, revision)
    finally:
        await engine.dispose()


def test_schema_from_a_newer_youyou(world: World, db_url: str) -> None:
    world.configure()
    world.ask("why is checkout down?", text_reply("look at the pods"))
    asyncio.run(_stamp(db_url, "0099_newer"))
    result = world.run("chat", "-m", "what next?")
    assert result.returncode == 1
    assert "schema is at revision '0099_newer'" in plain(result.stderr)
    asyncio.run(_stamp(db_url, "0002"))  # put back, so that the answers can be read
    world.verify()


def test_schema_from_an_older_youyou(world: World, db_url: str) -> None:
    asyncio.run(_migrate_to(db_url, "0001"))
    world.configure()
    world.ask("why is checkout down?", text_reply("look at the pods"))  # migrates, then works
    world.verify()


# -- misbehaving providers ---------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["cut", "stall", "hang", "refused"])
def test_provider(world: World, fault: str) -> None:
    world.configure(provider="timeout_s = 1\nmax_attempts = 2\nretry_base_delay_s = 0")
    session_id = world.ask("why is checkout down?", text_reply("look at the pods"))
    if fault == "cut":
        world.model.enqueue(OpenAIStream().text("partial ", "answer ").abort())
    elif fault == "stall":
        world.model.enqueue(OpenAIStream().text("partial ", "answer ").delay(600).reply())
    elif fault == "hang":
        world.model.default = lambda _request: HANG
    else:
        world.model.stop()
    chat = world.start("chat", "-r", session_id, "-m", "what next?")
    code, err = world.finish(chat)
    assert code == 1
    assert "PROVIDER_ERROR: provider 'fake' at" in " ".join(plain(err).split())
    world.verify()


# -- the closing line ----------------------------------------------------------------------------


def test_zz_fault_matrix_summary(tmp_path_factory: pytest.TempPathFactory) -> None:
    line = TALLY.line()
    print(f"\n{line}")
    (tmp_path_factory.getbasetemp() / "fault_matrix.txt").write_text(
        "\n".join([line, *TALLY.lost, *TALLY.tracebacks]) + "\n", encoding="utf-8"
    )
    assert TALLY.lost == [] and TALLY.tracebacks == [], line
