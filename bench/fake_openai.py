"""A zero-latency fake OpenAI Chat Completions endpoint for load benchmarks.

Every ``POST …/chat/completions`` is answered at once with a streamed completion in the
public wire format: a role chunk, a few text deltas, ``finish_reason = "stop"``, a usage chunk
and ``data: [DONE]``. HTTP/1.1 keep-alive, no scripting, no recording: it exists so the model
is never what a benchmark measures. (The protocol-faithful, scriptable fake the tests use is
``tests/fakes/openai_server.py``.) ``GET …/models`` lists the one model, ``fake-model``, for
servers that ask which models there are (Open WebUI does).

Two small controls for the side-by-side server benchmark (``bench/peer_servers/``), so that one
model process serves every phase of a run and each answer can be accounted for:
``POST /bench/pace`` with a JSON number sets the answer time in seconds from then on, and
``GET /bench/calls`` answers the number of chat completions served so far.

Run: ``python bench/fake_openai.py --port P [--answer-s S]`` (prints ``ready <port>`` when
listening); ``--answer-s`` spreads each answer's text over S seconds, so that streams stay
open as long as a real model's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

PIECES = ("Checked ", "the dashboards: ", "nothing is on fire.")


def _chunk(choices: list[dict[str, object]], usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, object] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _delta(delta: dict[str, str], finish: str | None = None) -> bytes:
    return _chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])


FRAMES = (
    _delta({"role": "assistant", "content": ""}),
    *(_delta({"content": piece}) for piece in PIECES),
    _delta({}, "stop"),
    _chunk([], {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}),
    b"data: [DONE]\n\n",
)
STREAM = b"".join(FRAMES)
REPLY = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    + f"content-length: {len(STREAM)}\r\n\r\n".encode()
    + STREAM
)
PACED_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
ANSWER = "".join(PIECES)
NOT_FOUND = (
    b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
)


def _json_reply(body: object) -> bytes:
    raw = json.dumps(body).encode()
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(raw)}\r\n\r\n".encode()
        + raw
    )


MODELS = _json_reply(
    {
        "object": "list",
        "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "bench"}],
    }
)


async def _answer(writer: asyncio.StreamWriter, answer_s: float) -> None:
    """At once, or spread over ``answer_s`` seconds like a model generating its answer (the
    pauses fall between the text pieces, so the stream stays open that long)."""
    if answer_s <= 0:
        writer.write(REPLY)
        await writer.drain()
        return
    writer.write(PACED_HEAD)
    pause = answer_s / len(PIECES)
    for index, frame in enumerate(FRAMES):
        writer.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
        await writer.drain()
        if 1 <= index <= len(PIECES):
            await asyncio.sleep(pause)
    writer.write(b"0\r\n\r\n")
    await writer.drain()


class State:
    """The answer time (settable at run time) and the count of chat completions served."""

    def __init__(self, answer_s: float) -> None:
        self.answer_s = answer_s
        self.calls = 0


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: State) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            length = 0
            for line in header_lines:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            path = request_line.split(" ")[1] if " " in request_line else ""
            if path.endswith("/chat/completions"):
                state.calls += 1
                await _answer(writer, state.answer_s)
            elif path.endswith("/models"):
                writer.write(MODELS)
                await writer.drain()
            elif path == "/bench/pace":
                state.answer_s = float(json.loads(body))
                writer.write(_json_reply(state.answer_s))
                await writer.drain()
            elif path == "/bench/calls":
                writer.write(_json_reply(state.calls))
                await writer.drain()
            else:
                writer.write(NOT_FOUND)
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, answer_s: float) -> None:
    state = State(answer_s)
    server = await asyncio.start_server(
        lambda r, w: _serve(r, w, state), "127.0.0.1", port, backlog=1024
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"ready {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stop.wait()


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--answer-s", type=float, default=0.0, help="stream each answer over S seconds"
    )
    args = parser.parse_args()
    try:
        import uvloop  # optional and faster
    except ImportError:
        asyncio.run(main(args.port, args.answer_s))
    else:
        uvloop.run(main(args.port, args.answer_s))


if __name__ == "__main__":
    run()
