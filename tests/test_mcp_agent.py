"""MCP tools inside real turns: the third-party ``mcp-server-time`` end to end, the kernel's
timeout and a turn's cancel reaching the server, and the ``youyou`` command."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from cli_kit import Cli, plain, quit_chat
from kernel_kit import block_text, build_agent, text
from mcp_kit import MARKER_VARIABLE, stdio_settings, wait_for_file
from youyou import AgentConfig, ScriptedResponse, TurnOptions
from youyou.adapters.mcp import McpToolbox
from youyou.config import McpServerSettings, McpTransport
from youyou.domain.model import ModelMessageRole
from youyou.domain.turn import OutcomeStatus

TIME_SERVER = McpServerSettings(
    id="time",
    transport=McpTransport.STDIO,
    command=sys.executable,
    args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
)
ASK_BERLIN = ScriptedResponse.tool_calls(
    [("c1", "time__get_current_time", {"timezone": "Europe/Berlin"})]
)


async def test_the_model_calls_a_third_party_server_and_reads_its_answer() -> None:
    agent, provider = await build_agent([ASK_BERLIN, text("It is late in Berlin.")])
    async with McpToolbox([TIME_SERVER]) as toolbox:
        session = await agent.new_session()
        options = TurnOptions(extra_tools=await toolbox.tools())
        outcome = await (await session.send_message("time in Berlin?", options=options)).join()
    await agent.shutdown()

    assert outcome.status is OutcomeStatus.COMPLETED
    offered = {t.name: t for t in provider.requests[0].tools}
    assert offered["time__get_current_time"].mutating is False  # readOnlyHint
    assert offered["time__get_current_time"].parameters_schema["required"] == ["timezone"]
    (result,) = [m for m in provider.requests[1].messages if m.role is ModelMessageRole.TOOL]
    answer = json.loads(block_text(result.content[0]))
    assert answer["timezone"] == "Europe/Berlin"
    assert answer["datetime"][-6:] in ("+01:00", "+02:00")


async def test_the_kernel_timeout_cancels_the_request_on_the_server(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    slow = ScriptedResponse.tool_calls([("c1", "demo__slow", {"tag": tag})])
    agent, provider = await build_agent(
        [slow, text("gave up")], config=AgentConfig(default_model="m1", tool_timeout_ms=500)
    )
    async with McpToolbox([stdio_settings()], environ={MARKER_VARIABLE: str(tmp_path)}) as box:
        options = TurnOptions(extra_tools=await box.tools())
        session = await agent.new_session()
        outcome = await (await session.send_message("wait", options=options)).join()
        assert await wait_for_file(tmp_path / f"cancelled-{tag}") == "cancelled"
    await agent.shutdown()
    assert outcome.status is OutcomeStatus.COMPLETED
    (result,) = [m for m in provider.requests[1].messages if m.role is ModelMessageRole.TOOL]
    assert "TOOL_TIMEOUT" in block_text(result.content[0])


async def test_cancelling_the_turn_cancels_the_request_on_the_server(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    slow = ScriptedResponse.tool_calls([("c1", "demo__slow", {"tag": tag})])
    agent, _ = await build_agent([slow])
    async with McpToolbox([stdio_settings()], environ={MARKER_VARIABLE: str(tmp_path)}) as box:
        session = await agent.new_session()
        options = TurnOptions(extra_tools=await box.tools())
        turn = await session.send_message("wait", options=options)
        async for event in turn.events:
            if event.payload.type == "tool_call_start":
                await wait_for_file(tmp_path / f"running-{tag}")
                turn.cancel()
        outcome = await turn.join()
        assert await wait_for_file(tmp_path / f"cancelled-{tag}") == "cancelled"
    await agent.shutdown()
    assert outcome.status is OutcomeStatus.CANCELLED


def time_server_toml() -> str:
    return (
        f'\n[[mcp_servers]]\nid = "time"\ncommand = "{sys.executable}"\n'
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
    )


def test_youyou_chat_calls_mcp_tools_like_built_in_ones(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    call = {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
    cli.write_config([{"tool_calls": [call]}, {"text": "done"}], extra=time_server_toml())
    shown = cli.run("chat", "-m", "time in Tokyo?")
    assert shown.returncode == 0, shown.stderr
    assert "[tool time__get_current_time ok" in shown.stderr + shown.stdout

    result = cli.run("chat", "-m", "again", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line)["payload"] for line in result.stdout.splitlines()]
    (end,) = [e for e in events if e["type"] == "tool_call_end"]
    assert end["tool_name"] == "time__get_current_time"
    assert json.loads(end["output"]["content"])["timezone"] == "Asia/Tokyo"


def test_youyou_mcp_list_shows_servers_and_their_tools(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    broken = '\n[[mcp_servers]]\nid = "broken"\ncommand = "/no/such/server"\n'
    cli.write_config(extra=time_server_toml() + broken)
    listed = cli.run("mcp", "list")
    assert listed.returncode == 1  # one server does not start
    out = listed.stdout
    assert "time  stdio" in out and "starts; 2 tools" in out
    assert "time__get_current_time" in out and "read-only" in out
    assert "broken  stdio  /no/such/server" in out
    assert "MCP server 'broken' (command /no/such/server) did not start: FileNotFoundError" in out

    cli.write_config(extra=time_server_toml())
    assert cli.run("mcp", "list").returncode == 0
    cli.write_config()
    nothing = cli.run("mcp", "list")
    assert nothing.returncode == 0 and "no MCP servers configured" in nothing.stdout


BROKEN_SERVER = "MCP server 'broken' (command /no/such/server) did not start: FileNotFoundError"


def test_youyou_chat_says_which_mcp_server_did_not_start_and_why(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    broken = '\n[[mcp_servers]]\nid = "broken"\ncommand = "/no/such/server"\n'
    cli.write_config([{"text": "answered without it"}], extra=broken)
    result = cli.run("chat", "-m", "time in Tokyo?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "answered without it\n"
    assert " ".join(result.stderr.split()).count(BROKEN_SERVER) == 1
    assert "its tools are left out" in result.stderr

    child = cli.spawn()  # the interactive chat says it before the first prompt
    assert BROKEN_SERVER in " ".join(plain(child.before or "").split())
    quit_chat(child)
