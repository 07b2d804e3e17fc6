"""``youyou kb index``, ``youyou kb search`` and ``search_knowledge`` in ``youyou chat``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_kit import Cli
from youyou.domain.ledger import ToolResult

RUNBOOK = "# Database\n\n## Failover\nPromote the replica with pg_ctl promote.\n"


def knowledge_toml(path: Path) -> str:
    return f'\n[[knowledge]]\nid = "runbooks"\npath = {json.dumps(str(path))}\n'


def with_runbooks(tmp_path: Path, responses: list[dict[str, object]] | None = None) -> Cli:
    runbooks = tmp_path / "runbooks"
    runbooks.mkdir()
    (runbooks / "db.md").write_text(RUNBOOK, encoding="utf-8")
    (runbooks / "缓存.md").write_text("# Redis\n缓存击穿时先限流再预热。\n", encoding="utf-8")
    cli = Cli(tmp_path)
    cli.write_config(responses or [], extra=knowledge_toml(runbooks))
    return cli


def test_kb_index_reports_counts_and_reindexes_changed_files_only(tmp_path: Path) -> None:
    cli = with_runbooks(tmp_path)
    first = cli.run("kb", "index")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (
        "1 source, 2 files: 2 added, 0 updated, 0 removed, 0 unchanged, 0 skipped "
        "(2 passages written)"
    )
    (tmp_path / "runbooks" / "db.md").write_text(RUNBOOK + "Then repoint pgbouncer.\n", "utf-8")
    second = cli.run("kb", "index", "--config", str(cli.config), with_config=False)
    assert "0 added, 1 updated, 0 removed, 1 unchanged" in second.stdout, second.stderr

    cli.write_config()
    nothing = cli.run("kb", "index")
    assert nothing.returncode == 0 and "no knowledge sources configured" in nothing.stdout


def test_kb_search_prints_ranked_passages_with_citations(tmp_path: Path) -> None:
    cli = with_runbooks(tmp_path)
    assert cli.run("kb", "index").returncode == 0
    found = cli.run("kb", "search", "failover replica")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[:3] == [
        "1. [source: runbooks/db.md § Database > Failover, lines 3–4]",
        "## Failover",
        "Promote the replica with pg_ctl promote.",
    ]
    chinese = cli.run("kb", "search", "缓存击穿", "-k", "1")
    assert chinese.stdout.startswith("1. [source: runbooks/缓存.md § Redis, lines 1–2]")
    missing = cli.run("kb", "search", "kafka")
    assert missing.returncode == 0 and "no matching passage" in missing.stdout


def test_youyou_chat_offers_search_knowledge_and_the_model_gets_the_passage(
    tmp_path: Path,
) -> None:
    call = {"name": "search_knowledge", "arguments": {"query": "failover"}}
    cite = "Promote the replica [source: runbooks/db.md § Database > Failover, lines 3–4]."
    cli = with_runbooks(tmp_path, [{"tool_calls": [call]}, {"text": cite}])
    assert cli.run("kb", "index").returncode == 0
    shown = cli.run("chat", "-m", "the primary is down", "--json")
    assert shown.returncode == 0, shown.stderr
    events = [json.loads(line)["payload"] for line in shown.stdout.splitlines()]
    (end,) = [e for e in events if e["type"] == "tool_call_end"]
    assert end["tool_name"] == "search_knowledge" and not end["output"]["is_error"]
    assert end["output"]["content"] == (  # shown: the citations; the model gets the passages
        "1 found: [source: runbooks/db.md § Database > Failover, lines 3–4]"
    )
    (session_id,) = cli.session_ids()
    (result,) = [e.payload for e in cli.stored(session_id) if isinstance(e.payload, ToolResult)]
    stored = result.result.output.content
    assert "[1] [source: runbooks/db.md § Database > Failover, lines 3–4]" in stored
    assert "pg_ctl promote" in stored
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert answer == cite

    cli.write_config([{"tool_calls": [call]}, {"text": "done"}])  # no [[knowledge]]
    without = cli.run("chat", "-m", "again", "--json")
    events = [json.loads(line)["payload"] for line in without.stdout.splitlines()]
    (end,) = [e for e in events if e["type"] == "tool_call_end"]
    assert end["output"]["is_error"] and "TOOL_NOT_FOUND" in end["output"]["content"]
