"""MCP server lifecycle: lazy and shared start, crash and restart, failed starts, close."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_kit import DEMO, MARKER_VARIABLE, http_demo, stdio_settings
from youyou.adapters.mcp import McpToolbox
from youyou.config import McpServerSettings, McpTransport
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.tool import ToolInput


def started(markers: Path) -> list[int]:
    path = markers / "started"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def call_named(box: McpToolbox, tool_name: str, **arguments: object) -> str:
    tool = next(t for t in await box.tools() if t.descriptor.name == tool_name)
    tool_input = ToolInput(session_id="s", turn_id="t", call_id="c", arguments=arguments)
    return (await tool.call(tool_input, CancellationToken())).content


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_server_starts_on_first_listing_once_for_all_sessions(tmp_path: Path) -> None:
    async with McpToolbox([stdio_settings()], environ={MARKER_VARIABLE: str(tmp_path)}) as box:
        assert started(tmp_path) == []  # building the toolbox starts nothing
        first, second = await asyncio.gather(box.tools(), box.tools())
        assert [t.descriptor.name for t in first] == [t.descriptor.name for t in second]
        assert len(started(tmp_path)) == 1


async def test_a_crash_is_a_tool_error_and_the_next_call_restarts_the_server(
    tmp_path: Path,
) -> None:
    async with McpToolbox([stdio_settings()], environ={MARKER_VARIABLE: str(tmp_path)}) as box:
        before = await call_named(box, "demo__pid")
        with pytest.raises(AgentError) as info:
            await call_named(box, "demo__crash")
        assert info.value.code is ErrorCode.TOOL_EXECUTION_ERROR
        message = info.value.message
        assert "MCP server 'demo' stopped during 'crash'" in message
        assert "crashing on purpose" in message  # the tail of its stderr says why
        after = await call_named(box, "demo__pid")
        assert after != before and started(tmp_path) == [int(before), int(after)]


async def test_close_stops_the_server_process(tmp_path: Path) -> None:
    box = McpToolbox([stdio_settings()], environ={MARKER_VARIABLE: str(tmp_path)})
    pid = int(await call_named(box, "demo__pid"))
    assert alive(pid)
    await box.close()
    deadline = asyncio.get_running_loop().time() + 10
    while alive(pid):
        assert asyncio.get_running_loop().time() < deadline, "the server outlived close()"
        await asyncio.sleep(0.01)


async def test_a_server_that_does_not_start_is_left_out_and_reported(tmp_path: Path) -> None:
    """The report names the server, how it is started and the error itself (unwrapped from
    the SDK's exception groups), never only "unhandled errors in a TaskGroup"."""
    broken = McpServerSettings(
        id="broken", transport=McpTransport.STDIO, command=str(tmp_path / "no-such-server")
    )
    unset = stdio_settings(id="unset")  # its env names a variable that is not set
    exits = "import sys; sys.exit('GITHUB_TOKEN is not set')"
    crashing = McpServerSettings(
        id="crashing", transport=McpTransport.STDIO, command=sys.executable, args=("-c", exits)
    )
    async with McpToolbox([broken, unset, stdio_settings(), crashing], environ={}) as box:
        assert {t.descriptor.name.split("__")[0] for t in await box.tools()} == set()
        failures = dict(box.failures)
        reports = {r.server_id: r for r in await box.reports()}
    assert set(failures) == {"broken", "unset", "demo", "crashing"}
    assert reports["broken"].error == (
        f"MCP server 'broken' (command {tmp_path / 'no-such-server'}) did not start: "
        f"FileNotFoundError: [Errno 2] No such file or directory: "
        f"'{tmp_path / 'no-such-server'}'"
    )
    assert reports["unset"].error == (
        f"MCP server 'unset' (command {sys.executable} {DEMO} stdio) did not start: "
        f"mcp_servers[1].env.DEMO_MARKER_DIR: environment variable {MARKER_VARIABLE} is not set"
    )
    assert reports["crashing"].error == (
        f"MCP server 'crashing' (command {sys.executable} -c {exits}) did not start: "
        "it ended the connection before it was ready; "
        "its stderr ends with: GITHUB_TOKEN is not set"
    )
    assert failures["crashing"] == reports["crashing"].error


async def test_http_headers_come_from_named_variables(tmp_path: Path) -> None:
    with http_demo(tmp_path) as url:
        settings = McpServerSettings(
            id="demo",
            transport=McpTransport.HTTP,
            url=url,
            headers={"X-Team": "sre"},
            headers_env={"X-Token": "TEST_TOKEN"},
        )
        async with McpToolbox([settings], environ={"TEST_TOKEN": "t0k3n"}) as box:
            assert await call_named(box, "demo__request_header", name="X-Token") == "t0k3n"
            assert await call_named(box, "demo__request_header", name="X-Team") == "sre"


def test_only_the_allowed_servers_offer_their_tools(tmp_path: Path) -> None:
    async def names(allowed: Callable[[str], bool] | None) -> set[str]:
        settings = [stdio_settings(id="alices"), stdio_settings()]
        async with McpToolbox(settings, environ={MARKER_VARIABLE: str(tmp_path)}) as box:
            return {t.descriptor.name.split("__")[0] for t in await box.tools(allowed)}

    assert asyncio.run(names(lambda server_id: True)) == {"alices", "demo"}
    assert asyncio.run(names(lambda server_id: server_id != "alices")) == {"demo"}
    assert asyncio.run(names(None)) == {"alices", "demo"}  # the CLI's local user


async def test_a_stdio_server_runs_in_its_cwd_and_sees_only_the_variables_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("YOUYOU_TEST_PARENT_SECRET", "s3cret")
    workdir = tmp_path / "work"
    workdir.mkdir()
    settings = stdio_settings(cwd=str(workdir))
    async with McpToolbox([settings], environ={MARKER_VARIABLE: str(tmp_path)}) as box:
        secret = await call_named(box, "demo__surroundings", variable="YOUYOU_TEST_PARENT_SECRET")
        named = await call_named(box, "demo__surroundings", variable="DEMO_MARKER_DIR")
    assert secret == f"cwd={workdir} YOUYOU_TEST_PARENT_SECRET=unset"
    assert named == f"cwd={workdir} DEMO_MARKER_DIR=set"
