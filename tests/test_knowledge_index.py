"""The knowledge base on SQLite and PostgreSQL: search in English and Chinese, re-indexing
changed files only, who sees which source, and what ``search_knowledge`` gives the model."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from kernel_kit import block_text, build_agent, text
from youyou import ScriptedResponse, TurnOptions
from youyou.adapters.knowledge import KnowledgeBase, PassageHit, citation
from youyou.adapters.storage.engine import create_engine
from youyou.config import KnowledgeSourceSettings
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import ModelMessageRole
from youyou.domain.tool import ToolInput
from youyou.domain.turn import OutcomeStatus

DB_RUNBOOK = """\
# Database

## Failover
1. Promote the replica with pg_ctl promote.
2. Point pgbouncer at the new primary.

## 备份与恢复
每天凌晨三点执行全量备份，保留七天。
"""
NGINX_NOTES = "Restart nginx when the upstream returns 502 errors.\n"

OpenKb = Callable[..., Awaitable[KnowledgeBase]]


@pytest.fixture
async def open_kb(db_url: str) -> AsyncIterator[OpenKb]:
    """``await open_kb(*sources)``: a knowledge base on the test's database."""
    engine = create_engine(db_url)

    async def opened(*sources: KnowledgeSourceSettings) -> KnowledgeBase:
        return await KnowledgeBase.open(engine, sources)

    yield opened
    await engine.dispose()


def runbooks(root: Path) -> KnowledgeSourceSettings:
    (root / "db").mkdir(parents=True)
    (root / "db" / "postgres.md").write_text(DB_RUNBOOK, encoding="utf-8")
    (root / "nginx.txt").write_text(NGINX_NOTES, encoding="utf-8")
    (root / "ignored.rst").write_text("Failover is not here.\n", encoding="utf-8")
    return KnowledgeSourceSettings(id="runbooks", path=root)


async def test_search_finds_english_and_chinese_passages_with_citations(
    open_kb: OpenKb, tmp_path: Path
) -> None:
    kb = await open_kb(runbooks(tmp_path / "runbooks"))
    report = await kb.index_sources()
    assert (report.added, report.files, report.passages) == (2, 2, 3)

    (failover, *_) = await kb.search("how do I fail over the replica?", 5)
    assert (
        citation(failover) == "[source: runbooks/db/postgres.md § Database > Failover, lines 3–5]"
    )
    (backup,) = await kb.search("全量备份保留多久", 5)
    assert (
        citation(backup) == "[source: runbooks/db/postgres.md § Database > 备份与恢复, lines 7–8]"
    )
    (nginx,) = await kb.search("nginx 502", 5)
    assert citation(nginx) == "[source: runbooks/nginx.txt, line 1]"
    assert await kb.search("the", 5) == []  # nothing searchable in the query
    assert await kb.search("kafka", 5) == []


async def test_reindexing_touches_only_files_whose_content_changed(
    open_kb: OpenKb, tmp_path: Path
) -> None:
    source = runbooks(tmp_path / "runbooks")
    kb = await open_kb(source)
    await kb.index_sources()
    before = {d.path: d for d in await kb.index.documents("source:runbooks")}

    again = await kb.index_sources()
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 2)
    assert again.passages == 0

    nginx = tmp_path / "runbooks" / "nginx.txt"
    stat = nginx.stat()
    nginx.write_text(NGINX_NOTES, encoding="utf-8")  # rewritten, same content: unchanged
    os.utime(nginx, (stat.st_atime + 60, stat.st_mtime + 60))
    (tmp_path / "runbooks" / "db" / "postgres.md").write_text(
        DB_RUNBOOK.replace("pgbouncer", "haproxy"), encoding="utf-8"
    )
    (tmp_path / "runbooks" / "redis.md").write_text("# Redis\nFLUSHALL never.\n", "utf-8")
    changed = await kb.index_sources()
    assert (changed.added, changed.updated, changed.removed, changed.unchanged) == (1, 1, 0, 1)
    after = {d.path: d for d in await kb.index.documents("source:runbooks")}
    assert after["nginx.txt"] == before["nginx.txt"]  # not even re-written
    assert after["db/postgres.md"].content_hash != before["db/postgres.md"].content_hash
    assert await kb.search("pgbouncer", 5) == []
    assert len(await kb.search("haproxy", 5)) == 1

    nginx.unlink()
    (tmp_path / "runbooks" / "redis.md").write_bytes(b"\xff\xfe not utf-8")
    gone = await kb.index_sources()
    assert (gone.removed, [name for name, _ in gone.skipped]) == (2, ["runbooks/redis.md"])
    assert await kb.search("nginx", 5) == [] and await kb.search("flushall", 5) == []

    # a source removed from the configuration leaves the index
    dropped = await (await open_kb()).index_sources()
    assert dropped.removed == 1 and await kb.index.scopes() == []


