"""WorkbenchStore on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect

from workbench_kit import T0, chat_record
from youyou.adapters.storage.engine import alembic_config, create_engine, upgrade_database
from youyou.adapters.storage.tables import VERSION_TABLE as KERNEL_VERSION_TABLE
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.store import (
    ChatSessionRecord,
    OwnerAssets,
    SessionProjection,
    SkillNameTaken,
    SkillRecord,
    UsernameTaken,
    UserRecord,
    WorkbenchStore,
    migrate_workbench,
)
from youyou.workbench.store.repository import MIGRATIONS
from youyou.workbench.store.tables import MESSAGE_TRGM_INDEX, VERSION_TABLE, metadata


@pytest.fixture
async def alice(store: WorkbenchStore) -> UserRecord:
    return await store.create_user("Alice", "hash-a")


@pytest.fixture
async def bob(store: WorkbenchStore) -> UserRecord:
    return await store.create_user("bob", "hash-b")


# --- schema -------------------------------------------------------------------------------


def _workbench_schema(conn: Connection) -> dict[str, Any]:
    """Revision and the diff against tables.py, ignoring the kernel's tables beside ours."""

    def ours(name: str | None, type_: str, _parent: Any) -> bool:
        return type_ != "table" or name in metadata.tables

    context = MigrationContext.configure(
        conn, opts={"version_table": VERSION_TABLE, "include_name": ours}
    )
    kernel = MigrationContext.configure(conn, opts={"version_table": KERNEL_VERSION_TABLE})
    return {
        "revision": context.get_current_revision(),
        "kernel_revision": kernel.get_current_revision(),
        "diff": compare_metadata(context, metadata),
        "tables": set(inspect(conn).get_table_names()),
    }


def _optional_trigram_index(diff: Any) -> bool:
    """The trigram index on message text, made only where pg_trgm can be installed."""
    return bool(diff[0] == "remove_index" and diff[1].name == MESSAGE_TRGM_INDEX)


async def _schema_of(url: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_workbench_schema)
    finally:
        await engine.dispose()


async def test_migrations_build_the_declared_schema_beside_the_kernels(db_url: str) -> None:
    await upgrade_database(db_url)
    stores = await asyncio.gather(*(WorkbenchStore.open(db_url) for _ in range(3)))
    for opened in stores:
        await opened.close()
    await (await WorkbenchStore.open(db_url)).close()  # idempotent
    state = await _schema_of(db_url)
    assert state["revision"] == "wb0006"
    assert state["kernel_revision"] is not None  # the kernel's chain is untouched
    assert [d for d in state["diff"] if not _optional_trigram_index(d)] == []
    assert bool(state["diff"]) == db_url.startswith("postgresql")  # where pg_trgm installs
    assert set(metadata.tables) | {VERSION_TABLE, "sessions"} <= state["tables"]


async def test_downgrade_removes_only_the_workbench_tables(db_url: str) -> None:
    await upgrade_database(db_url)
    engine = create_engine(db_url)

    async def tables() -> set[str]:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda c: set(inspect(c).get_table_names()))

    try:
        kernel_tables = await tables()
        await migrate_workbench(engine)
        assert await tables() == kernel_tables | set(metadata.tables) | {VERSION_TABLE}
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c, MIGRATIONS), "base"))
        assert await tables() == kernel_tables | {VERSION_TABLE}
    finally:
        await engine.dispose()
    assert KERNEL_VERSION_TABLE in kernel_tables


async def test_ping_answers_and_a_dead_database_is_a_retryable_storage_error(
    store: WorkbenchStore,
) -> None:
    await store.ping()
    dead = WorkbenchStore(create_engine("postgresql://nobody@127.0.0.1:1/none"))
    try:
        with pytest.raises(AgentError) as exc:
            await dead.ping()
    finally:
        await dead.close()
    assert exc.value.code is ErrorCode.STORAGE_ERROR
    assert exc.value.retryable


# --- users and tokens ---------------------------------------------------------------------


