"""The MemoryStorage contract, run on the in-process, SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from youyou.adapters.memory import (
    InMemoryMemoryStorage,
    PostgresMemoryStorage,
    SqliteMemoryStorage,
    open_memory_storage,
)
from youyou.adapters.memory.text_index import POSTINGS_BUDGET
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.memory import Memory
from youyou.ports.memory_storage import MemoryStorage

T0 = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def mem(
    id: str, content: str, *, ns: str = "alice", at: int = 0, session: str | None = None
) -> Memory:
    when = T0 + timedelta(minutes=at)
    return Memory(
        id=id,
        namespace=ns,
        content=content,
        created_at=when,
        updated_at=when,
        source_session_id=session,
        source_seq_start=1 if session else None,
        source_seq_end=9 if session else None,
    )


@pytest.fixture(params=["in_memory", "sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest) -> str | None:
    """None for the in-process store, else the URL of a fresh database."""
    if request.param == "in_memory":
        return None
    url: str = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    return url


@pytest.fixture
async def storage(backend_url: str | None) -> AsyncIterator[MemoryStorage]:
    if backend_url is None:
        yield InMemoryMemoryStorage()
        return
    store = await open_memory_storage(backend_url)
    yield store
    await store.close()


@pytest.fixture
async def sql_storage(db_url: str) -> AsyncIterator[SqliteMemoryStorage | PostgresMemoryStorage]:
    store = await open_memory_storage(db_url)
    assert isinstance(store, SqliteMemoryStorage | PostgresMemoryStorage)
    yield store
    await store.close()


MIXED = [
    mem("coffee-zh", "用户喜欢喝咖啡，不加糖", at=1),
    mem("city-zh", "用户在上海工作，是后端工程师", at=2),
    mem("cat-zh", "我的猫叫小白", at=3),
    mem("coffee-en", "The user drinks green tea in the afternoon, never coffee after 3pm", at=4),
    mem("k8s-en", "User leads the Kubernetes migration of the billing service", at=5),
    mem("lang-en", "User writes Python and Rust; prefers Rust for services", at=6),
]


async def fill(store: MemoryStorage, items: list[Memory]) -> None:
    for item in items:
        await store.upsert(item)


async def ids(store: MemoryStorage, query: str, top_k: int = 5, ns: str = "alice") -> list[str]:
    return [m.id for m in await store.search(ns, query, top_k)]


async def test_chinese_queries_find_chinese_memories(storage: MemoryStorage) -> None:
    await fill(storage, MIXED)
    assert (await ids(storage, "咖啡"))[0] == "coffee-zh"
    assert (await ids(storage, "我在上海做什么工作？"))[0] == "city-zh"
    assert await ids(storage, "猫") == ["cat-zh"]


async def test_english_queries_find_english_memories(storage: MemoryStorage) -> None:
    await fill(storage, MIXED)
    assert (await ids(storage, "how is the kubernetes migration going?"))[0] == "k8s-en"
    assert (await ids(storage, "Rust services"))[0] == "lang-en"
    assert await ids(storage, "quantum chromodynamics") == []


async def test_mixed_language_query(storage: MemoryStorage) -> None:
    await fill(storage, MIXED)
    found = await ids(storage, "coffee 还是 咖啡?")
    assert set(found[:2]) == {"coffee-zh", "coffee-en"}


async def test_more_matching_terms_rank_higher_and_top_k_caps(storage: MemoryStorage) -> None:
    await fill(
        storage,
        [
            mem("one", "deploys on friday", at=1),
            mem("two", "deploys the billing service on friday", at=2),
            mem("three", "billing service deploys on friday with canary rollout", at=3),
            mem("none", "likes hiking", at=4),
        ],
    )
    assert await ids(storage, "billing canary rollout", top_k=2) == ["three", "two"]
    assert len(await ids(storage, "friday", top_k=2)) == 2


async def test_query_syntax_is_treated_as_text(storage: MemoryStorage) -> None:
    await fill(storage, MIXED)
    for query in ['"python" OR NOT rust*', "'; DROP TABLE memories; --", "a:b & !c | (d", "\\'"]:
        await storage.search("alice", query, 5)
    assert (await ids(storage, 'rust" OR "x'))[0] == "lang-en"
    assert await ids(storage, "   ") == []
    assert await ids(storage, "the and of") == []
    assert await ids(storage, "咖啡", top_k=0) == []


async def test_namespaces_are_isolated(storage: MemoryStorage) -> None:
    await fill(storage, MIXED)
    await storage.upsert(mem("coffee-zh", "鲍勃只喝咖啡", ns="bob", at=9))
    assert await ids(storage, "咖啡", ns="bob") == ["coffee-zh"]
    assert [m.content for m in await storage.list_all("bob")] == ["鲍勃只喝咖啡"]
    assert (await storage.search("alice", "咖啡", 5))[0].content == "用户喜欢喝咖啡，不加糖"
    await storage.delete("bob", "coffee-zh")
    assert await storage.list_all("bob") == []
    assert len(await storage.list_all("alice")) == len(MIXED)
    assert await ids(storage, "咖啡", ns="nobody") == []


async def test_list_recent_is_updated_at_desc_and_limited(storage: MemoryStorage) -> None:
    await fill(storage, [mem("b", "two", at=2), mem("c", "three", at=3), mem("a", "one", at=1)])
    assert [m.id for m in await storage.list_recent("alice", 2)] == ["c", "b"]
    await storage.upsert(mem("a", "one", at=10))
    assert [m.id for m in await storage.list_recent("alice", 10)] == ["a", "c", "b"]
    assert await storage.list_recent("alice", 0) == []


async def test_upsert_same_content_only_moves_updated_at(storage: MemoryStorage) -> None:
    original = mem("m", "用户喜欢喝咖啡", session="s1")
    await storage.upsert(original)
    again = original.model_copy(
        update={
            "created_at": T0 + timedelta(days=5),
            "updated_at": T0 + timedelta(days=5),
            "source_session_id": "s2",
        }
    )
    await storage.upsert(again)
    [stored] = await storage.list_all("alice")
    assert stored.created_at == T0
    assert stored.updated_at == T0 + timedelta(days=5)
    assert stored.content == "用户喜欢喝咖啡"
    assert stored.source_session_id == "s1"


async def test_upsert_new_content_replaces_content_and_provenance(storage: MemoryStorage) -> None:
    await storage.upsert(mem("m", "User prefers vim", session="s1"))
    changed = Memory(
        id="m",
        namespace="alice",
        content="User switched to emacs",
        created_at=T0 + timedelta(days=3),
        updated_at=T0 + timedelta(days=3),
        source_session_id="s2",
        source_seq_start=40,
        source_seq_end=52,
    )
    await storage.upsert(changed)
    [stored] = await storage.list_all("alice")
    assert stored == changed.model_copy(update={"created_at": T0})
    assert await ids(storage, "vim") == []
    assert await ids(storage, "emacs") == ["m"]


async def test_round_trip_keeps_every_field(storage: MemoryStorage) -> None:
    item = mem("p", "Lives in Lyon 🇫🇷, works remotely", session="sess-7")
    await storage.upsert(item)
    [stored] = await storage.list_all("alice")
    assert stored == item
    assert stored.updated_at.tzinfo is not None


async def test_delete_removes_from_search_and_unknown_id_is_a_noop(
    storage: MemoryStorage,
) -> None:
    await fill(storage, MIXED)
    await storage.delete("alice", "k8s-en")
    await storage.delete("alice", "does-not-exist")
    assert await ids(storage, "kubernetes") == []
    assert "k8s-en" not in {m.id for m in await storage.list_all("alice")}


async def test_sql_stores_stem_english(
    sql_storage: SqliteMemoryStorage | PostgresMemoryStorage,
) -> None:
    await fill(sql_storage, MIXED)
    assert (await ids(sql_storage, "what language does the user prefer?"))[0] == "lang-en"
    assert (await ids(sql_storage, "migrating kubernetes"))[0] == "k8s-en"


async def test_sql_schema_is_idempotent_and_survives_reopen(db_url: str) -> None:
    first = await open_memory_storage(db_url)
    await first.upsert(mem("x", "用户在上海工作"))
    await first.close()
    second = await open_memory_storage(db_url)
    await second.ensure_schema()
    assert await ids(second, "上海") == ["x"]
    await second.close()


async def test_postgres_trigram_leg_finds_typos(pg_url: str) -> None:
    store = await open_memory_storage(pg_url)
    assert isinstance(store, PostgresMemoryStorage)
    assert store.trigram_enabled
    await fill(store, MIXED)
    assert (await ids(store, "kubernets"))[0] == "k8s-en"
    await store.close()


async def test_database_failure_is_storage_error(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not a SQLite database" * 100)
    store = SqliteMemoryStorage.from_url(f"sqlite+aiosqlite:///{corrupt}")
    with pytest.raises(AgentError) as err:
        await store.list_all("alice")
    assert err.value.code is ErrorCode.STORAGE_ERROR
    await store.close()


async def test_plain_database_url_gets_the_async_driver(tmp_path: Path) -> None:
    """The URL the session storage accepts works for the memory store too."""
    store = await open_memory_storage(f"sqlite:///{tmp_path / 'plain.db'}")
    await store.upsert(mem("x", "用户在上海工作"))
    assert await ids(store, "上海") == ["x"]
    await store.close()


async def test_unknown_backend_is_invalid_config() -> None:
    with pytest.raises(AgentError) as err:
        await open_memory_storage("mysql+aiomysql://u@h/db")
    assert err.value.code is ErrorCode.INVALID_CONFIG


async def test_rare_terms_are_found_next_to_very_common_ones(
    sql_storage: SqliteMemoryStorage | PostgresMemoryStorage,
) -> None:
    """Above the postings budget the common term is left out; the rare one still matches."""
    common = [mem(f"c{i}", f"coffee note number {i}", at=i) for i in range(POSTINGS_BUDGET + 50)]
    rare = mem("rare", "coffee with the drumizen team", at=-1)
    await sql_storage.upsert_many([*common, rare])
    assert (await ids(sql_storage, "coffee drumizen", top_k=3))[0] == "rare"
    assert len(await ids(sql_storage, "coffee", top_k=30)) == 30


async def test_upsert_many_last_item_wins(
    sql_storage: SqliteMemoryStorage | PostgresMemoryStorage,
) -> None:
    await sql_storage.upsert_many([mem("x", "first text"), mem("x", "second text", at=5)])
    [stored] = await sql_storage.list_all("alice")
    assert (stored.content, stored.updated_at) == ("second text", T0 + timedelta(minutes=5))


async def test_postgres_term_statistics_follow_every_write(pg_url: str) -> None:
    store = await open_memory_storage(pg_url)
    assert isinstance(store, PostgresMemoryStorage)

    async def docs() -> dict[str, int]:
        async with store.engine.connect() as conn:
            rows = await conn.exec_driver_sql("SELECT term, docs FROM memories_terms")
            return {r.term: r.docs for r in rows if r.docs}

    await store.upsert_many([mem("a", "coffee tea"), mem("b", "coffee 咖啡")])
    assert await docs() == {"coffe": 2, "tea": 1, "咖": 1, "啡": 1, "咖啡": 1}
    await store.upsert(mem("a", "coffee tea", at=9))  # same content: statistics unchanged
    await store.upsert(mem("b", "milk", at=9))
    assert await docs() == {"coffe": 1, "tea": 1, "milk": 1}
    await store.delete("alice", "a")
    assert await docs() == {"milk": 1}
    await store.close()


async def test_processes_starting_together_create_the_schema_once(db_url: str) -> None:
    """``--workers N`` opens the memory storage in N processes at once; on PostgreSQL two
    concurrent ``CREATE TABLE IF NOT EXISTS`` fail on pg_type's unique index unless serialized."""
    stores = await asyncio.gather(*(open_memory_storage(db_url) for _ in range(4)))
    try:
        await stores[0].upsert(mem("m-1", "shared schema", ns="ns"))
        assert [m.id for m in await stores[3].list_recent("ns", 10)] == ["m-1"]
    finally:
        await asyncio.gather(*(store.close() for store in stores))
