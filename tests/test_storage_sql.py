"""SqlSessionStorage on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from storage_contract import (
    T0,
    SessionStorageContract,
    append_all,
    assert_error,
    every_payload,
    profile,
    user,
)
from youyou.adapters.storage import SqlSessionLeases
from youyou.adapters.storage.engine import create_engine
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import ledger_events, sessions
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import LEDGER_SCHEMA_VERSION, LedgerEvent, SystemMessage
from youyou.domain.session import SessionListQuery, next_summary
from youyou.ports.session_storage import LeaseReleasingStorage


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


@pytest.fixture
async def engine(db_url: str, storage: SqlSessionStorage) -> AsyncIterator[AsyncEngine]:
    """A second, independent engine on the same database, to look at the raw rows."""
    raw = create_engine(db_url)
    yield raw
    await raw.dispose()


# A trigger that fails the event insert, i.e. *after* the session row was upserted in the
# same transaction: the whole append must roll back.
_FAILING_TRIGGER = {
    "sqlite": [
        """CREATE TRIGGER fail_append BEFORE INSERT ON ledger_events
           WHEN NEW.kind = 'system_message' BEGIN SELECT RAISE(ABORT, 'injected'); END""",
    ],
    "postgresql": [
        """CREATE FUNCTION fail_append() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION 'injected'; END $$""",
        """CREATE TRIGGER fail_append BEFORE INSERT ON ledger_events FOR EACH ROW
           WHEN (NEW.kind = 'system_message') EXECUTE FUNCTION fail_append()""",
    ],
}


class TestSqlSessionStorage(SessionStorageContract):
    async def test_rows_hold_the_exact_versioned_json(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        events, _ = await append_all(storage, "s-1", every_payload())
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    select(
                        ledger_events.c.event_json,
                        ledger_events.c.schema_version,
                        ledger_events.c.kind,
                        ledger_events.c.metadata_key,
                        ledger_events.c.timestamp,
                    ).order_by(ledger_events.c.seq)
                )
            ).all()
        assert [r.event_json for r in rows] == [e.model_dump_json() for e in events]
        assert {r.schema_version for r in rows} == {LEDGER_SCHEMA_VERSION}
        assert [r.kind for r in rows] == [e.payload.kind for e in events]
        assert rows[0].metadata_key == "session_profile" and rows[1].metadata_key is None
        assert [r.timestamp for r in rows] == [e.timestamp for e in events]

    async def test_stored_times_compare_equal_to_bound_ones(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        """An append stores times in the text SQLAlchemy binds (SQLite compares them as text),
        so catalog paging and time filters find them."""
        events, summary = await append_all(storage, "s-1", [profile(), user("hi")])
        async with engine.connect() as conn:
            found = await conn.scalar(
                select(func.count()).where(ledger_events.c.timestamp == events[1].timestamp)
            )
            updated = await conn.scalar(
                select(func.count()).where(sessions.c.updated_at == summary.updated_at)
            )
        assert (found, updated) == (1, 1)

    async def test_unique_seq_is_a_database_constraint(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        await append_all(storage, "s-1", [profile()])
        row = {
            "session_id": "s-1",
            "seq": 1,
            "timestamp": T0,
            "kind": "metadata",
            "metadata_key": None,
            "schema_version": 1,
            "event_json": "{}",
        }
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(insert(ledger_events).values(row))

    async def test_a_failure_after_the_summary_write_rolls_back_the_append(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        async with engine.begin() as conn:
            for statement in _FAILING_TRIGGER[engine.dialect.name]:
                await conn.execute(text(statement))
        events, summary = await append_all(storage, "s-1", [profile(), user("hi")])
        failing = LedgerEvent(
            seq=3, timestamp=T0 + timedelta(hours=1), payload=SystemMessage(content="x")
        )
        with pytest.raises(AgentError) as exc:
            await storage.append_event("s-1", failing, next_summary(summary, "s-1", failing))
        assert_error(exc, ErrorCode.STORAGE_ERROR)
        assert not exc.value.retryable
        assert list(await storage.load_events("s-1")) == events
        head = await storage.load_head("s-1")
        assert (head.summary, head.last_seq) == (summary, 2)
        # a brand-new session whose first event fails leaves no session row behind
        first = failing.model_copy(update={"seq": 1})
        with pytest.raises(AgentError):
            await storage.append_event("s-2", first, next_summary(None, "s-2", first))
        assert [s.session_id for s in (await storage.list_sessions(SessionListQuery())).items] == [
            "s-1"
        ]

    async def test_delete_cascades_to_the_event_rows(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        await append_all(storage, "s-1", every_payload())
        await append_all(storage, "s-2", [profile()])
        await storage.delete_session("s-1")
        async with engine.connect() as conn:
            counts = (
                await conn.execute(
                    select(ledger_events.c.session_id, func.count()).group_by(
                        ledger_events.c.session_id
                    )
                )
            ).all()
        assert [tuple(r) for r in counts] == [("s-2", 1)]

    async def test_reopening_keeps_data_and_schema(self, db_url: str) -> None:
        first = await SqlSessionStorage.open(db_url)
        events, _ = await append_all(first, "s-1", every_payload())
        await first.close()
        again = await SqlSessionStorage.open(db_url)
        try:
            assert list(await again.load_events("s-1")) == events
        finally:
            await again.close()

    async def test_concurrent_appends_from_two_engines(self, db_url: str) -> None:
        one, two = await SqlSessionStorage.open(db_url), await SqlSessionStorage.open(db_url)
        try:
            writers = [
                append_all(store, f"s-{n}", [profile(), *(user(f"m{i}") for i in range(15))])
                for n, store in enumerate([one, two] * 4)
            ]
            results = await asyncio.gather(*writers)
            for n, (events, summary) in enumerate(results):
                store = two if n % 2 else one
                assert list(await store.load_events(f"s-{n}")) == events
                assert (await store.load_head(f"s-{n}")).summary == summary
            page = await one.list_sessions(SessionListQuery(limit=100))
            assert sorted(s.session_id for s in page.items) == [f"s-{n}" for n in range(8)]
        finally:
            await one.close()
            await two.close()

    async def test_racing_appends_of_one_seq_admit_exactly_one(self, db_url: str) -> None:
        one, two = await SqlSessionStorage.open(db_url), await SqlSessionStorage.open(db_url)
        try:
            _, summary = await append_all(one, "s-1", [profile()])
            contenders = [
                LedgerEvent(seq=2, timestamp=T0 + timedelta(minutes=1), payload=user(who))
                for who in ("one", "two")
            ]
            outcomes = await asyncio.gather(
                *(
                    store.append_event("s-1", event, next_summary(summary, "s-1", event))
                    for store, event in zip((one, two), contenders, strict=True)
                ),
                return_exceptions=True,
            )
            failures = [o for o in outcomes if isinstance(o, AgentError)]
            assert len(failures) == 1 and failures[0].code is ErrorCode.STORAGE_ERROR
            stored = await two.load_events("s-1", after_seq=1)
            assert list(stored) == [contenders[outcomes.index(None)]]
        finally:
            await one.close()
            await two.close()

    async def test_unreachable_database_is_a_retryable_storage_error(self) -> None:
        with pytest.raises(AgentError) as exc:
            await SqlSessionStorage.open("postgresql+asyncpg://postgres@127.0.0.1:1/none")
        assert_error(exc, ErrorCode.STORAGE_ERROR)
        assert exc.value.retryable

    async def test_a_releasing_append_gives_back_only_the_holders_lease_with_the_event(
        self, storage: SqlSessionStorage
    ) -> None:
        leases = storage.leases()
        events, summary = await append_all(storage, "s-1", [profile()])
        await append_all(storage, "s-2", [profile()])
        for session_id in ("s-1", "s-2"):
            assert await leases.acquire(session_id, "writer", 30) is None
        answer = LedgerEvent(seq=2, timestamp=T0 + timedelta(minutes=1), payload=user("done"))
        after = next_summary(summary, "s-1", answer)
        await storage.append_event_releasing("s-1", answer, after, holder="writer")
        assert list(await storage.load_events("s-1")) == [*events, answer]
        assert (await storage.load_head("s-1")).summary == after
        assert await leases.holder("s-1") is None
        assert await leases.holder("s-2") == "writer"  # another session's lease stays
        # another holder's lease is left alone; so is a session nobody holds
        assert await leases.acquire("s-1", "someone else", 30) is None
        third = LedgerEvent(seq=3, timestamp=T0 + timedelta(minutes=2), payload=user("more"))
        await storage.append_event_releasing(
            "s-1", third, next_summary(after, "s-1", third), holder="writer"
        )
        assert await leases.holder("s-1") == "someone else"
        assert (await storage.load_head("s-1")).last_seq == 3
        first = LedgerEvent(seq=1, timestamp=T0, payload=profile())
        await storage.append_event_releasing(
            "s-3", first, next_summary(None, "s-3", first), holder="writer"
        )
        assert list(await storage.load_events("s-3")) == [first]

    async def test_a_refused_releasing_append_releases_nothing(
        self, storage: SqlSessionStorage, engine: AsyncEngine
    ) -> None:
        leases = storage.leases()
        events, summary = await append_all(storage, "s-1", [profile(), user("hi")])
        assert await leases.acquire("s-1", "writer", 30) is None
        clash = LedgerEvent(seq=2, timestamp=T0 + timedelta(hours=1), payload=user("dup"))
        with pytest.raises(AgentError) as conflict:
            await storage.append_event_releasing(
                "s-1", clash, next_summary(summary, "s-1", clash), holder="writer"
            )
        assert_error(conflict, ErrorCode.STORAGE_ERROR)
        assert await leases.holder("s-1") == "writer"
        # a failure after the event's insert rolls the whole transaction back too
        async with engine.begin() as conn:
            for statement in _FAILING_TRIGGER[engine.dialect.name]:
                await conn.execute(text(statement))
        failing = LedgerEvent(seq=3, timestamp=T0, payload=SystemMessage(content="x"))
        with pytest.raises(AgentError):
            await storage.append_event_releasing(
                "s-1", failing, next_summary(summary, "s-1", failing), holder="writer"
            )
        assert await leases.holder("s-1") == "writer"
        assert list(await storage.load_events("s-1")) == events

    async def test_it_releases_the_leases_of_its_own_engine_only(
        self, storage: SqlSessionStorage, db_url: str
    ) -> None:
        assert isinstance(storage, LeaseReleasingStorage)
        assert storage.keeps_leases(storage.leases())
        assert storage.keeps_leases(SqlSessionLeases(storage.engine))
        elsewhere = await SqlSessionStorage.open(db_url)
        try:
            assert not storage.keeps_leases(elsewhere.leases())
        finally:
            await elsewhere.close()
