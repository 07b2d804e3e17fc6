"""Every ``[[mcp_servers]]`` entry of one agent: tools per send, a report, one close."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from youyou.config import McpServerSettings, McpTransport
from youyou.domain.errors import AgentError
from youyou.domain.tool import ToolDescriptor

if TYPE_CHECKING:  # the SDK takes ~0.4 s to import: only configured servers pay for it
    from youyou.adapters.mcp.server import McpServer, McpTool

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class McpServerReport:
    """What ``youyou mcp list`` shows for one server."""

    server_id: str
    transport: McpTransport
    target: str  # the command line or the URL
    error: str | None
    tools: tuple[ToolDescriptor, ...] = ()
    remote_names: tuple[str, ...] = ()


class McpToolbox:
    """Servers start on the first listing or call and are shared by every session; ``close``
    stops them (a stdio server's process ends). Used from one event loop."""

    def __init__(
        self, servers: Sequence[McpServerSettings], environ: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        self._servers: tuple[McpServer, ...] = ()
        # Why each server left out of the last listing did not start, by server id.
        self.failures: dict[str, str] = {}
        if not servers:
            return
        from youyou.adapters.mcp.server import McpServer

        self._servers = tuple(
            McpServer(settings, env, f"mcp_servers[{index}]")
            for index, settings in enumerate(servers)
        )

    def __bool__(self) -> bool:
        return bool(self._servers)

    async def tools(self, allowed: Callable[[str], bool] | None = None) -> tuple[McpTool, ...]:
        """The tools of the servers whose ids ``allowed`` accepts (``None``: the local user,
        who gets every server). A server that does not start is logged, kept in ``failures``
        and left out, so a message is never refused."""
        servers = [s for s in self._servers if allowed is None or allowed(s.server_id)]
        listed = await asyncio.gather(*(s.tools() for s in servers), return_exceptions=True)
        tools: list[McpTool] = []
        for server, result in zip(servers, listed, strict=True):
            if isinstance(result, AgentError):
                logger.warning("MCP server %s left out: %s", server.server_id, result.message)
                self.failures[server.server_id] = result.message
            elif isinstance(result, BaseException):
                raise result
            else:
                self.failures.pop(server.server_id, None)
                tools.extend(result)
        return tuple(tools)

    async def reports(self) -> tuple[McpServerReport, ...]:
        """Start every server and list its tools (for ``youyou mcp list``)."""
        return tuple(await asyncio.gather(*(_report(s) for s in self._servers)))

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self._servers))

    async def __aenter__(self) -> McpToolbox:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


async def _report(server: McpServer) -> McpServerReport:
    settings = server.settings
    target = settings.url or " ".join([settings.command or "", *settings.args])
    try:
        tools = await server.tools()
    except AgentError as err:
        return McpServerReport(server.server_id, settings.transport, target, err.message)
    return McpServerReport(
        server.server_id,
        settings.transport,
        target,
        None,
        tuple(t.descriptor for t in tools),
        tuple(t.remote_name for t in tools),
    )