async def test_usernames_keep_their_case_but_are_unique_case_insensitively(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    assert alice.username == "Alice"
    assert await store.user_by_name("aLiCe") == alice
    assert await store.user_by_name("nobody") is None
    with pytest.raises(UsernameTaken):
        await store.create_user("ALICE", "other")
    assert await store.user_by_name("alice") == alice


async def test_concurrent_sign_ups_of_one_name_create_one_user(store: WorkbenchStore) -> None:
    results = await asyncio.gather(
        *(store.create_user(f"{'Carol' if i % 2 else 'carol'}", f"h{i}") for i in range(6)),
        return_exceptions=True,
    )
    created = [r for r in results if isinstance(r, UserRecord)]
    assert len(created) == 1
    assert sum(isinstance(r, UsernameTaken) for r in results) == 5
    assert await store.user_by_name("CAROL") == created[0]


async def test_a_token_is_live_until_it_expires_or_is_revoked(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    await store.add_token(alice.id, "t-alice", T0 + timedelta(hours=1))
    await store.add_token(bob.id, "t-bob", T0 + timedelta(hours=1))
    assert await store.user_for_token("t-alice", T0) == alice
    assert await store.user_for_token("t-bob", T0) == bob
    assert await store.user_for_token("t-alice", T0 + timedelta(hours=1)) is None  # expired
    assert await store.user_for_token("unknown", T0) is None
    await store.revoke_token("t-alice")
    await store.revoke_token("t-alice")
    await store.revoke_token("unknown")
    assert await store.user_for_token("t-alice", T0) is None
    assert await store.user_for_token("t-bob", T0) == bob


# --- prompts ------------------------------------------------------------------------------


async def test_the_default_prompt_is_created_once_even_by_concurrent_requests(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    made = await asyncio.gather(
        *(store.ensure_default_prompt(alice.id, f"Default {i}", "Be kind.") for i in range(8))
    )
    assert len(set(made)) == 1
    first = made[0]
    assert first.is_default and first.owner_id == alice.id
    edited = await store.update_prompt(alice.id, first.id, "Mine", "Be brief.")
    assert edited is not None
    again = await store.ensure_default_prompt(alice.id, "Default", "Be kind.")
    assert again == edited  # an existing (edited) default is left alone
    bobs = await store.ensure_default_prompt(bob.id, "Default", "Be kind.")
    assert bobs.id != first.id
    assert [p.id for p in await store.list_prompts(alice.id)] == [first.id]


async def test_prompts_list_default_first_then_oldest_and_update(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    one = await store.create_prompt(alice.id, "One", "1")
    two = await store.create_prompt(alice.id, "Two", "2")
    default = await store.ensure_default_prompt(alice.id, "Default", "d")
    assert await store.list_prompts(alice.id) == [default, one, two]
    assert not one.is_default
    assert await store.prompt(alice.id, one.id) == one
    updated = await store.update_prompt(alice.id, one.id, "Uno", "eins")
    assert updated is not None
    assert (updated.label, updated.content, updated.created_at) == ("Uno", "eins", one.created_at)
    assert updated.updated_at >= one.updated_at
    assert await store.prompt(alice.id, one.id) == updated
    assert await store.update_prompt(alice.id, "missing", "x", "y") is None
    assert await store.delete_prompt(alice.id, two.id)
    assert not await store.delete_prompt(alice.id, two.id)
    assert await store.list_prompts(alice.id) == [default, updated]


async def test_another_users_prompt_is_invisible_and_untouchable(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    secret = await store.create_prompt(alice.id, "Secret", "s")
    assert await store.prompt(bob.id, secret.id) is None
    assert await store.list_prompts(bob.id) == []
    assert await store.update_prompt(bob.id, secret.id, "Hacked", "h") is None
    assert not await store.delete_prompt(bob.id, secret.id)
    assert await store.prompt(alice.id, secret.id) == secret


# --- skills -------------------------------------------------------------------------------


async def _skill(store: WorkbenchStore, owner: UserRecord, name: str) -> SkillRecord:
    return await store.create_skill(
        owner.id, f"{name}.md", name, f"about {name}", f"# {name}", 10 + len(name)
    )


async def test_skills_are_listed_oldest_first_and_fetched_in_the_asked_order(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    a, b, c = [await _skill(store, alice, name) for name in ("alpha", "beta", "gamma")]
    foreign = await _skill(store, bob, "alpha")  # names are unique per owner only
    assert (a.filename, a.description, a.content, a.size_bytes) == (
        "alpha.md",
        "about alpha",
        "# alpha",
        15,
    )
    assert await store.list_skills(alice.id) == [a, b, c]
    assert await store.skill(alice.id, b.id) == b
    assert await store.skill(alice.id, foreign.id) is None
    assert await store.skills_by_ids(alice.id, [c.id, "missing", foreign.id, a.id, c.id]) == [c, a]
    assert await store.skills_by_ids(alice.id, []) == []
    assert await store.list_skills(bob.id) == [foreign]


async def test_a_skill_name_is_taken_once_per_owner_even_under_concurrent_uploads(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    await _skill(store, alice, "alpha")
    with pytest.raises(SkillNameTaken):
        await _skill(store, alice, "alpha")
    results = await asyncio.gather(
        *(_skill(store, alice, "racer") for _ in range(6)), return_exceptions=True
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert sum(isinstance(r, SkillNameTaken) for r in results) == 5
    assert [s.name for s in await store.list_skills(alice.id)] == ["alpha", "racer"]


async def test_deleting_a_skill_removes_it_from_the_selection_only_for_its_owner(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    a, b, c = [await _skill(store, alice, name) for name in ("alpha", "beta", "gamma")]
    await store.save_selection(alice.id, None, [c.id, b.id, a.id])
    assert not await store.delete_skill(bob.id, b.id)
    assert await store.delete_skill(alice.id, b.id)
    assert not await store.delete_skill(alice.id, b.id)
    selection = await store.selection(alice.id)
    assert selection is not None and selection.skill_ids == (c.id, a.id)
    assert await store.list_skills(alice.id) == [a, c]


# --- selection ----------------------------------------------------------------------------


async def test_a_selection_is_upserted_deduplicated_and_keeps_only_owned_ids(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    assert await store.selection(alice.id) is None
    prompt = await store.create_prompt(alice.id, "P", "p")
    a, b = await _skill(store, alice, "alpha"), await _skill(store, alice, "beta")
    foreign_skill = await _skill(store, bob, "gamma")
    foreign_prompt = await store.create_prompt(bob.id, "Q", "q")

    saved = await store.save_selection(alice.id, prompt.id, [b.id, a.id, b.id, foreign_skill.id])
    assert (saved.owner_id, saved.system_prompt_id, saved.skill_ids) == (
        alice.id,
        prompt.id,
        (b.id, a.id),
    )
    assert await store.selection(alice.id) == saved
    assert await store.selection(bob.id) is None

    replaced = await store.save_selection(alice.id, foreign_prompt.id, [a.id, "missing"])
    assert (replaced.system_prompt_id, replaced.skill_ids) == (None, (a.id,))
    assert await store.selection(alice.id) == replaced
    cleared = await store.save_selection(alice.id, None, [])
    assert (cleared.system_prompt_id, cleared.skill_ids) == (None, ())


async def test_assets_are_one_owners_prompts_skills_selection_and_groups(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    assert await store.assets(alice.id) == OwnerAssets([], [], None, frozenset())
    prompt = await store.create_prompt(alice.id, "P", "p")
    skill = await _skill(store, alice, "alpha")
    await _skill(store, bob, "beta")
    selection = await store.save_selection(alice.id, prompt.id, [skill.id])
    oncall, dba = await store.create_group("On-Call"), await store.create_group("dba")
    await store.add_member(oncall.id, alice.id)
    await store.add_member(dba.id, bob.id)

    assets = await store.assets(alice.id)

    assert assets == OwnerAssets([prompt], [skill], selection, frozenset({"on-call"}))
    assert assets.groups == await store.group_names_of(alice.id)
    assert assets.prompts == await store.list_prompts(alice.id)
    assert assets.skills == await store.list_skills(alice.id)


async def test_deleting_the_selected_prompt_clears_it_from_the_selection(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    chosen = await store.create_prompt(alice.id, "Chosen", "c")
    other = await store.create_prompt(alice.id, "Other", "o")
    skill = await _skill(store, alice, "alpha")
    await store.save_selection(alice.id, chosen.id, [skill.id])
    assert await store.delete_prompt(alice.id, other.id)
    kept = await store.selection(alice.id)
    assert kept is not None and kept.system_prompt_id == chosen.id
    assert await store.delete_prompt(alice.id, chosen.id)
    cleared = await store.selection(alice.id)
    assert cleared is not None
    assert (cleared.system_prompt_id, cleared.skill_ids) == (None, (skill.id,))


# --- chat sessions ------------------------------------------------------------------------


def _chat(owner: UserRecord, title: str, updated_at: datetime, **fields: Any) -> ChatSessionRecord:
    return chat_record(owner.id, title=title, updated_at=updated_at, **fields)


async def _all_pages(
    store: WorkbenchStore, owner: UserRecord, limit: int, query: str | None = None
) -> list[list[ChatSessionRecord]]:
    pages: list[list[ChatSessionRecord]] = []
    cursor: str | None = None
    while True:
        page, cursor = await store.list_chat_sessions(
            owner.id, limit=limit, cursor=cursor, query=query
        )
        pages.append(page)
        if cursor is None:
            return pages


async def test_chat_sessions_are_created_read_updated_and_deleted(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    record = _chat(alice, UNTITLED_SESSION, T0)
    await store.create_chat_session(record)
    assert await store.chat_session(record.id) == record  # not owner-scoped: the API decides
    projection = SessionProjection(
        ledger_session_id="ledger-2",
        title="Renamed 会话",
        updated_at=T0 + timedelta(minutes=5),
        message_count=4,
        memory_mode="auto",
        summary="they talked",
        compacted_message_count=2,
        context_tokens=1234,
        context_window_tokens=8192,
        last_compacted_at=T0 + timedelta(minutes=4),
    )
    assert await store.update_chat_session(record.id, projection)
    updated = await store.chat_session(record.id)
    assert updated == replace(record, **asdict(projection))
    page, _ = await store.list_chat_sessions(alice.id, limit=5, cursor=None, query="renamed")
    assert page == [updated]  # the folded title follows the title
    assert not await store.update_chat_session("missing", projection)
    assert await store.rename_chat_session(record.id, "Chosen 标题")
    assert await store.update_chat_session(record.id, replace(projection, title="Derived"))
    renamed = await store.chat_session(record.id)
    assert renamed == replace(updated, title="Chosen 标题")  # the user's title is kept
    page, _ = await store.list_chat_sessions(alice.id, limit=5, cursor=None, query="chosen")
    assert page == [renamed]
    assert not await store.rename_chat_session("missing", "x")
    assert await store.list_chat_sessions(bob.id, limit=5, cursor=None, query=None) == ([], None)
    assert await store.delete_chat_session(record.id)
    assert not await store.delete_chat_session(record.id)
    assert await store.chat_session(record.id) is None


async def test_keyset_pages_are_newest_first_without_duplicates_or_gaps(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    # triples share an updated_at, so ties are broken by id
    records = [_chat(alice, f"chat {i}", T0 + timedelta(seconds=i // 3)) for i in range(25)]
    for record in records:
        await store.create_chat_session(record)
    await store.create_chat_session(_chat(bob, "not yours", T0 + timedelta(hours=1)))
    expected = sorted(records, key=lambda r: (r.updated_at, r.id), reverse=True)

    pages = await _all_pages(store, alice, limit=10)
    assert [len(page) for page in pages] == [10, 10, 5]
    assert [r for page in pages for r in page] == expected
    assert await _all_pages(store, alice, limit=10) == pages  # stable

    # a session that becomes newest while paging shows up on no later page
    first, cursor = await store.list_chat_sessions(alice.id, limit=10, cursor=None, query=None)
    await store.create_chat_session(_chat(alice, "late", T0 + timedelta(days=1)))
    rest, _ = await store.list_chat_sessions(alice.id, limit=30, cursor=cursor, query=None)
    assert first + rest == expected


async def test_a_page_exactly_full_has_no_next_cursor(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    for i in range(3):
        await store.create_chat_session(_chat(alice, f"c{i}", T0 + timedelta(seconds=i)))
    page, cursor = await store.list_chat_sessions(alice.id, limit=3, cursor=None, query=None)
    assert len(page) == 3 and cursor is None


async def test_a_malformed_cursor_or_limit_is_a_value_error(
    store: WorkbenchStore, alice: UserRecord
) -> None:
    for cursor in ["%%%", "bm90IGpzb24", "eyJ1IjogMX0"]:  # not base64, not JSON, no keys
        with pytest.raises(ValueError):
            await store.list_chat_sessions(alice.id, limit=10, cursor=cursor, query=None)
    with pytest.raises(ValueError):
        await store.list_chat_sessions(alice.id, limit=0, cursor=None, query=None)


async def test_search_matches_an_id_prefix_or_a_title_substring_of_the_owner_only(
    store: WorkbenchStore, alice: UserRecord, bob: UserRecord
) -> None:
    chinese = _chat(alice, "部署 Kubernetes 集群的笔记", T0, id="0a1b-chinese")
    upper = _chat(alice, "Disk FULL on db-01", T0 + timedelta(seconds=1), id="0a2c-disk")
    percent = _chat(alice, "CPU at 100% again", T0 + timedelta(seconds=2), id="7f00-cpu")
    mine = [chinese, upper, percent]
    for record in mine:
        await store.create_chat_session(record)
    await store.create_chat_session(_chat(bob, "Disk full too", T0, id="0a3d-bob"))

    async def found(query: str) -> list[str]:
        page, _ = await store.list_chat_sessions(alice.id, limit=10, cursor=None, query=query)
        return [r.id for r in page]

    assert await found("0a") == [upper.id, chinese.id]  # id prefix, newest first
    assert await found("0a1") == [chinese.id]
    assert await found("1b") == []  # an id matches by prefix only
    assert await found("集群") == [chinese.id]
    assert await found("kubernetes") == [chinese.id]
    assert await found("disk full") == [upper.id]
    assert await found("100%") == [percent.id]  # LIKE wildcards match literally
    assert await found("1_0") == []
    assert await found("") == [r.id for r in reversed(mine)]
    pages = await _all_pages(store, alice, limit=1, query="0a")
    assert [r.id for page in pages for r in page] == [upper.id, chinese.id]
