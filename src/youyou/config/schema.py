"""The whole ``youyou.toml``: every section with its defaults, and the checks that span
sections (unique ids, models that exist)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from youyou.adapters.private_files import data_dir
from youyou.config.base import Section, check_http_url
from youyou.config.knowledge import KnowledgeSourceSettings
from youyou.config.mcp import McpServerSettings
from youyou.config.providers import DEMO_PROVIDER, ModelPrice, ProviderSettings
from youyou.config.server import ServerSettings
from youyou.domain.config import (
    AgentConfig,
    AgentConfigBase,
    CompactionPolicy,
    CompactionPolicyBase,
    Count,
    MemoryMode,
    SummaryFailurePolicy,
)


def default_database_url() -> str:
    path = data_dir() / "youyou.db"
    return f"sqlite+aiosqlite:///{path}"


class DatabaseSettings(Section):
    url: str = Field(default_factory=default_database_url, min_length=1)
    sqlite_synchronous: Literal["normal", "full"] = "normal"
    """``normal``: a commit survives a killed process, not a power cut; ``full``: both."""
    lease_ttl_s: float = Field(30.0, gt=0)
    """The session lease of a ``youyou chat`` or ``youyou serve`` that stopped (on another
    machine) expires after this long; one of this machine is taken over at once."""


# The CLI and the server keep one active session per open conversation; the kernel's own
# default of 1 is for embedders.
PRODUCT_MAX_ACTIVE_SESSIONS = 10_000


class AgentSettings(AgentConfigBase):
    """``[agent]``: the kernel's ``AgentConfig`` fields with their bounds and defaults, except
    that ``default_model`` defaults to the first model and ``max_active_sessions`` to
    ``PRODUCT_MAX_ACTIVE_SESSIONS``."""

    default_model: str | None = None
    max_active_sessions: Count = PRODUCT_MAX_ACTIVE_SESSIONS


class MemorySettings(Section):
    enabled: bool = True
    """Long-term memory: extraction at checkpoints and recall into prompts."""
    close_timeout_s: float = Field(10.0, gt=0)
    """How long ``youyou chat`` waits for the memory extraction of a session it closes; what
    it did not extract stays in the ledger for when the session is resumed and closed again."""


# Names users type (workbench, CLI) ↔ the kernel's modes; ``youyou.toml`` also takes the kernel's.
MEMORY_MODE_NAMES: dict[str, MemoryMode] = {
    "every_30_turns": MemoryMode.EVERY_N_TURNS,
    "context_70_percent": MemoryMode.CONTEXT_PERCENT,
    "manual": MemoryMode.MANUAL,
}


def memory_mode_name(mode: MemoryMode) -> str:
    return next(name for name, value in MEMORY_MODE_NAMES.items() if value is mode)


class CompactionSettings(CompactionPolicyBase):
    """The default trigger of new sessions and the thresholds of all triggers: the kernel's
    ``CompactionPolicy`` fields with their bounds and defaults.

    ``mode`` takes the workbench names (``every_30_turns``, ``context_70_percent``,
    ``manual``) or the kernel's (``every_n_turns``, ``context_percent``). The workbench never
    drops facts silently, so a failed summary keeps the boundary (``on_summary_failure``).
    """

    on_summary_failure: SummaryFailurePolicy = SummaryFailurePolicy.FAIL

    @model_validator(mode="before")
    @classmethod
    def _mode_alias(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("mode") in MEMORY_MODE_NAMES:
            return {**data, "mode": MEMORY_MODE_NAMES[data["mode"]]}
        return data

    def policy(self) -> CompactionPolicy:
        return CompactionPolicy(**self.model_dump())


class TelemetrySettings(Section):
    """``[telemetry]``: OpenTelemetry traces (docs/telemetry.md), off by default; on, it
    needs the ``otel`` extra."""

    enabled: bool = False
    otlp_endpoint: str | None = None
    """OTLP over HTTP, e.g. ``http://127.0.0.1:4318/v1/traces``; unset: the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables."""
    service_name: str = Field("youyou", min_length=1)
    sample_ratio: float = Field(1.0, ge=0, le=1)
    """Share of traces kept, decided once per trace (a kept request keeps all its spans)."""
    record_content: bool = False
    """Put messages, prompts, tool arguments and results into spans: they may hold secrets
    and personal data, so only where the trace store may keep them."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)


class SkillsSettings(Section):
    """``dir``: every ``*/SKILL.md`` under it is loaded through the shared validator."""

    dir: Path | None = None


class Settings(Section):
    server: ServerSettings = ServerSettings()
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    agent: AgentSettings = AgentSettings()
    memory: MemorySettings = MemorySettings()
    compaction: CompactionSettings = CompactionSettings()
    skills: SkillsSettings = SkillsSettings()
    providers: tuple[ProviderSettings, ...] = (DEMO_PROVIDER,)
    mcp_servers: tuple[McpServerSettings, ...] = ()
    knowledge: tuple[KnowledgeSourceSettings, ...] = ()
    telemetry: TelemetrySettings = TelemetrySettings()

    @model_validator(mode="after")
    def _references(self) -> Self:
        model_ids = self.model_ids()
        _unique("providers[].id", [p.id for p in self.providers])
        _unique("providers[].models[].id", model_ids)
        _unique("mcp_servers[].id", [s.id for s in self.mcp_servers])
        _unique("knowledge[].id", [k.id for k in self.knowledge])
        if not self.providers:
            raise ValueError("providers: at least one [[providers]] entry is required")
        for key in ("default_model", "compact_model", "memory_model"):
            model = getattr(self.agent, key)
            if model is not None and model not in model_ids:
                raise ValueError(
                    f"agent.{key}: {model!r} is not a model of any [[providers]] entry "
                    f"(known: {', '.join(model_ids)})"
                )
        return self

    def access_lists(self) -> dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]]:
        """Every entry with a ``users`` or a ``groups`` list (or both), keyed by where it is
        (``mcp_servers.ID``, ``knowledge.ID``): its (users, groups)."""
        entries: list[tuple[str, McpServerSettings | KnowledgeSourceSettings]] = [
            *((f"mcp_servers.{s.id}", s) for s in self.mcp_servers),
            *((f"knowledge.{k.id}", k) for k in self.knowledge),
        ]
        return {
            where: (entry.users, entry.groups)
            for where, entry in entries
            if entry.users is not None or entry.groups is not None
        }

    def model_prices(self) -> dict[str, ModelPrice]:
        """The models that have prices configured, by id."""
        return {
            model.id: model.price
            for provider in self.providers
            for model in provider.models
            if model.price is not None
        }

    def model_ids(self) -> list[str]:
        return [m.model_id for p in self.providers for m in p.model_infos()]

    @property
    def default_model(self) -> str:
        return self.agent.default_model or self.model_ids()[0]

    def agent_config(self) -> AgentConfig:
        """The kernel's ``AgentConfig`` built from ``[agent]``."""
        values = self.agent.model_dump(exclude={"default_model"})
        return AgentConfig(
            default_model=self.default_model, compaction=self.compaction.policy(), **values
        )


def _unique(key: str, values: list[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{key}: {value!r} appears more than once")
        seen.add(value)
