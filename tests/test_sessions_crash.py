"""Crash safety: SIGKILL a child at random points of its turns; nothing acknowledged is lost.

The child (``tests/crash_child.py``, forked from a fork server that imported it once) streams
text and runs tool batches on a real SQLite file or PostgreSQL database and prints every
acknowledged ledger write. After each kill this process
checks the database (contiguous seqs, every event decodes, the summary projection equals the one
recomputed from the events, every ACK present), resumes the session in a fresh agent and runs
one more turn. The next child resumes the same session, so kills also land inside resumes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from sqlalchemy import func, select

import crash_child
from crash_child import builder
from youyou import OutcomeStatus
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import ledger_events, sessions
from youyou.domain.ledger import LedgerEvent, ToolCall, ToolResult, UserMessage
from youyou.domain.session import SessionListQuery, SessionSummary, next_summary
from youyou.domain.templates import TOOL_INTERRUPTED

STEP_TIMEOUT_S = 30.0


@dataclass
class ChildRun:
    """What one killed child acknowledged; ``kinds`` are the kinds of the ACKed events."""

    session_id: str | None
    acked: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)


# Children are forked from a fork server that imported YouYou once (``crash_child.PRELOAD``):
# a kill costs milliseconds of start-up instead of a fresh interpreter's imports.
_CHILDREN = multiprocessing.get_context("forkserver")
_CHILDREN.set_forkserver_preload(list(crash_child.PRELOAD))
FIRST_STARTUP_GUESS_S = 0.2


@dataclass
class Startup:
    """How long the last child took from its start to ``SESSION``: ``during_startup`` kills
    land at a random time within it (opening the storage, building the agent, resuming)."""

    seconds: float = FIRST_STARTUP_GUESS_S


async def run_and_kill(
    url: str, session_id: str | None, rng: random.Random, startup: Startup, err_path: Path
) -> ChildRun:
    """Start a child, SIGKILL it at a random point, return everything it acknowledged."""
    read_fd, write_fd = os.pipe()
    writer = Connection(write_fd, readable=False)
    proc = _CHILDREN.Process(
        target=crash_child.forked_main, args=(url, session_id, writer, str(err_path))
    )
    loop = asyncio.get_running_loop()
    reader_stream = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader_stream), os.fdopen(read_fd, "rb", 0)
    )
    began = time.monotonic()
    proc.start()
    writer.close()  # the child holds the only write end: EOF once it dies
    run = ChildRun(session_id)
    strategy = rng.choice(["after_ack", "after_ack", "after_time", "during_startup"])
    kill_at_ack = rng.randint(1, 60)
    started = asyncio.Event()

    def kill() -> None:
        if proc.exitcode is None:
            proc.kill()

    async def read() -> None:
        fresh = 0
        while line := await reader_stream.readline():
            word, *rest = line.decode().split()
            if word == "SESSION":
                run.session_id = rest[0]
                startup.seconds = time.monotonic() - began
                started.set()
            elif word == "ACK":
                run.acked.append(int(rest[0]))
                run.kinds.append(rest[1])
                fresh += 1
                if strategy == "after_ack" and started.is_set() and fresh >= kill_at_ack:
                    kill()

    exited = asyncio.Event()
    loop.add_reader(proc.sentinel, exited.set)  # readable once the child has ended
    reader = asyncio.create_task(read())
    if strategy == "during_startup":
        loop.call_later(rng.uniform(0.0, startup.seconds), kill)
    elif strategy == "after_time":
        await asyncio.wait_for(started.wait(), STEP_TIMEOUT_S)
        loop.call_later(rng.uniform(0.0, 0.4), kill)
    try:
        await asyncio.wait_for(exited.wait(), STEP_TIMEOUT_S)
    finally:
        loop.remove_reader(proc.sentinel)
        kill()
        proc.join(STEP_TIMEOUT_S)
    await reader  # lines written before the kill are still in the pipe
    transport.close()
    assert proc.exitcode == -9, f"the child did not die by SIGKILL:\n{_text(err_path)}"
    return run


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


async def check_and_continue(url: str, run: ChildRun) -> str:
    """Check the database after a kill, then resume in a fresh agent and run one more turn."""
    assert run.session_id is not None
    session_id = run.session_id
    storage = await SqlSessionStorage.open(url)
    try:
        async with storage.engine.connect() as conn:
            count, top = (
                await conn.execute(
                    select(func.count(), func.max(ledger_events.c.seq)).where(
                        ledger_events.c.session_id == session_id
                    )
                )
            ).one()
            assert await conn.scalar(select(func.count()).select_from(sessions)) == 1
        events = await storage.load_events(session_id)  # decodes every stored event
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert (count, top) == (len(events), len(events))
        assert set(run.acked) <= {e.seq for e in events}, "an acknowledged event was lost"
        head = await storage.load_head(session_id)
        expected: SessionSummary | None = None
        for event in events:
            expected = next_summary(expected, session_id, event)
        assert head.summary == expected
        assert head.last_seq == len(events)

        agent = await builder(storage).build()
        session = await agent.resume_session(session_id)
        repaired = session.events[-1].seq - len(events)
        assert_no_unanswered_calls(session.events)
        if repaired:
            assert all(
                isinstance(e.payload, ToolResult)
                and e.payload.result.output.content == TOOL_INTERRUPTED
                for e in session.events[-repaired:]
            )
        outcome = await (await session.send_message("after the crash")).join()
        assert outcome.status is OutcomeStatus.COMPLETED, outcome.error
        after = await storage.load_events(session_id, len(events))
        assert [e.seq for e in after] == list(range(len(events) + 1, len(events) + len(after) + 1))
        # (an automatic compaction may come first: the child's turns add up)
        first_user = next(e.payload for e in after if isinstance(e.payload, UserMessage))
        assert first_user == UserMessage.model_validate(
            {"content": [{"type": "text", "text": "after the crash"}]}
        )
        await agent.shutdown()
    finally:
        await storage.close()
    return session_id


def assert_no_unanswered_calls(events: Sequence[LedgerEvent]) -> None:
    pending: set[str] = set()
    for event in events:
        if isinstance(event.payload, ToolCall):
            pending.add(event.payload.call.call_id)
        elif isinstance(event.payload, ToolResult):
            pending.discard(event.payload.result.call_id)
    assert not pending


async def test_sigkill_at_random_points_loses_no_acknowledged_event(
    db_url: str, tmp_path: Path
) -> None:
    backend, kills = ("sqlite", 25) if db_url.startswith("sqlite") else ("postgresql", 10)
    rng = random.Random(f"crash-{backend}")
    startup = Startup()
    session_id: str | None = None
    last_kinds: list[str] = []
    acked = 0
    for number in range(kills):
        err_path = tmp_path / f"child-{number}.stderr"
        run = await run_and_kill(db_url, session_id, rng, startup, err_path)
        if run.session_id is None:  # killed before it printed the id of its new session
            run.session_id = await only_session(db_url)
            if run.session_id is None:
                assert not run.acked
                continue
        session_id = await check_and_continue(db_url, run)
        acked += len(run.acked)
        last_kinds.append(run.kinds[-1] if run.kinds else "none")
    assert session_id is not None
    # the kills landed at different points of a turn, not always at the same place
    assert len(set(last_kinds)) >= 3, last_kinds
    assert acked > kills


async def only_session(url: str) -> str | None:
    storage = await SqlSessionStorage.open(url)
    try:
        found = [s.session_id for s in (await storage.list_sessions(SessionListQuery())).items]
    finally:
        await storage.close()
    assert len(found) <= 1
    return found[0] if found else None
