"""Model providers built from ``[[providers]]`` settings, with keys from the environment."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from youyou.adapters.providers.base import Endpoint
from youyou.adapters.providers.errors import RetryPolicy
from youyou.adapters.providers.scripted import ScriptedProvider
from youyou.config import (
    AnthropicProviderSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    ScriptedProviderSettings,
    Settings,
)
from youyou.domain.config import config_error
from youyou.domain.model import ModelInfo
from youyou.ports.model_provider import ModelProvider


def resolve_api_key(
    provider: OpenAIProviderSettings | AnthropicProviderSettings,
    index: int,
    environ: Mapping[str, str],
) -> str | None:
    """The key named by ``api_key_env``; a named but unset variable is a configuration error."""
    if provider.api_key_env is None:
        return None
    key = environ.get(provider.api_key_env)
    if not key:
        raise config_error(
            f"providers[{index}].api_key_env: environment variable {provider.api_key_env} "
            f"is not set (provider {provider.id!r})"
        )
    return key


def build_provider(
    provider: ProviderSettings, index: int, environ: Mapping[str, str]
) -> ModelProvider:
    models = provider.model_infos()
    if isinstance(provider, ScriptedProviderSettings):
        if provider.script_path:
            return ScriptedProvider.from_file(
                provider.script_path, provider_id=provider.id, models=models
            )
        return ScriptedProvider.demo(provider_id=provider.id, models=models)
    if isinstance(provider, LocalProviderSettings):
        return _local_provider(provider, index, models)
    endpoint = Endpoint(
        base_url=provider.base_url,
        api_key=resolve_api_key(provider, index, environ),
        headers=provider.resolved_headers(environ, f"providers[{index}]"),
        timeout_s=provider.timeout_s,
        first_byte_timeout_s=provider.first_byte_timeout_s,
        retry=RetryPolicy(
            max_attempts=provider.max_attempts, base_delay_s=provider.retry_base_delay_s
        ),
        api_model_names={m.id: m.api_name for m in provider.models if m.api_name},
    )
    # The SDKs are imported only for the provider types in use: together they add seconds to
    # the start of every command otherwise.
    if isinstance(provider, AnthropicProviderSettings):
        from youyou.adapters.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            provider_id=provider.id,
            models=models,
            endpoint=endpoint,
            max_tokens=provider.max_tokens,
        )
    from youyou.adapters.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(
        provider_id=provider.id,
        models=models,
        endpoint=endpoint,
        stream_usage=provider.stream_usage,
    )


def _local_provider(
    provider: LocalProviderSettings, index: int, models: Sequence[ModelInfo]
) -> ModelProvider:
    """Check the extra and the model file now, so a bad setup fails at startup."""
    from youyou.adapters.providers.local import LocalLlamaProvider, packaged_model_path

    if importlib.util.find_spec("llama_cpp") is None:
        raise config_error(
            f"providers[{index}]: type = 'local' needs the optional extra: "
            "pip install 'youyou-agent[local]'"
        )
    try:
        path = Path(provider.model_path) if provider.model_path else packaged_model_path()
    except FileNotFoundError as exc:
        raise config_error(f"providers[{index}].model_path: {exc}") from exc
    if not path.is_file():
        raise config_error(f"providers[{index}].model_path: no such file: {path}")
    return LocalLlamaProvider(
        provider_id=provider.id,
        models=models,
        model_path=path,
        n_ctx=provider.n_ctx,
    )


def build_providers(
    settings: Settings, *, environ: Mapping[str, str] | None = None
) -> list[ModelProvider]:
    """One provider per ``[[providers]]`` entry, in file order."""
    env = os.environ if environ is None else environ
    return [build_provider(p, i, env) for i, p in enumerate(settings.providers)]
