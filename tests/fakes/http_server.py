"""A tiny scripted HTTP/1.1 server on 127.0.0.1 for talking to real SDK clients.

It runs its own event loop in a background thread, so both sync and async tests (and a
workbench under test) can use it. Each request to the server's route takes the next scripted
reply from a queue; every request is recorded with its headers, JSON body and whether the
client hung up before the reply was complete.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Self


@dataclass(frozen=True, slots=True)
class SSE:
    """One Server-Sent Event: ``event: <event>`` (if any) and ``data: <data>``."""

    data: str
    event: str | None = None

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {self.data}\n\n".encode()


@dataclass(frozen=True, slots=True)
class Delay:
    seconds: float


@dataclass(frozen=True, slots=True)
class Gate:
    """Hold the body until the test sets ``opened`` (at most ``timeout_s``): a stream that lasts
    exactly as long as the test needs it to, however loaded the machine is."""

    opened: threading.Event
    timeout_s: float = 120


@dataclass(frozen=True, slots=True)
class Abort:
    """Drop the connection in the middle of the body (a broken stream)."""


@dataclass(frozen=True, slots=True)
class StreamReply:
    parts: tuple[SSE | Delay | Gate | Abort, ...]
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JSONReply:
    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PageReply:
    """A non-API body, e.g. the HTML error page of a proxy in front of the endpoint."""

    status: int
    body: str
    content_type: str = "text/html"


PROXY_502_PAGE = PageReply(
    502,
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n",
)


@dataclass(frozen=True, slots=True)
class Silence:
    """Accept the request and never answer (until the client hangs up)."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    disconnected: threading.Event = field(default_factory=threading.Event)

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    async def hung_up(self, timeout_s: float = 5.0) -> bool:
        """Whether the client closed the connection before the reply ended (waits for it)."""
        return await asyncio.to_thread(self.disconnected.wait, timeout_s)


class StreamBuilder:
    """Base of the wire-format builders: parts in call order, delays, a broken ending."""

    def __init__(self) -> None:
        self._parts: list[SSE | Delay | Gate | Abort] = []

    def delay(self, seconds: float) -> Self:
        self._parts.append(Delay(seconds))
        return self

    def gate(self, opened: threading.Event) -> Self:
        self._parts.append(Gate(opened))
        return self

    def abort(self) -> StreamReply:
        """End the reply by dropping the connection mid-body."""
        return StreamReply((*self._parts, Abort()))

    def reply(self) -> StreamReply:
        return StreamReply(tuple(self._parts))


Reply = StreamReply | JSONReply | PageReply | Silence
ReplySource = Reply | Callable[[RecordedRequest], Reply]


class FakeHTTPServer:
    """Serves scripted replies on ``route`` (POST); use as a context manager."""

    route = "/"

    def __init__(self, *replies: ReplySource) -> None:
        self._replies: deque[ReplySource] = deque(replies)
        self.requests: list[RecordedRequest] = []
        self.default: Callable[[RecordedRequest], Reply] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self.port = 0

    # -- scripting ---------------------------------------------------------------------------
    def enqueue(self, *replies: ReplySource) -> Self:
        self._replies.extend(replies)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if request.method != "POST" or request.path.split("?")[0] != self.route:
            return JSONReply(404, {"error": {"message": f"no route {request.path}"}})
        if self._replies:
            source = self._replies.popleft()
        elif self.default is not None:
            source = self.default
        else:
            return JSONReply(
                400,
                {
                    "error": {
                        "message": "fake server: no scripted reply left",
                        "type": "invalid_request_error",
                    }
                },
            )
        return source(request) if callable(source) else source

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Self:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=type(self).__name__, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop = None

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._connections):
            writer.transport.abort()  # handlers see the hangup and return on their own
        for _ in range(100):
            if not self._connections:
                break
            await asyncio.sleep(0.01)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- protocol ----------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        leftover = b""
        try:
            while (request := await _read_request(reader, leftover)) is not None:
                self.requests.append(request)
                keep_alive, leftover = await self._respond(request, reader, writer)
                if not keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(writer)
            writer.close()

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[bool, bytes]:
        reply = self._next_reply(request)
        if isinstance(reply, Silence):
            await reader.read(1)  # b"" once the client hangs up
            request.disconnected.set()
            return False, b""
        if isinstance(reply, PageReply):
            page = reply.body.encode()
            headers = {"content-type": reply.content_type, "content-length": str(len(page))}
            writer.write(_head(reply.status, headers) + page)
            await writer.drain()
            return True, b""
        if isinstance(reply, JSONReply):
            body = json.dumps(reply.body).encode()
            headers = {"content-type": "application/json", "content-length": str(len(body))}
            writer.write(_head(reply.status, {**headers, **reply.headers}) + body)
            await writer.drain()
            return True, b""
        headers = {
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
        }
        writer.write(_head(reply.status, {**headers, **reply.headers}))
        await writer.drain()
        # A pending read finishes with b"" the moment the client closes its end.
        hangup = asyncio.ensure_future(reader.read(1))
        try:
            for part in reply.parts:
                if isinstance(part, Abort):
                    writer.transport.abort()
                    return False, b""
                if isinstance(part, Delay):
                    await asyncio.wait([hangup], timeout=part.seconds)
                elif isinstance(part, Gate):
                    opened = asyncio.ensure_future(
                        asyncio.to_thread(part.opened.wait, part.timeout_s)
                    )
                    await asyncio.wait([hangup, opened], return_when=asyncio.FIRST_COMPLETED)
                else:
                    chunk = part.encode()
                    writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    await writer.drain()
                if hangup.done() and not hangup.result():
                    request.disconnected.set()
                    return False, b""
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            request.disconnected.set()
            return False, b""
        finally:
            hangup.cancel()
            await asyncio.wait([hangup])  # the reader admits one waiter at a time
        # The read may already hold the first byte of the client's next request.
        early = hangup.result() if hangup.done() and not hangup.cancelled() else b""
        return True, early


def _head(status: int, headers: Mapping[str, str]) -> bytes:
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Overloaded"
    lines = [f"HTTP/1.1 {status} {phrase}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _read_request(reader: asyncio.StreamReader, leftover: bytes) -> RecordedRequest | None:
    line = leftover + await reader.readline()
    if not line.strip():
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return RecordedRequest(method=method, path=path, headers=headers, body=body)
