"""``[[providers]]`` and their ``[[providers.models]]``: which type of endpoint serves which
models, at what price; the ``type`` key decides which other keys an entry has."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from youyou.adapters.providers.scripted import DEMO_MODEL
from youyou.config.base import Section, check_http_url, refuse_key
from youyou.config.secrets import SecretsFromEnvironment, check_variable_name
from youyou.domain.model import ModelInfo, ProviderCapability


class ProviderType(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    LOCAL = "local"
    SCRIPTED = "scripted"


@dataclass(frozen=True, slots=True)
class ModelPrice:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        ) / 1_000_000


class ModelSettings(Section):
    id: str = Field(min_length=1)
    display_name: str | None = None
    context_window: PositiveInt
    capabilities: frozenset[ProviderCapability] = frozenset(
        {ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}
    )
    api_name: str | None = None
    """The model name sent to the API when it differs from ``id`` (ids are globally unique)."""
    input_price_per_mtok: float | None = Field(None, ge=0)
    output_price_per_mtok: float | None = Field(None, ge=0)
    """Prices per million input / output tokens (any currency, the same for every model): with
    either set, each turn's cost is stored with its usage (the other counts as 0)."""

    @property
    def price(self) -> ModelPrice | None:
        if self.input_price_per_mtok is None and self.output_price_per_mtok is None:
            return None
        return ModelPrice(self.input_price_per_mtok or 0.0, self.output_price_per_mtok or 0.0)

    def to_model_info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.id,
            display_name=self.display_name or self.id,
            context_window=self.context_window,
            capabilities=self.capabilities,
        )


class _Provider(Section):
    """What every ``[[providers]]`` entry has; its ``type`` decides which other keys exist."""

    id: str = Field(min_length=1)
    models: tuple[ModelSettings, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _no_inline_secrets(cls, data: Any) -> Any:
        inline = (
            "api_key: keys are read from the environment only; "
            'set api_key_env = "NAME_OF_THE_VARIABLE" instead'
        )
        return refuse_key(data, "api_key", inline)

    @property
    def offline_demo(self) -> bool:
        """The built-in demo answers: a scripted provider without a script of its own."""
        return False

    def model_infos(self) -> tuple[ModelInfo, ...]:
        return tuple(m.to_model_info() for m in self.models)


class _HttpProvider(_Provider, SecretsFromEnvironment):
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(60.0, gt=0)
    """The longest silence of an open stream (and of a connect or a write)."""
    first_byte_timeout_s: float = Field(30.0, gt=0)
    """How long an attempt waits for the response to start: a silent endpoint fails fast."""
    max_attempts: PositiveInt = 3
    retry_base_delay_s: float = Field(0.5, ge=0)

    @field_validator("base_url")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, name: str | None) -> str | None:
        return None if name is None else check_variable_name(name)


class OpenAIProviderSettings(_HttpProvider):
    """Any OpenAI-compatible endpoint."""

    type: Literal[ProviderType.OPENAI]
    stream_usage: bool = True


class AnthropicProviderSettings(_HttpProvider):
    type: Literal[ProviderType.ANTHROPIC]
    max_tokens: PositiveInt = 4096


class LocalProviderSettings(_Provider):
    """A GGUF model run by llama.cpp in a worker process."""

    type: Literal[ProviderType.LOCAL]
    model_path: str | None = None
    n_ctx: PositiveInt = 4096


class ScriptedProviderSettings(_Provider):
    """Answers replayed from ``script_path``, or the offline demo without one."""

    type: Literal[ProviderType.SCRIPTED]
    script_path: str | None = None
    models: tuple[ModelSettings, ...] = ()

    @property
    def offline_demo(self) -> bool:
        return self.script_path is None

    def model_infos(self) -> tuple[ModelInfo, ...]:
        return super().model_infos() or (DEMO_MODEL,)


ProviderSettings = Annotated[
    OpenAIProviderSettings
    | AnthropicProviderSettings
    | LocalProviderSettings
    | ScriptedProviderSettings,
    Field(discriminator="type"),
]
"""One ``[[providers]]`` entry: a key that its ``type`` does not have is an error."""
PROVIDER_TYPES: dict[ProviderType, type[_Provider]] = {
    ProviderType.OPENAI: OpenAIProviderSettings,
    ProviderType.ANTHROPIC: AnthropicProviderSettings,
    ProviderType.LOCAL: LocalProviderSettings,
    ProviderType.SCRIPTED: ScriptedProviderSettings,
}


DEMO_PROVIDER = ScriptedProviderSettings(id="scripted", type=ProviderType.SCRIPTED)
