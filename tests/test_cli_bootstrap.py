"""The composition root: settings → agent on SQLite or PostgreSQL, with memory and skills."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from kernel_kit import block_text
from youyou.adapters.memory import PostgresMemoryStorage, SqliteMemoryStorage
from youyou.adapters.storage.lease_holder import local_holder
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.storage.tables import session_leases
from youyou.bootstrap import Writer, agent_config_from, build_agent_from_settings
from youyou.config import PRODUCT_MAX_ACTIVE_SESSIONS, parse_settings
from youyou.domain.config import MemoryMode, SummaryFailurePolicy
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import AssistantMessage
from youyou.domain.turn import OutcomeStatus


def _settings(url: str, **sections: Any) -> Any:
    return parse_settings({"database": {"url": url}, **sections})


async def test_builds_a_working_agent_whose_sessions_are_stored(db_url: str) -> None:
    app = await build_agent_from_settings(_settings(db_url))
    expected = SqliteMemoryStorage if db_url.startswith("sqlite") else PostgresMemoryStorage
    assert isinstance(app.memory_storage, expected)
    session = await app.agent.new_session()
    turn = await session.send_message("hello")
    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    session_id = session.session_id
    await app.close()

    storage = await SqlSessionStorage.open(db_url)
    try:
        events = await storage.load_events(session_id)
    finally:
        await storage.close()
    [answer] = [e.payload for e in events if isinstance(e.payload, AssistantMessage)]
    assert "offline demo model" in block_text(answer.content[0])


async def test_a_writer_holds_the_session_lease_for_database_lease_ttl_s(
    db_url: str, tmp_path: Path
) -> None:
    # An answer that takes a while: the lease is read while the turn still holds it.
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"text": "hi", "delay_ms": 500}]}))
    scripted = {"id": "scripted", "type": "scripted", "script_path": str(script)}
    settings = _settings(db_url, database={"url": db_url, "lease_ttl_s": 7}, providers=[scripted])
    app = await build_agent_from_settings(settings, writer=Writer("youyou chat"))
    try:
        session = await app.agent.new_session()
        turn = await session.send_message("hello")  # returns with the lease taken
        async with app.session_storage.engine.connect() as conn:
            [(holder, acquired, expires)] = (
                await conn.execute(
                    select(
                        session_leases.c.holder,
                        session_leases.c.acquired_at,
                        session_leases.c.expires_at,
                    )
                )
            ).all()
        assert holder == local_holder("youyou chat")
        assert (expires - acquired).total_seconds() == pytest.approx(7)
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        leases = app.session_storage.leases()
        assert await leases.holder(session.session_id) is None
        assert await leases.acquire(session.session_id, "youyou serve on elsewhere", 30) is None
        with pytest.raises(AgentError) as busy:
            await session.send_message("again")
        assert busy.value.code is ErrorCode.SESSION_BUSY
        assert "in use by another process (youyou serve on elsewhere)" in busy.value.message
    finally:
        await app.close()


async def test_without_a_writer_no_session_lease_is_taken(sqlite_url: str) -> None:
    app = await build_agent_from_settings(_settings(sqlite_url))
    try:
        session = await app.agent.new_session()
        leases = app.session_storage.leases()
        assert await leases.acquire(session.session_id, "youyou serve on elsewhere", 30) is None
        outcome = await (await session.send_message("hello")).join()
        assert outcome.status is OutcomeStatus.COMPLETED  # the workbench keeps its own leases
    finally:
        await app.close()


async def test_compaction_and_agent_settings_reach_the_kernel(sqlite_url: str) -> None:
    settings = _settings(
        sqlite_url,
        compaction={"mode": "context_70_percent", "hard_limit": 0.9},
        agent={"tool_timeout_ms": 5000},
    )
    config = agent_config_from(settings)
    assert config.compaction.mode is MemoryMode.CONTEXT_PERCENT
    assert config.compaction.hard_limit == 0.9
    assert config.compaction.on_summary_failure is SummaryFailurePolicy.FAIL
    assert config.tool_timeout_ms == 5000
    app = await build_agent_from_settings(settings)
    try:
        session = await app.agent.new_session()
        assert session.memory_mode is MemoryMode.CONTEXT_PERCENT
    finally:
        await app.close()


async def test_many_sessions_may_be_active_unless_the_file_says_otherwise(
    sqlite_url: str,
) -> None:
    assert (
        agent_config_from(_settings(sqlite_url)).max_active_sessions == PRODUCT_MAX_ACTIVE_SESSIONS
    )
    assert agent_config_from(_settings(sqlite_url), 3).max_active_sessions == 3
    limited = _settings(sqlite_url, agent={"max_active_sessions": 1})
    assert agent_config_from(limited).max_active_sessions == 1

    app = await build_agent_from_settings(_settings(sqlite_url))
    try:
        await app.agent.new_session()
        await app.agent.new_session()
    finally:
        await app.close()
    app = await build_agent_from_settings(limited)
    try:
        await app.agent.new_session()
        with pytest.raises(AgentError) as caught:
            await app.agent.new_session()
        assert caught.value.code is ErrorCode.SESSION_BUSY
    finally:
        await app.close()


async def test_memory_can_be_turned_off(sqlite_url: str) -> None:
    app = await build_agent_from_settings(_settings(sqlite_url, memory={"enabled": False}))
    try:
        assert app.memory_storage is None
    finally:
        await app.close()


async def test_valid_skills_are_registered_and_invalid_files_returned(
    sqlite_url: str, tmp_path: Path
) -> None:
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "SKILL.md").write_text(
        "---\nname: good\ndescription: A fine skill\n---\nDo the fine thing.\n", encoding="utf-8"
    )
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_text("no frontmatter", encoding="utf-8")
    app = await build_agent_from_settings(_settings(sqlite_url), skills_dir=tmp_path)
    try:
        assert [s.name for s in app.skills] == ["good"]
        [(path, error)] = app.skill_errors
        assert path == tmp_path / "bad" / "SKILL.md"
        assert error.rule_ids
        session = await app.agent.new_session()
        turn = await session.send_message("/good go")
        assert (await turn.join()).status is OutcomeStatus.COMPLETED
        with pytest.raises(AgentError) as caught:
            await session.send_message("/bad go")
        assert caught.value.code is ErrorCode.SKILL_NOT_FOUND
    finally:
        await app.close()


async def test_a_provider_without_its_key_fails_before_any_storage_is_opened(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'never.db'}"
    settings = _settings(
        url,
        providers=[
            {
                "id": "openai",
                "type": "openai",
                "api_key_env": "YOUYOU_TEST_UNSET_KEY",
                "models": [{"id": "gpt-x", "context_window": 8000}],
            }
        ],
    )
    with pytest.raises(AgentError) as caught:
        await build_agent_from_settings(settings, environ={})
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert not (tmp_path / "never.db").exists()
