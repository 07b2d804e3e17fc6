"""Agent and session configuration contract (see docs/architecture.md, 'Configuration').

``SessionPinnedConfig`` is fixed when a session is created and written as its first ledger
event; ``SessionRuntimePolicy`` is re-derived from the current ``AgentConfig`` on every resume.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.templates import DEFAULT_COMPACT_PROMPT


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EnvironmentContext(_Frozen):
    cwd: str
    shell: str
    current_date: str
    timezone: str


class MemoryMode(StrEnum):
    """When history is compacted automatically (the session's memory mode)."""

    EVERY_N_TURNS = "every_n_turns"
    CONTEXT_PERCENT = "context_percent"
    MANUAL = "manual"


class SummaryFailurePolicy(StrEnum):
    TRUNCATE = "truncate"  # kernel default: fall back to truncation
    FAIL = "fail"  # youyou.toml default (workbench, CLI): fail and keep the boundary


class CompactionPolicy(_Frozen):
    """One mechanism, several triggers; ``compact_threshold`` of AgentConfig applies too."""

    mode: MemoryMode = MemoryMode.EVERY_N_TURNS
    every_n_turns: int = 30
    context_percent: float = 0.70
    hard_limit: float = 0.95
    on_summary_failure: SummaryFailurePolicy = SummaryFailurePolicy.TRUNCATE


class AgentConfig(_Frozen):
    default_model: str
    memory_namespace: str = "default"
    system_instructions: tuple[str, ...] = ()
    personality: str | None = None
    environment_context: EnvironmentContext | None = None
    tool_timeout_ms: int = 120_000
    compact_threshold: float = 0.8
    compact_model: str | None = None
    compact_prompt: str | None = None
    max_tool_calls_per_turn: int = 50
    memory_model: str | None = None
    memory_checkpoint_interval: int = 10
    memory_max_items: int = 20
    max_active_sessions: int = 1
    compaction: CompactionPolicy = CompactionPolicy()


class SessionConfig(_Frozen):
    model_id: str | None = None
    system_prompt_override: str | None = None
    # Overrides the agent's namespace, so one agent can keep each user's memories apart.
    memory_namespace: str | None = None


class SessionPinnedConfig(_Frozen):
    model_id: str
    system_prompt_override: str | None = None
    memory_namespace: str


class SessionRuntimePolicy(_Frozen):
    tool_timeout_ms: int
    compact_threshold: float
    compact_model_id: str
    compact_prompt: str
    max_tool_calls_per_turn: int
    memory_model_id: str
    memory_checkpoint_interval: int
    memory_max_items: int


class ResolvedSessionConfig(_Frozen):
    pinned: SessionPinnedConfig
    runtime_policy: SessionRuntimePolicy


def _blank_to_none(value: str | None) -> str | None:
    return value if value is not None and value.strip() else None


def config_error(message: str) -> AgentError:
    """The error of every configuration problem, in the kernel and in ``youyou.toml``."""
    return AgentError(ErrorCode.INVALID_CONFIG, message, source=ErrorSource.AGENT_BUILDER)


def validate_agent_config(config: AgentConfig, has_model: Callable[[str], bool]) -> None:
    """Build-time checks of every ``AgentConfig`` value; the first violation is raised."""
    if not has_model(config.default_model):
        raise AgentError(
            ErrorCode.INVALID_DEFAULT_MODEL,
            f"default_model {config.default_model!r} is not offered by any provider",
            source=ErrorSource.AGENT_BUILDER,
        )
    if not config.memory_namespace.strip():
        raise config_error("memory_namespace must not be blank")
    positive = {
        "tool_timeout_ms": config.tool_timeout_ms,
        "max_tool_calls_per_turn": config.max_tool_calls_per_turn,
        "memory_checkpoint_interval": config.memory_checkpoint_interval,
        "memory_max_items": config.memory_max_items,
        "max_active_sessions": config.max_active_sessions,
    }
    for name, value in positive.items():
        if value <= 0:
            raise config_error(f"{name} must be > 0, got {value}")
    if not 0.0 < config.compact_threshold < 1.0:
        raise config_error(f"compact_threshold must be in (0, 1), got {config.compact_threshold}")
    policy = config.compaction
    if policy.every_n_turns <= 0:
        raise config_error(f"compaction.every_n_turns must be > 0, got {policy.every_n_turns}")
    for name, ratio in (
        ("context_percent", policy.context_percent),
        ("hard_limit", policy.hard_limit),
    ):
        if not 0.0 < ratio <= 1.0:
            raise config_error(f"compaction.{name} must be in (0, 1], got {ratio}")
    for name, model in (
        ("compact_model", config.compact_model),
        ("memory_model", config.memory_model),
    ):
        if model is not None and not has_model(model):
            raise config_error(f"{name} {model!r} is not offered by any provider")


def resolve_session_pinned_config(
    agent: AgentConfig, session: SessionConfig, has_model: Callable[[str], bool]
) -> SessionPinnedConfig:
    """Run once per new session; the result is persisted and never re-derived."""
    model_id = session.model_id or agent.default_model
    if not has_model(model_id):
        raise AgentError(
            ErrorCode.MODEL_NOT_SUPPORTED,
            f"model {model_id!r} is not registered",
            source=ErrorSource.SESSION_SERVICE,
        )
    namespace = _blank_to_none(session.memory_namespace) or agent.memory_namespace
    return SessionPinnedConfig(
        model_id=model_id,
        system_prompt_override=_blank_to_none(session.system_prompt_override),
        memory_namespace=namespace.strip(),
    )


def resolve_session_runtime_policy(
    agent: AgentConfig, pinned: SessionPinnedConfig, has_model: Callable[[str], bool]
) -> SessionRuntimePolicy:
    """Run on new and resumed sessions; a vanished model is MODEL_NOT_SUPPORTED."""
    compact_model_id = agent.compact_model or pinned.model_id
    memory_model_id = agent.memory_model or pinned.model_id
    for model_id in (pinned.model_id, compact_model_id, memory_model_id):
        if not has_model(model_id):
            raise AgentError(
                ErrorCode.MODEL_NOT_SUPPORTED,
                f"model {model_id!r} used by this session is no longer registered",
                source=ErrorSource.SESSION_SERVICE,
            )
    return SessionRuntimePolicy(
        tool_timeout_ms=agent.tool_timeout_ms,
        compact_threshold=agent.compact_threshold,
        compact_model_id=compact_model_id,
        compact_prompt=_blank_to_none(agent.compact_prompt) or DEFAULT_COMPACT_PROMPT,
        max_tool_calls_per_turn=agent.max_tool_calls_per_turn,
        memory_model_id=memory_model_id,
        memory_checkpoint_interval=agent.memory_checkpoint_interval,
        memory_max_items=agent.memory_max_items,
    )
