"""MCP tools from a server written with the SDK's server API, over stdio and streamable HTTP:
names, read-only hints, content mapping, errors, timeouts, cancellation, list_changed."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_kit import MARKER_VARIABLE, http_demo, stdio_settings, wait_for_file
from mcp_servers.demo_server import PNG
from youyou.adapters.mcp import McpToolbox
from youyou.adapters.mcp.server import McpTool
from youyou.config import McpServerSettings, McpTransport
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolInput
from youyou.ports.tool import ToolHandler


@pytest.fixture(scope="module")
def markers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-markers")


@pytest.fixture(scope="module")
def http_url(markers: Path) -> Iterator[str]:
    with http_demo(markers) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def settings(request: pytest.FixtureRequest, markers: Path) -> McpServerSettings:
    if request.param == "stdio":
        return stdio_settings()
    return McpServerSettings(
        id="demo", transport=McpTransport.HTTP, url=request.getfixturevalue("http_url")
    )


@pytest.fixture
async def toolbox(settings: McpServerSettings, markers: Path) -> AsyncIterator[McpToolbox]:
    async with McpToolbox([settings], environ={MARKER_VARIABLE: str(markers)}) as box:
        yield box


async def by_name(toolbox: McpToolbox) -> dict[str, McpTool]:
    return {t.descriptor.name: t for t in await toolbox.tools()}


async def call(
    tool: McpTool, cancel: CancellationToken | None = None, **arguments: Any
) -> ToolOutput:
    tool_input = ToolInput(session_id="s", turn_id="t", call_id="c", arguments=arguments)
    return await tool.call(tool_input, cancel or CancellationToken())


async def test_tools_are_namespaced_with_their_schema_and_read_only_hint(
    toolbox: McpToolbox,
) -> None:
    tools = await by_name(toolbox)
    assert all(isinstance(t, ToolHandler) for t in tools.values())
    echo = tools["demo__echo"].descriptor
    assert echo.mutating is False and echo.description == "Return the text unchanged."
    assert echo.parameters_schema["required"] == ["text"]
    assert tools["demo__write_note"].descriptor.mutating is True  # no readOnlyHint
    assert tools["demo__search_tickets_v2"].remote_name == "search.tickets/v2"
    (long_name,) = [n for n in tools if n.startswith("demo__a_tool_whose")]
    assert len(long_name) == 64
    assert all(len(n) <= 64 for n in tools)


async def test_text_structured_and_image_content(toolbox: McpToolbox) -> None:
    tools = await by_name(toolbox)
    echoed = await call(tools["demo__echo"], text="héllo")
    assert (echoed.content, echoed.is_error) == ("héllo", False)
    assert echoed.metadata and echoed.metadata["mcp_tool"] == "echo"

    weather = await call(tools["demo__structured"], city="Paris")
    assert weather.metadata and weather.metadata["structured_content"] == {
        "city": "Paris",
        "celsius": 21,
    }
    assert '"celsius": 21' in weather.content

    picture = await call(tools["demo__picture"])
    assert picture.content.splitlines() == ["a red dot", f"[image: image/png, {len(PNG)} bytes]"]
    assert picture.metadata and picture.metadata["images"] == [
        {"mime_type": "image/png", "data": base64.b64encode(PNG).decode()}
    ]


async def test_resources_and_resource_links_become_text_for_the_model(
    toolbox: McpToolbox,
) -> None:
    output = await call((await by_name(toolbox))["demo__runbook"])
    assert output.content.splitlines() == [
        "[resource: file:///runbooks/disk.md]",
        "Free the disk.",
        "[resource: file:///dumps/core, application/x-core, 4 bytes]",
        "[resource link: grafana <https://grafana/d/disk>: disk]",
    ]
    assert not output.is_error


async def test_an_error_result_and_a_json_rpc_error_are_tool_errors(toolbox: McpToolbox) -> None:
    tools = await by_name(toolbox)
    failed = await call(tools["demo__fail"])
    assert failed.is_error and "the disk is on fire" in failed.content
    with pytest.raises(AgentError) as info:
        await call(tools["demo__rpc_error"])
    assert info.value.code is ErrorCode.TOOL_EXECUTION_ERROR
    assert "answered 'rpc_error' with error -32602: no such ticket" in info.value.message


async def test_the_server_timeout_cancels_the_request_on_the_server(
    settings: McpServerSettings, markers: Path
) -> None:
    quick = settings.model_copy(update={"timeout_ms": 300})
    async with McpToolbox([quick], environ={MARKER_VARIABLE: str(markers)}) as box:
        tools = await by_name(box)
        tag = uuid.uuid4().hex
        with pytest.raises(AgentError) as info:
            await call(tools["demo__slow"], tag=tag)
        assert info.value.code is ErrorCode.TOOL_TIMEOUT
        assert "did not answer 'slow' within 300 ms" in info.value.message
        assert await wait_for_file(markers / f"cancelled-{tag}") == "cancelled"


async def test_a_cancel_sends_the_cancellation_notification(
    toolbox: McpToolbox, markers: Path
) -> None:
    tools = await by_name(toolbox)
    tag, cancel = uuid.uuid4().hex, CancellationToken()
    running = asyncio.ensure_future(call(tools["demo__slow"], cancel, tag=tag))
    await wait_for_file(markers / f"running-{tag}")
    cancel.cancel()
    output = await running
    assert output.is_error and output.metadata and output.metadata["cancelled"] is True
    assert await wait_for_file(markers / f"cancelled-{tag}") == "cancelled"


async def test_list_changed_refreshes_the_tools_for_the_next_listing(toolbox: McpToolbox) -> None:
    tools = await by_name(toolbox)
    assert await call(tools["demo__add_tool"]) == await call(tools["demo__add_tool"])
    deadline = asyncio.get_running_loop().time() + 10
    while "demo__late" not in (tools := await by_name(toolbox)):
        assert asyncio.get_running_loop().time() < deadline, "the list was not refreshed"
        await asyncio.sleep(0.01)
    assert (await call(tools["demo__late"])).content == "late tool"


async def test_enabled_and_disabled_tools_filter_the_listing(
    settings: McpServerSettings, markers: Path
) -> None:
    narrowed = settings.model_copy(
        update={"enabled_tools": ("echo", "pid", "fail"), "disabled_tools": ("fail",)}
    )
    async with McpToolbox([narrowed], environ={MARKER_VARIABLE: str(markers)}) as box:
        assert sorted(await by_name(box)) == ["demo__echo", "demo__pid"]
