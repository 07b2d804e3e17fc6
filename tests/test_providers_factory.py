"""Providers built from settings talk to their endpoints with the configured key and names."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_server import text_reply as anthropic_text
from fakes.chat import track
from fakes.openai_server import FakeOpenAIServer
from fakes.openai_server import text_reply as openai_text
from youyou.adapters.providers.anthropic import AnthropicProvider
from youyou.adapters.providers.factory import build_providers
from youyou.adapters.providers.openai_compat import OpenAICompatProvider
from youyou.adapters.providers.scripted import ScriptedProvider
from youyou.config import parse_settings
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import TextBlock
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import (
    ChatEvent,
    ChatRequest,
    ModelMessage,
    ModelMessageRole,
    TextDelta,
)
from youyou.ports.model_provider import ModelProvider

pytestmark = pytest.mark.usefixtures("close_providers")


def ask(model_id: str, text: str = "hello") -> ChatRequest:
    return ChatRequest(
        model_id=model_id,
        system_prompt="",
        messages=(ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text=text),)),),
    )


async def answer(provider: ModelProvider, model_id: str) -> str:
    events: list[ChatEvent] = [e async for e in provider.chat(ask(model_id), CancellationToken())]
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_no_configuration_builds_the_offline_demo() -> None:
    (provider,) = build_providers(parse_settings({}), environ={})

    assert isinstance(provider, ScriptedProvider)
    assert [m.model_id for m in provider.models()] == ["youyou-demo"]
    assert "offline demo" in await answer(provider, "youyou-demo")


async def test_http_providers_use_env_keys_headers_and_api_names() -> None:
    with (
        FakeOpenAIServer(openai_text("from openai")) as oai,
        FakeAnthropicServer(anthropic_text("from claude")) as ant,
    ):
        settings = parse_settings(
            {
                "providers": [
                    {
                        "id": "local-vllm",
                        "type": "openai",
                        "base_url": oai.base_url,
                        "api_key_env": "VLLM_KEY",
                        "headers": {"X-Team": "sre"},
                        "max_attempts": 1,
                        "models": [
                            {
                                "id": "qwen",
                                "api_name": "Qwen/Qwen2.5-7B",
                                "context_window": 32768,
                                "display_name": "Qwen 7B",
                            }
                        ],
                    },
                    {
                        "id": "claude",
                        "type": "anthropic",
                        "base_url": ant.base_url,
                        "api_key_env": "CLAUDE_KEY",
                        "max_tokens": 1000,
                        "models": [{"id": "sonnet", "context_window": 200000}],
                    },
                ]
            }
        )

        openai_provider, anthropic_provider = map(
            track,
            build_providers(settings, environ={"VLLM_KEY": "k-vllm", "CLAUDE_KEY": "k-claude"}),
        )

        assert isinstance(openai_provider, OpenAICompatProvider)
        assert isinstance(anthropic_provider, AnthropicProvider)
        assert openai_provider.provider_id == "local-vllm"
        assert openai_provider.models()[0].display_name == "Qwen 7B"
        assert await answer(openai_provider, "qwen") == "from openai"
        assert await answer(anthropic_provider, "sonnet") == "from claude"

    sent = oai.requests[0]
    assert sent.json["model"] == "Qwen/Qwen2.5-7B"
    assert sent.headers["authorization"] == "Bearer k-vllm"
    assert sent.headers["x-team"] == "sre"
    claude = ant.requests[0]
    assert claude.json["model"] == "sonnet"
    assert claude.json["max_tokens"] == 1000
    assert "k-claude" in (claude.headers.get("x-api-key") or claude.headers["authorization"])


def test_a_missing_key_variable_is_a_config_error() -> None:
    settings = parse_settings(
        {
            "providers": [
                {
                    "id": "openai",
                    "type": "openai",
                    "api_key_env": "OPENAI_API_KEY",
                    "models": [{"id": "gpt", "context_window": 1000}],
                }
            ]
        }
    )

    with pytest.raises(AgentError) as info:
        build_providers(settings, environ={})

    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "providers[0].api_key_env: environment variable OPENAI_API_KEY is not set" in str(
        info.value
    )


async def test_scripted_provider_from_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "scripted answer"}]}))
    settings = parse_settings(
        {
            "providers": [
                {
                    "id": "demo",
                    "type": "scripted",
                    "script_path": str(script),
                    "models": [{"id": "script-model", "context_window": 4096}],
                }
            ]
        }
    )

    (provider,) = build_providers(settings, environ={})

    assert provider.provider_id == "demo"
    assert [m.model_id for m in provider.models()] == ["script-model"]
    assert await answer(provider, "script-model") == "scripted answer"


def test_local_provider_checks_its_model_file(tmp_path: Path) -> None:
    settings = parse_settings(
        {
            "providers": [
                {
                    "id": "llama",
                    "type": "local",
                    "model_path": str(tmp_path / "missing.gguf"),
                    "models": [{"id": "tiny", "context_window": 2048}],
                }
            ]
        }
    )

    with pytest.raises(AgentError) as info:
        build_providers(settings, environ={})

    assert info.value.code is ErrorCode.INVALID_CONFIG
    if importlib.util.find_spec("llama_cpp") is None:
        assert "optional extra" in info.value.message
    else:
        assert "providers[0].model_path: no such file" in info.value.message
