"""A provider error says which endpoint failed (provider id and base URL, never a key or
credentials in the URL), and a used-up quota is not retried: waiting does not heal it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_kit import Cli, plain
from fakes.anthropic_server import FakeAnthropicServer, anthropic_error
from fakes.chat import FAST_RETRY, collect, ended_with_error, track, user
from fakes.openai_server import FakeOpenAIServer, openai_error
from port_kit import free_port
from youyou.adapters.providers import errors
from youyou.adapters.providers.anthropic import AnthropicProvider
from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.errors import RetryPolicy
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.domain.content import TextBlock
from youyou.domain.model import ChatRequest, ModelInfo, ProviderErrorKind
from youyou.ports.model_provider import ModelProvider

MODEL = ModelInfo(model_id="m", display_name="m", context_window=8000)
REQUEST = ChatRequest(model_id="m", system_prompt="", messages=(user(TextBlock(text="hi")),))
KEY = "sk-test-never-shown"

pytestmark = pytest.mark.usefixtures("close_providers")


def _provider(kind: str, url: str, retry: RetryPolicy = FAST_RETRY) -> ModelProvider:
    endpoint = Endpoint(base_url=url, api_key=KEY, timeout_s=10, retry=retry)
    if kind == "openai":
        return track(OpenAICompatProvider(provider_id="gw", models=[MODEL], endpoint=endpoint))
    return track(AnthropicProvider(provider_id="gw", models=[MODEL], endpoint=endpoint))


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_refused_connection_names_the_endpoint_and_the_cause(kind: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    provider = _provider(kind, url, RetryPolicy(2, 0.01, 0.01))

    error = ended_with_error(await collect(provider, REQUEST))

    assert error.kind is ProviderErrorKind.TRANSPORT
    assert error.message.startswith(f"provider 'gw' at {url}: APIConnectionError: ")
    assert "(after 2 attempts)" in error.message
    assert KEY not in error.message


async def test_an_openai_404_names_the_endpoint(openai_server: FakeOpenAIServer) -> None:
    openai_server.default = lambda _: openai_error(404, "The model does not exist")

    error = ended_with_error(await collect(_provider("openai", openai_server.base_url), REQUEST))

    assert error.message == (
        f"provider 'gw' at {openai_server.base_url}: HTTP 404: The model does not exist"
    )


async def test_an_anthropic_404_names_the_endpoint(anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.default = lambda _: anthropic_error(404, "not_found_error", "model: m")

    provider = _provider("anthropic", anthropic_server.base_url)
    error = ended_with_error(await collect(provider, REQUEST))

    assert error.message == f"provider 'gw' at {anthropic_server.base_url}: HTTP 404: model: m"


def test_credentials_in_the_url_are_not_shown() -> None:
    label = errors.endpoint_label("gw", "https://user:hunter2@gw.example:8443/v1/?api_key=abc#x")
    assert label == "provider 'gw' at https://gw.example:8443/v1"


async def test_a_used_up_quota_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.default = lambda _: openai_error(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        error_type="insufficient_quota",
        code="insufficient_quota",
    )

    error = ended_with_error(await collect(_provider("openai", openai_server.base_url), REQUEST))

    assert not error.retryable
    assert len(openai_server.requests) == 1
    assert "quota is used up" in error.message and "after" not in error.message


def test_youyou_chat_names_the_endpoint_that_failed(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/v1"
    cli.write_config(
        extra=f'\n[agent]\ndefault_model = "gpt"\n'
        f'\n[[providers]]\nid = "corp-gw"\ntype = "openai"\nbase_url = "{url}"\n'
        "max_attempts = 1\n"
        '\n[[providers.models]]\nid = "gpt"\ncontext_window = 8192\n'
    )

    result = cli.run("chat", "-m", "why is checkout down?")

    assert result.returncode == 1
    err = " ".join(plain(result.stderr).split())
    assert f"PROVIDER_ERROR: provider 'corp-gw' at {url}: APIConnectionError" in err
    assert "Traceback" not in err
