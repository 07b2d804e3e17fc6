"""Agent and session configuration contract (see docs/architecture.md, 'Configuration').

``SessionPinnedConfig`` is fixed when a session is created and written as its first ledger
event; ``SessionRuntimePolicy`` is re-derived from the current ``AgentConfig`` on every resume.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.templates import DEFAULT_COMPACT_PROMPT, Language


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def config_error(message: str) -> AgentError:
    """The error of every configuration problem, in the kernel and in ``youyou.toml``."""
    return AgentError(ErrorCode.INVALID_CONFIG, message, source=ErrorSource.AGENT_BUILDER)


def key_path(loc: tuple[int | str, ...]) -> str:
    """``("providers", 0, "models")`` → ``providers[0].models``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def describe_problem(error: ErrorDetails) -> str:
    """One validation problem as ``key.path: message``."""
    where = key_path(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


class _KernelConfig(_Frozen):
    """A value outside its bounds is ``INVALID_CONFIG`` naming the field, when it is built."""

    @model_validator(mode="wrap")
    @classmethod
    def _invalid_config(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(data)
        except ValidationError as exc:
            problems = "; ".join(describe_problem(error) for error in exc.errors())
            raise config_error(f"invalid {cls.__name__}: {problems}") from None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Count = Annotated[int, Field(gt=0)]
"""A number of things, or a duration in milliseconds: at least 1."""
Share = Annotated[float, Field(gt=0.0, le=1.0)]
"""A share of the model's context window."""
NonBlank = Annotated[str, AfterValidator(_not_blank)]


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


class CompactionPolicyBase(_Frozen):
    """The compaction triggers with their bounds and defaults: the kernel's ``CompactionPolicy``
    and the ``[compaction]`` table of ``youyou.toml`` are both built on these fields."""

    mode: MemoryMode = MemoryMode.EVERY_N_TURNS
    every_n_turns: Count = 30
    context_percent: Share = 0.70
    hard_limit: Share = 0.95
    on_summary_failure: SummaryFailurePolicy = SummaryFailurePolicy.TRUNCATE

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.context_percent >= self.hard_limit:
            raise ValueError("context_percent must be below hard_limit")
        return self


class CompactionPolicy(_KernelConfig, CompactionPolicyBase):
    """One mechanism, several triggers; ``compact_threshold`` of AgentConfig applies too."""


class AgentConfigBase(_Frozen):
    """The agent-wide values with their bounds and defaults, shared by ``AgentConfig`` and the
    ``[agent]`` table of ``youyou.toml`` (which only changes ``max_active_sessions``' default)."""

    memory_namespace: NonBlank = "default"
    system_instructions: tuple[str, ...] = ()
    personality: str | None = None
    tool_timeout_ms: Count = 120_000
    compact_threshold: float = Field(0.8, gt=0.0, lt=1.0)
    compact_model: str | None = None
    compact_prompt: str | None = None
    max_tool_calls_per_turn: Count = 50
    memory_model: str | None = None
    memory_checkpoint_interval: Count = 10
    memory_max_items: Count = 20
    max_active_sessions: Count = 1
    model_wait_notice_ms: Count = 5_000
    """While a model request has not answered, a ``model_waiting`` event this often."""
    language: Language = Language.EN
    """The language of the fixed texts the kernel shows the model (markers, instructions)."""
    approval_timeout_s: float = Field(900, ge=0)
    """How long a tool call waits for a person's approval before it counts as denied; 0 waits
    without limit."""


class AgentConfig(_KernelConfig, AgentConfigBase):
    default_model: str
    environment_context: EnvironmentContext | None = None
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


def validate_agent_config(config: AgentConfig, has_model: Callable[[str], bool]) -> None:
    """Build-time checks: the models named must be offered; the bounds are checked again
    because ``model_copy(update=…)`` skips validation. The first violation is raised."""
    if not has_model(config.default_model):
        raise AgentError(
            ErrorCode.INVALID_DEFAULT_MODEL,
            f"default_model {config.default_model!r} is not offered by any provider",
            source=ErrorSource.AGENT_BUILDER,
        )
    type(config).model_validate(config.model_dump())
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
