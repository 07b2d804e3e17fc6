"""Session storage at scale: 100 000 sessions and a 100 000-event session, SQLite and PostgreSQL.

    .venv/bin/python bench/storage_scale.py [--sessions N] [--events N] [--backend NAME]

PostgreSQL is an admin DSN (``YOUYOU_BENCH_PG_DSN``, default the local test server); the bench
creates and drops its own database. Setup rows are bulk-inserted; everything measured goes
through ``SqlSessionStorage``'s public methods.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import text

from youyou.adapters.storage.catalog import SortKey, encode_cursor
from youyou.adapters.storage.sql import SqlSessionStorage, event_row, session_row
from youyou.adapters.storage.tables import ledger_events, sessions
from youyou.domain.content import TextBlock
from youyou.domain.ledger import META_SESSION_PROFILE, LedgerEvent, Metadata, UserMessage
from youyou.domain.session import (
    SearchMode,
    SessionListQuery,
    SessionSearchQuery,
    SessionSummary,
    next_summary,
)

PG_DSN = os.environ.get("YOUYOU_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = (
    *("checkout", "latency", "disk", "full", "cpu", "spike", "kafka", "lag", "oom", "killed"),
    *("pod", "crashloop", "dns", "timeout", "certificate", "expiry", "error", "budget", "burn"),
    *("redis", "eviction", "postgres", "replication", "5xx", "rollback"),
)
BATCH = 5_000


@asynccontextmanager
async def database(backend: str) -> AsyncIterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        return
    name = f"youyou_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_DSN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    try:
        yield (
            PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://") + f"/{name}"
        )
    finally:
        admin = await asyncpg.connect(PG_DSN)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def session_rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for _ in range(count):
        updated = T0 + timedelta(seconds=rng.randrange(count * 10))  # some ties
        title = " ".join(rng.choices(WORDS, k=5)).capitalize() + f" #{rng.randrange(10**6)}"
        summary = SessionSummary(
            session_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            title=title,
            created_at=updated - timedelta(hours=1),
            updated_at=updated,
            message_count=rng.randrange(200),
        )
        rows.append({"id": summary.session_id, **session_row(summary, 1), "profile_seq": 1})
    return rows


def event_rows(session_id: str, count: int) -> list[dict[str, Any]]:
    rows = []
    for seq in range(1, count + 1):
        payload: Any = (
            Metadata(key=META_SESSION_PROFILE, value={"model_id": "m", "memory_namespace": "d"})
            if seq == 1
            else UserMessage(content=(TextBlock(text=f"message {seq} " + "x" * 200),))
        )
        event = LedgerEvent(seq=seq, timestamp=T0 + timedelta(seconds=seq), payload=payload)
        rows.append(event_row(session_id, event))
    return rows


async def bulk_insert(storage: SqlSessionStorage, table: Any, rows: list[dict[str, Any]]) -> None:
    async with storage.engine.begin() as conn:  # setup only; measured calls use the port
        for start in range(0, len(rows), BATCH):
            await conn.execute(table.insert(), rows[start : start + BATCH])


async def analyze(storage: SqlSessionStorage) -> None:
    async with storage.engine.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def vacuum_postgresql(storage: SqlSessionStorage) -> None:
    """After a bulk insert into PostgreSQL, do now what autovacuum would do in the middle of
    the measurements (one 100k-event resume once took 85 ms instead of 5 because of it)."""
    if storage.engine.dialect.name != "postgresql":
        return
    async with storage.engine.connect() as conn:
        autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await autocommit.execute(text("VACUUM (ANALYZE)"))


async def latency(call: Callable[[], Awaitable[object]], runs: int) -> str:
    await call()  # warm up the pool and statement caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p99 = times[min(len(times) - 1, round(len(times) * 0.99))]
    return f"p50 {statistics.median(times):8.2f} ms   p99 {p99:8.2f} ms   ({runs} runs)"


async def bench_catalog(storage: SqlSessionStorage, count: int, runs: int) -> None:
    rng = random.Random(7)
    rows = session_rows(count, rng)
    start = time.perf_counter()
    await bulk_insert(storage, sessions, rows)
    await analyze(storage)
    print(f"  setup: {count} sessions bulk-inserted in {time.perf_counter() - start:.1f} s")
    ordered = sorted(rows, key=lambda r: (r["updated_at"], r["id"]), reverse=True)
    deep = ordered[int(count * 0.9)]
    cursor = encode_cursor(SortKey(deep["updated_at"], deep["id"]))
    prefixes = [r["id"][:4] for r in rng.sample(rows, 50)]
    probes: list[tuple[str, Callable[[], Awaitable[object]], int]] = [
        ("list first page (20)", lambda: storage.list_sessions(SessionListQuery(20)), runs),
        (
            "list deep page (cursor at 90%)",
            lambda: storage.list_sessions(SessionListQuery(20, cursor)),
            runs,
        ),
        (
            "find id prefix (4 hex chars)",
            lambda: storage.find_sessions(
                SessionSearchQuery(SearchMode.ID_PREFIX, rng.choice(prefixes)), 20
            ),
            runs,
        ),
        (
            "find title contains (common word)",
            lambda: storage.find_sessions(
                SessionSearchQuery(SearchMode.TITLE_CONTAINS, "Kafka"), 20
            ),
            max(runs // 4, 10),
        ),
        (
            "find title contains (rare, few hits)",
            lambda: storage.find_sessions(
                SessionSearchQuery(SearchMode.TITLE_CONTAINS, "#4242"), 20
            ),
            max(runs // 4, 10),
        ),
        (
            "find id prefix or title",
            lambda: storage.find_sessions(
                SessionSearchQuery(SearchMode.ID_PREFIX_OR_TITLE, "dead"), 20
            ),
            max(runs // 4, 10),
        ),
    ]
    for label, call, n in probes:
        print(f"  {label:<38} {await latency(call, n)}")


async def bench_append(storage: SqlSessionStorage, count: int) -> None:
    summary: SessionSummary | None = None
    events = [
        LedgerEvent(
            seq=seq,
            timestamp=T0 + timedelta(seconds=seq),
            payload=UserMessage(content=(TextBlock(text=f"turn {seq}"),)),
        )
        for seq in range(1, count + 1)
    ]
    start = time.perf_counter()
    for event in events:
        summary = next_summary(summary, "append-bench", event)
        await storage.append_event("append-bench", event, summary)
    elapsed = time.perf_counter() - start
    print(f"  append_event, one at a time ({count})   {count / elapsed:8.0f} events/s")


async def bench_long_session(storage: SqlSessionStorage, count: int, runs: int) -> None:
    sid = "long-session"
    summary = SessionSummary(
        session_id=sid,
        title="long",
        created_at=T0,
        updated_at=T0 + timedelta(seconds=count),
        message_count=count - 1,
    )
    await bulk_insert(
        storage, sessions, [{"id": sid, **session_row(summary, count), "profile_seq": 1}]
    )
    await bulk_insert(storage, ledger_events, event_rows(sid, count))
    await analyze(storage)
    tail = count - 50
    print(
        f"  {'load_head (' + str(count) + ' events)':<38} "
        f"{await latency(lambda: storage.load_head(sid), runs)}"
    )
    print(
        f"  {'load_events(after_seq=last-50)':<38} "
        f"{await latency(lambda: storage.load_events(sid, tail), runs)}"
    )
    print(
        f"  {'load_events(all ' + str(count) + ')':<38} "
        f"{await latency(lambda: storage.load_events(sid), 3)}"
    )


async def run(backend: str, session_count: int, event_count: int, runs: int) -> None:
    print(f"\n== {backend} ==")
    async with database(backend) as url:
        storage = await SqlSessionStorage.open(url)
        try:
            await bench_catalog(storage, session_count, runs)
            await bench_append(storage, 1_000)
            await bench_long_session(storage, event_count, runs)
        finally:
            await storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], action="append")
    args = parser.parse_args()
    for backend in args.backend or ["sqlite", "postgresql"]:
        asyncio.run(run(backend, args.sessions, args.events, args.runs))


if __name__ == "__main__":
    main()
