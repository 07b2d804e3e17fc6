"""One live connection to an MCP server, owned by a background task.

The SDK's transports and ``ClientSession`` are async context managers backed by anyio task
groups, which must be entered and left by the same task; the owner task holds them open while
any session's tool calls use the ``ClientSession`` from their own tasks. The server's messages
pass through a relay that notices the end of the stream, so a stdio server that exits (or an
HTTP connection that ends) marks the connection dead at once, not only on the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp import ClientSession
from mcp.client.session import IncomingMessage
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

Transport = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens the transport: yields ``(read_stream, write_stream)`` for the ``ClientSession``."""

_STOP_TIMEOUT_S = 5.0


class Connection:
    """Started by ``open``; ``dead`` once the server's stream ended or ``close`` ran."""

    def __init__(self, name: str, on_tools_changed: Callable[[], None]) -> None:
        self._name = name
        self._on_tools_changed = on_tools_changed
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None

    @property
    def session(self) -> ClientSession:
        assert self._session is not None, "open() first"
        return self._session

    @property
    def dead(self) -> bool:
        return self._ended.is_set()

    async def open(self, transport: Transport) -> None:
        """Connect and initialize; raises what failed (the caller bounds the time)."""
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(
            self._own(transport, ready), name=f"mcp:{self._name}"
        )
        try:
            self._session = await asyncio.shield(ready)
        except BaseException:
            await self.close()
            if ready.done() and not ready.cancelled():
                ready.exception()  # retrieved: the caller reports its own error
            raise

    async def close(self) -> None:
        """Leave the session and the transport (a stdio server process is stopped)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self._session is None:  # still connecting: nothing to leave gracefully
            task.cancel()
        try:
            async with asyncio.timeout(_STOP_TIMEOUT_S):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:  # the owner task logs its own failure
            pass

    async def _handle(self, message: IncomingMessage) -> None:
        if isinstance(message, Exception):
            logger.warning("MCP server %s: transport error: %s", self._name, message)
        elif message.method == "notifications/tools/list_changed":
            self._on_tools_changed()

    async def _own(self, transport: Transport, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(transport())
                relay_in, relay_out = anyio.create_memory_object_stream[SessionMessage | Exception](
                    0
                )
                group = await stack.enter_async_context(anyio.create_task_group())
                group.start_soon(self._relay, read, relay_in)
                stack.callback(group.cancel_scope.cancel)  # runs before the group is left
                session = await stack.enter_async_context(
                    ClientSession(relay_out, write, message_handler=self._handle)
                )
                await session.initialize()
                ready.set_result(session)
                stop = asyncio.ensure_future(self._stop.wait())
                ended = asyncio.ensure_future(self._ended.wait())
                try:
                    await asyncio.wait((stop, ended), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
                    ended.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(exc))
            elif not self._stop.is_set():
                logger.warning("MCP server %s: connection failed", self._name, exc_info=True)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._ended.set()

    async def _relay(
        self,
        source: AsyncIterable[SessionMessage | Exception],
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        try:
            async with sink:
                async for item in source:
                    await sink.send(item)
        finally:
            self._ended.set()
