"""Approval policies of MCP tools: ``readOnlyHint`` and the ``[[mcp_servers]]`` keys decide
which calls wait for a person; the third-party ``mcp-server-time`` with ``approval =
"always"`` end to end."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from rich.console import Console

from kernel_kit import Watch, block_text, build_agent, text
from mcp_kit import DEMO, MARKER_VARIABLE, stdio_settings
from youyou import ScriptedResponse, TurnOptions
from youyou.adapters.mcp import McpToolbox
from youyou.cli.mcp_command import run_mcp_list
from youyou.config import McpServerSettings, McpTransport
from youyou.domain.model import ModelMessageRole
from youyou.domain.turn import OutcomeStatus

TIME_SERVER = McpServerSettings(
    id="time",
    transport=McpTransport.STDIO,
    command=sys.executable,
    args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
    approval="always",
)


async def test_a_time_server_call_waits_for_approval_then_runs() -> None:
    ask = ScriptedResponse.tool_calls(
        [("c1", "time__get_current_time", {"timezone": "Asia/Tokyo"})]
    )
    agent, provider = await build_agent([ask, text("It is morning in Tokyo.")])
    async with McpToolbox([TIME_SERVER]) as toolbox:
        session = await agent.new_session()
        options = TurnOptions(extra_tools=await toolbox.tools())
        watch = Watch(await session.send_message("time in Tokyo?", options=options))
        [requested] = await watch.until("tool_approval_requested")
        assert (requested.tool_name, requested.server_id, requested.arguments) == (
            "time__get_current_time",
            "time",
            {"timezone": "Asia/Tokyo"},
        )
        assert watch.of("tool_call_end") == []
        await session.decide_approval("c1", "approve", decided_by="alice")
        assert await watch.done() is OutcomeStatus.COMPLETED
    await agent.shutdown()
    (result,) = [m for m in provider.requests[1].messages if m.role is ModelMessageRole.TOOL]
    assert json.loads(block_text(result.content[0]))["timezone"] == "Asia/Tokyo"


async def test_read_only_hint_and_the_per_tool_lists_set_each_policy(tmp_path: Path) -> None:
    environ = {MARKER_VARIABLE: str(tmp_path)}
    async with McpToolbox([stdio_settings()], environ=environ) as box:
        by_name = {t.descriptor.name: t.descriptor for t in await box.tools()}
    assert (by_name["demo__echo"].mutating, by_name["demo__echo"].approval) == (False, "mutating")
    assert (by_name["demo__write_note"].mutating, by_name["demo__write_note"].approval) == (
        True,
        "mutating",
    )
    assert by_name["demo__echo"].server_id == "demo"
    settings = stdio_settings(approval="never", ask_tools=("echo",), approve_tools=("write_note",))
    async with McpToolbox([settings], environ=environ) as box:
        by_name = {t.descriptor.name: t.descriptor for t in await box.tools()}
    assert by_name["demo__echo"].approval == "always"
    assert by_name["demo__write_note"].approval == "never"
    assert by_name["demo__pid"].approval == "never"


async def test_by_default_a_tool_without_read_only_hint_asks(tmp_path: Path) -> None:
    environ = {MARKER_VARIABLE: str(tmp_path)}
    calls = ScriptedResponse.tool_calls(
        [("c1", "demo__echo", {"text": "hi"}), ("c2", "demo__write_note", {"text": "n"})]
    )
    agent, _ = await build_agent([calls, text("done")])
    async with McpToolbox([stdio_settings()], environ=environ) as box:
        session = await agent.new_session()
        options = TurnOptions(extra_tools=await box.tools())
        watch = Watch(await session.send_message("note it", options=options))
        [requested] = await watch.until("tool_approval_requested")
        assert requested.call_id == "c2"
        [echoed] = await watch.until("tool_call_end")
        assert echoed.call_id == "c1"  # the read-only call went ahead
        await session.decide_approval("c2", "deny", decided_by="alice", reason="no notes")
        assert await watch.done() is OutcomeStatus.COMPLETED
    await agent.shutdown()
    assert "no notes" in watch.of("tool_call_end")[1].output.content


async def test_mcp_list_says_which_tools_ask(tmp_path: Path) -> None:
    config = tmp_path / "youyou.toml"
    config.write_text(
        f'[[mcp_servers]]\nid = "demo"\ncommand = "{sys.executable}"\n'
        f'args = ["{DEMO}", "stdio"]\nask_tools = ["echo"]\n',
        encoding="utf-8",
    )
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    assert await run_mcp_list(config, console) == 0
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines() if "__" in line}
    assert rows["demo__write_note"][2:4] == ["mutating", "asks"]
    assert rows["demo__echo"][2:4] == ["read-only", "asks"]  # ask_tools
    assert rows["demo__pid"][2:4] == ["read-only", "runs"]
