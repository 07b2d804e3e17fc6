"""Resume and durable-turn cost on SQLite (WAL) and PostgreSQL, with a zero-latency model.

    .venv/bin/python bench/resume.py [--sizes 1000,10000,100000] [--backend NAME] [--profile]

Per backend it prints:
(a) ``Agent.resume_session`` latency and memory for sessions of 1 000 / 10 000 / 100 000 ledger
    events, plain and "compacted" (a context_compaction event 50 events before the end, so
    resume reads only what follows it). Memory is the Python allocation peak during one resume
    (tracemalloc, a separate untimed pass) and the process RSS.
(b) the first turn after resuming a 2 000-message session: wall time, the time spent inside
    ``append_event`` and the difference (kernel time);
(c) 200 durable turns of a new session: the same three numbers per turn;
(d) ``append_event`` throughput, one event at a time through the port.

Sessions are bulk-inserted (rows built with the real codec and summary projection); every
measured call goes through the public API. PostgreSQL uses the admin DSN ``YOUYOU_BENCH_PG_DSN``
(default the local test server) and creates and drops its own database.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from storage_scale import bulk_insert, database, vacuum_postgresql

from youyou import (
    Agent,
    AgentBuilder,
    AgentConfig,
    CompactionPolicy,
    MemoryMode,
    ModelInfo,
    ScriptedProvider,
    ScriptedResponse,
)
from youyou.adapters.storage.codec import head_slot
from youyou.adapters.storage.sql import SLOT_COLUMNS, SqlSessionStorage, event_row, session_row
from youyou.adapters.storage.tables import ledger_events, sessions
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.content import TextBlock
from youyou.domain.context import CompactionMode, CompactionRecord
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    META_SESSION_PROFILE,
    AssistantMessage,
    LedgerEvent,
    Metadata,
    SessionEventPayload,
    UserMessage,
)
from youyou.domain.model import ChatRequest, ProviderCapability, Usage
from youyou.domain.session import SessionHead, SessionSummary, next_summary
from youyou.ports.session_storage import SessionStorage

MODEL = ModelInfo(
    model_id="bench-model",
    display_name="bench",
    context_window=10_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
# Compaction only by size, and the window is large: nothing compacts behind the bench's back.
CONFIG = AgentConfig(
    default_model=MODEL.model_id, compaction=CompactionPolicy(mode=MemoryMode.CONTEXT_PERCENT)
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANSWER = " ".join(f"word{i}" for i in range(50))
COMPACTED_TAIL = 50


def answer(_: ChatRequest) -> ScriptedResponse:
    return ScriptedResponse.text(
        ANSWER, chunks=10, usage=Usage(input_tokens=20, output_tokens=50, total_tokens=70)
    )


class TimedStorage:
    """Passes through to the real storage and adds up the time spent in ``append_event``."""

    def __init__(self, inner: SqlSessionStorage) -> None:
        self.inner = inner
        self.append_s = 0.0

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        start = time.perf_counter()
        try:
            await self.inner.append_event(session_id, event, summary)
        finally:
            self.append_s += time.perf_counter() - start

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def build_agent(storage: SessionStorage) -> Agent:
    return await (
        AgentBuilder(CONFIG)
        .register_model_provider(ScriptedProvider(models=(MODEL,), fallback=answer))
        .register_session_storage(storage)
        .with_token_counter(lambda _: ApproximateTokenCounter())
        .build()
    )


# -- building sessions -----------------------------------------------------------------------


def payload_at(seq: int, size: int, compacted: bool) -> SessionEventPayload:
    if seq == 1:
        return Metadata(
            key=META_SESSION_PROFILE,
            value={"model_id": MODEL.model_id, "memory_namespace": "default"},
        )
    if compacted and seq == size - COMPACTED_TAIL:
        record = CompactionRecord(
            mode=CompactionMode.SUMMARY,
            replaces_through_seq=seq - 1,
            summary_body="The user and the assistant talked at length.",
        )
        return Metadata(key=META_CONTEXT_COMPACTION, value=record.model_dump(mode="json"))
    if seq % 2 == 0:
        return UserMessage(content=(TextBlock(text=f"question {seq}: how does this work?"),))
    return AssistantMessage(content=(TextBlock(text=f"answer {seq}: {ANSWER}"),))


async def build_session(storage: SqlSessionStorage, size: int, *, compacted: bool) -> str:
    """Bulk-insert a session of ``size`` events exactly as ``append_event`` would leave it."""
    session_id = str(uuid.uuid4())
    summary: SessionSummary | None = None
    rows: list[dict[str, Any]] = []
    slots: dict[str, int] = {}
    for seq in range(1, size + 1):
        event = LedgerEvent(
            seq=seq,
            timestamp=T0 + timedelta(milliseconds=seq),
            payload=payload_at(seq, size, compacted),
        )
        summary = next_summary(summary, session_id, event)
        slot = head_slot(event)
        if slot is not None:
            slots[SLOT_COLUMNS[slot].name] = seq
        rows.append(event_row(session_id, event))
    assert summary is not None
    await bulk_insert(
        storage, sessions, [{"id": session_id, **session_row(summary, size), **slots}]
    )
    await bulk_insert(storage, ledger_events, rows)
    await vacuum_postgresql(storage)
    head: SessionHead = await storage.load_head(session_id)  # the fast path must match the port
    assert head.last_seq == size and (head.latest_compaction is not None) == compacted
    return session_id


# -- measurements ----------------------------------------------------------------------------


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def timed(call: Callable[[], Awaitable[object]], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def resume_and_close(agent: Agent, session_id: str) -> None:
    session = await agent.resume_session(session_id)
    await session.close()


async def bench_resume(storage: SqlSessionStorage, sizes: Sequence[int]) -> None:
    agent = await build_agent(storage)
    print(f"  {'resume_session':<28}{'p50 ms':>9}{'min ms':>9}{'peak alloc MB':>15}{'RSS MB':>9}")
    for size in sizes:
        for compacted in (False, True):
            start = time.perf_counter()
            session_id = await build_session(storage, size, compacted=compacted)
            setup = time.perf_counter() - start
            await resume_and_close(agent, session_id)  # warm statement caches
            runs = 3 if size >= 100_000 and not compacted else 9
            times = await timed(partial(resume_and_close, agent, session_id), runs)
            tracemalloc.start()
            await resume_and_close(agent, session_id)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            label = f"{size:>7} events{' compacted' if compacted else ''}"
            print(
                f"  {label:<28}{statistics.median(times):9.2f}{min(times):9.2f}{peak:15.2f}"
                f"{rss_mb():9.0f}   (setup {setup:.1f} s)"
            )


async def turn_times(
    agent: Agent, session: Any, storage: TimedStorage, turns: int
) -> tuple[list[float], list[float]]:
    walls, appends = [], []
    for n in range(turns):
        storage.append_s = 0.0
        start = time.perf_counter()
        outcome = await (await session.send_message(f"message {n}")).join()
        walls.append((time.perf_counter() - start) * 1000)
        appends.append(storage.append_s * 1000)
        assert outcome.error is None, outcome.error
    return walls, appends


def report(label: str, walls: list[float], appends: list[float]) -> None:
    kernel = [w - a for w, a in zip(walls, appends, strict=True)]
    print(
        f"  {label:<44} wall {statistics.median(walls):6.2f} ms   append_event "
        f"{statistics.median(appends):6.2f} ms   kernel {statistics.median(kernel):6.2f} ms"
        f"   (median of {len(walls)})"
    )


async def bench_first_turn(storage: SqlSessionStorage, messages: int, runs: int) -> None:
    session_id = await build_session(storage, messages + 1, compacted=False)
    timed_storage = TimedStorage(storage)
    agent = await build_agent(timed_storage)
    walls, appends, resumes = [], [], []
    for _ in range(runs + 1):
        start = time.perf_counter()
        session = await agent.resume_session(session_id)
        resumes.append((time.perf_counter() - start) * 1000)
        wall, append = await turn_times(agent, session, timed_storage, 1)
        walls += wall
        appends += append
        await session.close()
    print(
        f"  resume of that session (it rebuilds context and provider messages) "
        f"{statistics.median(resumes[1:]):6.2f} ms"
    )
    report(f"first turn after resuming {messages} messages", walls[1:], appends[1:])


async def bench_durable_turns(storage: SqlSessionStorage, turns: int) -> None:
    timed_storage = TimedStorage(storage)
    agent = await build_agent(timed_storage)
    session = await agent.new_session()
    await turn_times(agent, session, timed_storage, 10)  # warm up
    walls, appends = await turn_times(agent, session, timed_storage, turns)
    report(f"durable turn ({turns} turns, 2 appends each)", walls, appends)
    await session.close()


async def bench_append(storage: SqlSessionStorage, count: int) -> None:
    session_id = str(uuid.uuid4())
    summary: SessionSummary | None = None
    start = time.perf_counter()
    for seq in range(1, count + 1):
        event = LedgerEvent(
            seq=seq, timestamp=datetime.now(UTC), payload=payload_at(seq, count, compacted=False)
        )
        summary = next_summary(summary, session_id, event)
        await storage.append_event(session_id, event, summary)
    elapsed = time.perf_counter() - start
    print(
        f"  append_event, one at a time ({count})          {count / elapsed:8.0f} events/s"
        f"   ({elapsed / count * 1000:.2f} ms each)"
    )


async def run(backend: str, sizes: Sequence[int], profile: bool) -> None:
    print(f"\n== {backend} ==")
    async with database(backend) as url:
        storage = await SqlSessionStorage.open(url)
        try:
            if profile:
                await profile_hot_paths(storage)
                return
            await bench_resume(storage, sizes)
            await bench_first_turn(storage, 2_000, 9)
            await bench_durable_turns(storage, 200)
            await bench_append(storage, 2_000)
        finally:
            await storage.close()


async def profile_hot_paths(storage: SqlSessionStorage) -> None:
    from pyinstrument import Profiler

    agent = await build_agent(storage)
    big = await build_session(storage, 100_000, compacted=True)
    chat = await build_session(storage, 2_001, compacted=False)
    await resume_and_close(agent, big)
    with Profiler(async_mode="enabled") as profiler:
        for _ in range(20):
            await resume_and_close(agent, big)
        for _ in range(20):
            session = await agent.resume_session(chat)
            await (await session.send_message("hello")).join()
            await session.close()
    print(profiler.output_text(unicode=False, color=False, show_all=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile resume (100k compacted) and the first turn with pyinstrument",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for backend in args.backend or ["sqlite", "postgresql"]:
        asyncio.run(run(backend, sizes, args.profile))


if __name__ == "__main__":
    main()
