"""The local model's worker process: llama.cpp behind a small OpenAI-compatible endpoint.

Started by ``local_process.WorkerProcess`` as ``python -m youyou.adapters.providers.local_worker``
and never by hand. A native crash in llama.cpp (an ``Illegal instruction`` on a CPU the build
does not suit, a segfault in a model file) then ends this process, not the agent.

The parent talks to it over two channels:

- **stdin** carries a bearer token on its first line; after that the worker only waits for end
  of file and exits at once when it comes: when the parent closes the pipe, or when the parent
  dies and the operating system closes it. So the worker never outlives the agent, on every OS.
- **stdout** carries one JSON line, ``{"port": N}``, once the model is loaded and the socket
  listens on 127.0.0.1. Anything else written to stdout (llama.cpp's native logs) goes to
  stderr, which the parent keeps to explain a failed start or a crash.

Only ``POST /v1/chat/completions`` with ``stream: true`` is served, one generation at a time;
a client that hangs up stops the generation at the next token. llama.cpp sends no usage in a
stream, so the tokens are counted here and sent OpenAI-style when ``stream_options`` asks.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import secrets
import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_END = object()
_STDIN = 0


def _sse(payload: object) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type}}


def _usage_chunk(context_tokens: int, generated: int) -> dict[str, Any]:
    """The prompt is what the context holds besides the generated tokens."""
    prompt = max(context_tokens - generated, 0)
    return {
        "id": "local-usage",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "local",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": generated,
            "total_tokens": prompt + generated,
        },
    }


class Generator:
    """Runs one llama.cpp chat completion at a time in a thread and streams it as SSE."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._lock = asyncio.Lock()

    async def stream(self, params: dict[str, Any], include_usage: bool) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def put(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def produce() -> None:
            try:
                chunks: Iterator[dict[str, Any]] = self._llama.create_chat_completion(
                    **params, stream=True
                )
                generated = 0
                for chunk in chunks:
                    if stop.is_set():
                        return
                    generated += any(
                        c["delta"].get("content") or c["delta"].get("tool_calls")
                        for c in chunk.get("choices", ())
                    )
                    put(chunk)
                if include_usage:
                    put(_usage_chunk(self._llama.n_tokens, generated))
            except Exception as exc:  # sent to the client as an error event
                put(exc)
            finally:
                put(_END)

        await self._lock.acquire()
        # The thread, not this generator, releases the model: a hang-up cancels the response
        # again at every await (anyio's cancel scopes), so no cleanup here could wait for it.
        loop.run_in_executor(None, produce).add_done_callback(lambda _: self._lock.release())
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, Exception):
                    message = f"{type(item).__name__}: {item}"
                    yield _sse(_error_body(message, "local_model_error"))
                    return
                yield _sse(item)
            yield "data: [DONE]\n\n"
        finally:
            stop.set()  # the thread stops at its next token


def create_app(generator: Generator, token: str) -> Starlette:
    async def chat_completions(request: Request) -> Response:
        given = request.headers.get("authorization", "")
        if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
            body = _error_body("missing or wrong bearer token", "authentication_error")
            return JSONResponse(body, status_code=401)
        params = await request.json()
        if not isinstance(params, dict) or params.pop("stream", None) is not True:
            body = _error_body("only streamed chat completions are served", "invalid_request")
            return JSONResponse(body, status_code=400)
        options = params.pop("stream_options", None) or {}
        stream = generator.stream(params, include_usage=bool(options.get("include_usage")))
        return StreamingResponse(stream, media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


def _exit_with_parent() -> None:
    """End of file on stdin: the parent closed it or died. Reads the descriptor itself: a
    daemon thread blocked in ``sys.stdin`` would abort the interpreter's own exit."""
    while os.read(_STDIN, 4096):
        pass
    os._exit(0)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m youyou.adapters.providers.local_worker")
    parser.add_argument("--model", required=True)
    parser.add_argument("--n-ctx", type=int, required=True)
    parser.add_argument("--n-threads", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    announce = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    token = sys.stdin.buffer.readline().decode().strip()
    threading.Thread(target=_exit_with_parent, name="parent-watch", daemon=True).start()

    llama_cpp = importlib.import_module("llama_cpp")  # the optional extra: no type stubs
    llama = llama_cpp.Llama(
        model_path=args.model, n_ctx=args.n_ctx, n_threads=args.n_threads, verbose=False
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    # Connections queue in the backlog from here on, so announcing before serving is safe.
    announce.write(json.dumps({"port": sock.getsockname()[1]}) + "\n")
    announce.close()
    app = create_app(Generator(llama), token)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
