"""``youyou chat``: after /compact the model recalls a compacted tool result, and the call shows
like any other tool call."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_kit import PROMPT, Cli, quit_chat
from youyou.domain.ledger import ToolResult
from youyou.domain.recall import RECALL_TOOL_NAME

ZONE = "Mars/Olympus_Mons"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_a_recall_after_compact_shows_as_a_tool_call_and_brings_back_the_error(cli: Cli) -> None:
    cli.write_config(
        [
            {
                "tool_calls": [
                    {"id": "t1", "name": "get_current_time", "arguments": {"timezone": ZONE}}
                ]
            },
            {"text": "That time zone does not exist."},
            {"text": "Summary: a time lookup failed for an unknown zone."},
            {
                "tool_calls": [
                    {"id": "r1", "name": RECALL_TOOL_NAME, "arguments": {"query": "olympus"}}
                ]
            },
            {"text": "The zone was Mars."},
        ]
    )
    child = cli.spawn()
    child.sendline("what time is it on Olympus Mons?")
    child.expect("does not exist")
    child.expect(PROMPT)
    child.sendline("/compact")
    child.expect(r"context \d+ / [\d,]+ tokens")
    child.expect(PROMPT)
    child.sendline("which zone did I ask for?")
    child.expect("The zone was Mars")
    child.expect(PROMPT)
    shown = quit_chat(child)
    assert re.search(
        r'✓ recall_history \{"query":"olympus"\} · \d+ ms → \d+ compacted message\(s\)', shown
    ), shown
    (session_id,) = cli.session_ids()
    results = [
        e.payload.result for e in cli.stored(session_id) if isinstance(e.payload, ToolResult)
    ]
    assert [r.tool_name for r in results] == ["get_current_time", RECALL_TOOL_NAME]
    assert f"Unknown time zone '{ZONE}'" in results[0].output.content
    assert f"Unknown time zone '{ZONE}'" in results[1].output.content