async def test_a_missing_directory_is_a_configuration_error_and_changes_nothing(
    open_kb: OpenKb, tmp_path: Path
) -> None:
    good = runbooks(tmp_path / "runbooks")
    await (await open_kb(good)).index_sources()
    missing = KnowledgeSourceSettings(id="gone", path=tmp_path / "nowhere")
    with pytest.raises(AgentError) as info:
        await (await open_kb(missing)).index_sources()
    assert info.value.code is ErrorCode.INVALID_CONFIG and "knowledge[0].path" in info.value.message
    assert await (await open_kb(good)).index.scopes() == ["source:runbooks"]


async def test_users_see_only_their_own_uploads_and_the_sources_they_may_read(
    open_kb: OpenKb, tmp_path: Path
) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "oncall.md").write_text("# Escalation\nPage the SRE lead.\n", "utf-8")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "keys.md").write_text("# Rotation\nEscalation of key rotation.\n")
    kb = await open_kb(
        KnowledgeSourceSettings(id="team", path=tmp_path / "team"),
        KnowledgeSourceSettings(id="secret", path=tmp_path / "secret", users=("alice",)),
    )
    await kb.index_sources()
    await kb.upload("alice-id", "mine.md", b"# Notes\nescalation: call Bob first\n")
    await kb.upload("bob-id", "bob.md", b"# Notes\nescalation: Bob's own notes\n")

    def sources(hits: Sequence[PassageHit]) -> set[str]:
        return {citation(h).split(" §")[0] for h in hits}

    alice = await kb.index.search(kb.scopes("alice-id", lambda _: True), "escalation", 10)
    bob = await kb.index.search(kb.scopes("bob-id", lambda s: s != "secret"), "escalation", 10)
    local = await kb.search("escalation", 10)  # the CLI: every configured source, no upload
    assert sources(alice) == {
        "[source: team/oncall.md",
        "[source: secret/keys.md",
        "[source: mine.md (uploaded)",
    }
    assert sources(bob) == {"[source: team/oncall.md", "[source: bob.md (uploaded)"}
    assert sources(local) == {"[source: team/oncall.md", "[source: secret/keys.md"}

    (mine,) = await kb.uploads("alice-id")
    assert not await kb.delete_upload("bob-id", mine.id)  # another user's id is unknown
    replaced = await kb.upload("alice-id", "C:\\Users\\a\\mine.md", b"# Notes\nnew text\n")
    assert (replaced.id, replaced.path) == (mine.id, "mine.md")  # same name: replaced
    assert await kb.delete_upload("alice-id", mine.id)
    assert await kb.uploads("alice-id") == []
    for name, data in (("", b"x"), ("bad.md", b"\xff"), ("empty.md", b"\n\n")):
        with pytest.raises(AgentError) as info:
            await kb.upload("alice-id", name, data)
        assert info.value.code is ErrorCode.INPUT_VALIDATION


async def test_the_tool_heads_every_passage_with_its_citation(
    open_kb: OpenKb, tmp_path: Path
) -> None:
    kb = await open_kb(runbooks(tmp_path / "runbooks"))
    await kb.index_sources()
    tool = kb.tool()
    assert tool.descriptor.name == "search_knowledge" and not tool.descriptor.mutating
    call = ToolInput(session_id="s", turn_id="t", call_id="c", arguments={"query": "failover"})
    output = await tool.call(call, CancellationToken())
    assert output.content == (
        '1 passage for "failover", best first. Cite the [source: …] line of each passage you '
        "use.\n\n"
        "[1] [source: runbooks/db/postgres.md § Database > Failover, lines 3–5]\n"
        "## Failover\n1. Promote the replica with pg_ctl promote.\n"
        "2. Point pgbouncer at the new primary."
    )
    assert output.metadata == {
        "display": "1 found: [source: runbooks/db/postgres.md § Database > Failover, lines 3–5]",
        "citations": ["[source: runbooks/db/postgres.md § Database > Failover, lines 3–5]"],
    }
    nothing = await tool.call(
        call.model_copy(update={"arguments": {"query": "kafka"}}), CancellationToken()
    )
    assert not nothing.is_error and "rather than guessing" in nothing.content


async def test_the_model_reads_the_passage_it_searched_for(open_kb: OpenKb, tmp_path: Path) -> None:
    kb = await open_kb(runbooks(tmp_path / "runbooks"))
    await kb.index_sources()
    search = ScriptedResponse.tool_calls([("c1", "search_knowledge", {"query": "故障 failover"})])
    agent, provider = await build_agent([search, text("Promote the replica [source: …].")])
    session = await agent.new_session()
    options = TurnOptions(extra_tools=(kb.tool(),))
    outcome = await (await session.send_message("primary is down", options=options)).join()
    await agent.shutdown()
    assert outcome.status is OutcomeStatus.COMPLETED
    assert "search_knowledge" in {t.name for t in provider.requests[0].tools}
    (result,) = [m for m in provider.requests[1].messages if m.role is ModelMessageRole.TOOL]
    shown = block_text(result.content[0])
    assert "[source: runbooks/db/postgres.md § Database > Failover, lines 3–5]" in shown
    assert "pg_ctl promote" in shown
