"""Secrets never live in youyou.toml, and a secret written there is never repeated in an error.

Configuration errors are printed into terminals and CI logs: a key pasted where a variable name
belongs must be refused without echoing it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_kit import Cli
from fakes.chat import track
from fakes.openai_server import FakeOpenAIServer, text_reply
from youyou.adapters.providers.factory import build_providers
from youyou.config import OpenAIProviderSettings, parse_settings
from youyou.domain.cancel import CancellationToken
from youyou.domain.content import TextBlock
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import ChatRequest, ModelMessage, ModelMessageRole

pytestmark = pytest.mark.usefixtures("close_providers")

KEYS = [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "sk-ant-api03-Zz9yXx8wVv7uUt6sSr5qQp4oOn3m",
    "sk-1234567890abcdef",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AbCdEf0123456789GhIjKlMnOpQrStUv",  # long and random-looking, though a valid name
    "my key",  # not a variable name at all
]


def _provider(**extra: object) -> dict[str, object]:
    return {
        "id": "gateway",
        "type": "openai",
        "models": [{"id": "gpt", "context_window": 8192}],
        **extra,
    }


def _refusal(**extra: object) -> str:
    with pytest.raises(AgentError) as info:
        parse_settings({"providers": [_provider(**extra)]})
    assert info.value.code is ErrorCode.INVALID_CONFIG
    return info.value.message


@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_api_key_env_is_refused_without_printing_it(key: str) -> None:
    message = _refusal(api_key_env=key)

    assert "providers[0].api_key_env" in message
    assert "this looks like a key, not a variable name" in message
    assert key not in message
    assert key[:12] not in message


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "_PRIVATE", "azure_openai_key", "KEY2"])
def test_variable_names_are_accepted(name: str) -> None:
    settings = parse_settings({"providers": [_provider(api_key_env=name)]})
    (provider,) = settings.providers
    assert isinstance(provider, OpenAIProviderSettings)
    assert provider.api_key_env == name


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Authorization", "Bearer sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
        ("authorization", "whatever it holds"),
        ("X-Api-Key", "0123"),
        ("X-Gateway-Token", "sk-1234567890abcdef"),
    ],
)
def test_a_secret_header_in_the_file_is_refused_without_printing_it(
    header: str, value: str
) -> None:
    message = _refusal(headers={header: value})

    assert f"providers[0].headers: {header}: secrets are read from the environment" in message
    assert f'headers_env = {{ "{header}" = "NAME_OF_THE_VARIABLE" }}' in message
    assert value not in message


def test_a_key_in_headers_env_is_refused_without_printing_it() -> None:
    key = KEYS[0]
    message = _refusal(headers_env={"Authorization": f"Bearer {key}"})

    assert "providers[0].headers_env: Authorization: this looks like a key" in message
    assert key not in message


def test_mcp_servers_follow_the_same_rule() -> None:
    with pytest.raises(AgentError) as info:
        parse_settings(
            {
                "mcp_servers": [
                    {"name": "tickets", "url": "http://127.0.0.1:9/mcp", "headers": {"Cookie": "1"}}
                ]
            }
        )
    assert "mcp_servers[0].headers: Cookie: secrets are read from the environment" in str(
        info.value
    )


async def test_headers_env_sends_the_variable_s_value() -> None:
    with FakeOpenAIServer(text_reply("ok")) as server:
        settings = parse_settings(
            {
                "providers": [
                    _provider(
                        base_url=server.base_url,
                        max_attempts=1,
                        headers={"X-Team": "sre"},
                        headers_env={"Authorization": "GATEWAY_AUTH"},
                    )
                ]
            }
        )
        (provider,) = map(
            track, build_providers(settings, environ={"GATEWAY_AUTH": "Bearer from-env"})
        )
        request = ChatRequest(
            model_id="gpt",
            system_prompt="",
            messages=(ModelMessage(role=ModelMessageRole.USER, content=(TextBlock(text="hi"),)),),
        )
        _ = [event async for event in provider.chat(request, CancellationToken())]

    sent = server.requests[0].headers
    assert sent["authorization"] == "Bearer from-env"
    assert sent["x-team"] == "sre"


def test_an_unset_header_variable_is_a_config_error() -> None:
    settings = parse_settings({"providers": [_provider(headers_env={"Authorization": "NOPE"})]})

    with pytest.raises(AgentError) as info:
        build_providers(settings, environ={})

    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "providers[0].headers_env.Authorization: environment variable NOPE is not set" in str(
        info.value
    )


def test_the_command_line_never_echoes_a_pasted_key(tmp_path: Path) -> None:
    cli, key = Cli(tmp_path), KEYS[0]
    cli.write_config(
        extra=f'\n[[providers]]\nid = "openai"\ntype = "openai"\napi_key_env = "{key}"\n'
        '[[providers.models]]\nid = "gpt"\ncontext_window = 8192\n'
    )
    result = cli.run("chat", "-m", "hi")

    assert result.returncode == 2
    assert "this looks like a key, not a variable name" in " ".join(result.stderr.split())
    assert key not in "".join((result.stdout + result.stderr).split())  # wrapped lines too
    assert "Traceback" not in result.stderr
