"""One configured MCP server: started on first use, shared by every session, restarted after
it stopped; its tools as the kernel's ``ToolHandler``s (docs/mcp.md)."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import IO, Any

import httpx2
import mcp_types as types
from mcp import MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from youyou.adapters.mcp.connection import Connection, Transport
from youyou.adapters.mcp.names import model_tool_names
from youyou.adapters.mcp.results import tool_output
from youyou.config import McpServerSettings, McpTransport
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolDescriptor, ToolInput

logger = logging.getLogger(__name__)

# After a failed start, listings skip the server this long instead of waiting on it again for
# every message; a tool call always tries.
RETRY_START_AFTER_S = 30.0
_STDERR_TAIL = 800
_MAX_PAGES = 100


def _error(code: ErrorCode, message: str) -> AgentError:
    return AgentError(code, message, source=ErrorSource.TOOL)


class McpTool:
    """A server's tool; ``readOnlyHint`` makes it read-only (run in parallel with others)."""

    def __init__(self, server: McpServer, remote_name: str, descriptor: ToolDescriptor) -> None:
        self._server = server
        self.remote_name = remote_name
        self._descriptor = descriptor

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        return await self._server.call(self.remote_name, tool_input.arguments, cancel)


class McpServer:
    def __init__(self, settings: McpServerSettings, environ: Mapping[str, str], where: str) -> None:
        self.settings = settings
        self._environ = environ
        self._where = where
        self._lock = asyncio.Lock()
        self._connection: Connection | None = None
        self._stderr: IO[str] | None = None
        self._tools: tuple[McpTool, ...] | None = None
        self._stale = True
        self._failed: tuple[float, AgentError] | None = None

    @property
    def server_id(self) -> str:
        return self.settings.id

    @property
    def timeout_s(self) -> float:
        return self.settings.timeout_ms / 1000

    def _tools_changed(self) -> None:
        self._stale = True

    async def tools(self) -> tuple[McpTool, ...]:
        """The offered tools, listed again after ``notifications/tools/list_changed`` or a
        restart; raises AgentError(TOOL_EXECUTION_ERROR) if the server does not start."""
        if self._tools is not None and not self._stale:
            return self._tools
        async with self._lock:
            if self._tools is not None and not self._stale:
                return self._tools
            if self._failed is not None and self._tools is None:
                failed_at, error = self._failed
                if time.monotonic() - failed_at < RETRY_START_AFTER_S:
                    raise error
            connection = await self._connected()
            self._stale = False  # a notification during the listing marks it stale again
            try:
                async with asyncio.timeout(self.timeout_s):
                    listed = await self._list(connection)
            except TimeoutError:
                self._stale = True
                raise _error(
                    ErrorCode.TOOL_EXECUTION_ERROR,
                    f"MCP server {self.server_id!r} did not list its tools within "
                    f"{self.settings.timeout_ms} ms",
                ) from None
            except MCPError as err:
                self._stale = True
                raise self._failure(err, "tools/list") from None
            self._tools = self._handlers(listed)
            return self._tools

    async def call(
        self, tool: str, arguments: dict[str, Any], cancel: CancellationToken
    ) -> ToolOutput:
        """One ``tools/call``. A cancel of the turn cancels the request, which sends MCP's
        ``notifications/cancelled``; so does the kernel's timeout cancelling this task."""
        async with self._lock:
            connection = await self._connected()
        request = asyncio.ensure_future(
            connection.session.call_tool(tool, arguments, read_timeout_seconds=self.timeout_s)
        )
        unsubscribe = cancel.on_cancel(request.cancel)
        try:
            result = await request
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if cancel.is_cancelled and (task is None or not task.cancelling()):
                return ToolOutput(
                    content=f"[cancelled: the MCP server was told to stop {tool!r}]",
                    is_error=True,
                    metadata={"mcp_server": self.server_id, "mcp_tool": tool, "cancelled": True},
                )
            raise
        except MCPError as err:
            if err.code == CONNECTION_CLOSED:
                await connection.close()
            raise self._failure(err, tool) from None
        finally:
            unsubscribe()
        if not isinstance(result, types.CallToolResult):  # input requests are not supported
            raise _error(
                ErrorCode.TOOL_EXECUTION_ERROR,
                f"MCP server {self.server_id!r} answered {tool!r} with "
                f"{type(result).__name__}, not a tool result",
            )
        return tool_output(result, self.server_id, tool)

    async def close(self) -> None:
        async with self._lock:
            if self._connection is not None:
                await self._connection.close()
                self._connection = None
            self._close_stderr()

    async def _connected(self) -> Connection:
        """The live connection; (re)starts the server first. Call under ``_lock``."""
        if self._connection is not None and not self._connection.dead:
            return self._connection
        if self._connection is not None:
            logger.warning("MCP server %s stopped; starting it again", self.server_id)
            await self._connection.close()
            self._connection = None
        connection = Connection(self.server_id, self._tools_changed)
        try:
            async with asyncio.timeout(self.settings.startup_timeout_ms / 1000):
                await connection.open(self._transport())
        except Exception as exc:
            error = self._start_error(exc)
            self._failed = (time.monotonic(), error)
            raise error from None
        self._failed = None
        self._connection = connection
        self._stale = True
        return connection

    async def _list(self, connection: Connection) -> list[types.Tool]:
        listed: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await connection.session.list_tools(params=params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return listed

    def _handlers(self, listed: list[types.Tool]) -> tuple[McpTool, ...]:
        offered = [t for t in listed if self.settings.offers(t.name)]
        names = model_tool_names(self.server_id, [t.name for t in offered])
        handlers: list[McpTool] = []
        for tool in offered:
            read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
            try:
                descriptor = ToolDescriptor(
                    name=names[tool.name],
                    description=tool.description or tool.title or tool.name,
                    parameters_schema=tool.input_schema,
                    mutating=not read_only,
                    approval=self.settings.approval_for(tool.name),
                    server_id=self.server_id,
                )
            except AgentError as err:  # an input schema that is not JSON Schema
                logger.warning("MCP server %s: tool %r skipped: %s", self.server_id, tool.name, err)
                continue
            handlers.append(McpTool(self, tool.name, descriptor))
        return tuple(handlers)

    def _transport(self) -> Transport:
        settings = self.settings
        if settings.transport is McpTransport.STDIO:
            assert settings.command is not None
            params = StdioServerParameters(
                command=settings.command,
                args=list(settings.args),
                env=settings.resolved_env(self._environ, self._where) or None,
                cwd=settings.cwd,
            )
            self._close_stderr()
            # Kept open while the server runs: the tail explains a failed start or a crash.
            stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            self._stderr = stderr
            return lambda: stdio_client(params, errlog=stderr)
        assert settings.url is not None
        return _http_transport(settings.url, settings.resolved_headers(self._environ, self._where))

    def _stderr_tail(self) -> str:
        """The end of what a stdio server wrote to stderr: why it failed, most of the time."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, 2)
            self._stderr.seek(max(0, size - _STDERR_TAIL * 4))
            text = self._stderr.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends with: {text}" if text else ""

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _start_error(self, exc: Exception) -> AgentError:
        """Which server, how it is started, and the error underneath the SDK's task groups."""
        settings = self.settings
        started = f"url {settings.url}" if settings.url else f"command {self._command_line()}"
        if isinstance(exc, AgentError):  # a variable named in env / headers_env is not set
            reason = exc.message
        elif isinstance(exc, TimeoutError):
            reason = f"no answer within {settings.startup_timeout_ms} ms"
        else:
            reason = "; ".join(dict.fromkeys(_describe(leaf) for leaf in _leaves(exc)))
        return _error(
            ErrorCode.TOOL_EXECUTION_ERROR,
            f"MCP server {self.server_id!r} ({started}) did not start: {reason}"
            f"{self._stderr_tail()}",
        )

    def _command_line(self) -> str:
        return " ".join([self.settings.command or "", *self.settings.args])

    def _failure(self, err: MCPError, what: str) -> AgentError:
        if err.code == REQUEST_TIMEOUT:
            return _error(
                ErrorCode.TOOL_TIMEOUT,
                f"MCP server {self.server_id!r} did not answer {what!r} within "
                f"{self.settings.timeout_ms} ms",
            )
        if err.code == CONNECTION_CLOSED:
            return _error(
                ErrorCode.TOOL_EXECUTION_ERROR,
                f"MCP server {self.server_id!r} stopped during {what!r}"
                f"{self._stderr_tail()}; it is started again on the next call",
            )
        return _error(
            ErrorCode.TOOL_EXECUTION_ERROR,
            f"MCP server {self.server_id!r} answered {what!r} with error {err.code}: {err.message}",
        )


def _leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups: what an anyio task group really met."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it ended the connection before it was ready"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _http_transport(url: str, headers: dict[str, str]) -> Transport:
    @asynccontextmanager
    async def open_transport() -> AsyncIterator[Any]:
        # The SDK's own defaults: 30 s to connect or send, 300 s for a response stream.
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    return open_transport
