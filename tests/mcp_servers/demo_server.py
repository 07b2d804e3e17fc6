"""An MCP server written with the SDK's own server API, for the MCP tests.

``python demo_server.py stdio`` serves stdin/stdout; ``python demo_server.py http PORT`` serves
streamable HTTP at ``http://127.0.0.1:PORT/mcp``. ``DEMO_MARKER_DIR`` names a directory where
each start appends its process id to ``started``, and ``slow`` writes ``running-<tag>`` as it
starts and ``cancelled-<tag>`` when the client's ``notifications/cancelled`` stops it.
"""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import anyio
import mcp_types
import uvicorn
from mcp import MCPError
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

# A 1×1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
READ_ONLY = ToolAnnotations(read_only_hint=True)
LONG_NAME = "a_tool_whose_name_is_far_too_long_for_any_provider_to_accept_it_as_is"

server = MCPServer("demo")


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations=READ_ONLY)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def write_note(text: str) -> str:
    """A tool without readOnlyHint: the client must treat it as mutating."""
    return f"noted {text}"


@server.tool(annotations=READ_ONLY)
async def slow(tag: str, seconds: float = 60.0) -> str:
    """Sleep; leave marker files when it starts and if the client cancels the request."""
    marker_dir = os.environ.get("DEMO_MARKER_DIR")
    if marker_dir:
        (Path(marker_dir) / f"running-{tag}").write_text("running")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker_dir:
            (Path(marker_dir) / f"cancelled-{tag}").write_text("cancelled")
        raise
    return f"slept {seconds}"


@server.tool()
def fail() -> str:
    """An error result (isError)."""
    raise ToolError("the disk is on fire")


@server.tool()
def rpc_error() -> str:
    """A JSON-RPC error response instead of a result."""
    raise MCPError(code=-32602, message="no such ticket")


@server.tool()
def crash() -> str:
    """The process dies in the middle of the call."""
    sys.stderr.write("demo server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=READ_ONLY, structured_output=False)
def picture() -> list[object]:
    """A caption and an image."""
    return ["a red dot", Image(data=PNG, format="png")]


@server.tool(annotations=READ_ONLY, structured_output=False)
def runbook() -> list[object]:
    """A text resource, a binary resource and a link to one."""
    return [
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(
                uri="file:///runbooks/disk.md", mime_type="text/markdown", text="Free the disk."
            ),
        ),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.BlobResourceContents(
                uri="file:///dumps/core", mime_type="application/x-core", blob="AAECAw=="
            ),
        ),
        mcp_types.ResourceLink(
            type="resource_link", name="grafana", uri="https://grafana/d/disk", description="disk"
        ),
    ]


@server.tool(annotations=READ_ONLY)
def surroundings(variable: str) -> str:
    """The server's working directory and whether it can see an environment variable."""
    return f"cwd={os.getcwd()} {variable}={'set' if variable in os.environ else 'unset'}"


@server.tool(annotations=READ_ONLY)
def structured(city: str) -> dict[str, object]:
    """Structured content next to its text."""
    return {"city": city, "celsius": 21}


@server.tool(name="search.tickets/v2", annotations=READ_ONLY)
def search_tickets(query: str) -> str:
    """A name with characters providers refuse."""
    return f"tickets for {query}"


@server.tool(name=LONG_NAME, annotations=READ_ONLY)
def long_name() -> str:
    """A name longer than providers accept."""
    return "long"


@server.tool(annotations=READ_ONLY)
def request_header(name: str, ctx: Context) -> str:
    """A header of the HTTP request that carried this call."""
    return (ctx.headers or {}).get(name.lower(), "<missing>")


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Register ``late`` and tell the client the list changed."""

    def late() -> str:
        """Added at run time."""
        return "late tool"

    server.add_tool(late, name="late", annotations=READ_ONLY)
    await ctx.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    if marker_dir := os.environ.get("DEMO_MARKER_DIR"):
        with (Path(marker_dir) / "started").open("a") as started:
            started.write(f"{os.getpid()}\n")
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
