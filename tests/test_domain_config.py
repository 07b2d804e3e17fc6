import pytest

from youyou.domain.config import (
    AgentConfig,
    CompactionPolicy,
    SessionConfig,
    resolve_session_pinned_config,
    resolve_session_runtime_policy,
    validate_agent_config,
)
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.templates import DEFAULT_COMPACT_PROMPT

MODELS = {"a", "b", "c"}


def has(model_id: str) -> bool:
    return model_id in MODELS


def _policy(**changes: object) -> CompactionPolicy:
    """A policy with values its own validation would refuse, as ``model_copy`` allows."""
    return CompactionPolicy().model_copy(update=changes)


def test_defaults_are_the_documented_ones() -> None:
    config = AgentConfig(default_model="a")
    assert (config.tool_timeout_ms, config.compact_threshold, config.max_tool_calls_per_turn) == (
        120_000,
        0.8,
        50,
    )
    assert (config.memory_checkpoint_interval, config.memory_max_items) == (10, 20)
    assert config.max_active_sessions == 1
    policy = resolve_session_runtime_policy(
        config, resolve_session_pinned_config(config, SessionConfig(), has), has
    )
    assert policy.compact_model_id == policy.memory_model_id == "a"
    assert policy.compact_prompt == DEFAULT_COMPACT_PROMPT


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"default_model": "zzz"}, ErrorCode.INVALID_DEFAULT_MODEL),
        ({"memory_namespace": "  "}, ErrorCode.INVALID_CONFIG),
        ({"tool_timeout_ms": 0}, ErrorCode.INVALID_CONFIG),
        ({"max_tool_calls_per_turn": 0}, ErrorCode.INVALID_CONFIG),
        ({"memory_checkpoint_interval": 0}, ErrorCode.INVALID_CONFIG),
        ({"memory_max_items": -1}, ErrorCode.INVALID_CONFIG),
        ({"max_active_sessions": 0}, ErrorCode.INVALID_CONFIG),
        ({"compact_threshold": 0.0}, ErrorCode.INVALID_CONFIG),
        ({"compact_threshold": 1.0}, ErrorCode.INVALID_CONFIG),
        ({"compact_model": "zzz"}, ErrorCode.INVALID_CONFIG),
        ({"memory_model": "zzz"}, ErrorCode.INVALID_CONFIG),
        ({"compaction": _policy(hard_limit=1.5)}, ErrorCode.INVALID_CONFIG),
        ({"compaction": _policy(every_n_turns=0)}, ErrorCode.INVALID_CONFIG),
    ],
)
def test_invalid_configuration_is_rejected(changes: dict[str, object], code: ErrorCode) -> None:
    config = AgentConfig(default_model="a").model_copy(update=changes)
    with pytest.raises(AgentError) as info:
        validate_agent_config(config, has)
    assert info.value.code is code


def test_pinned_config_normalizes_and_is_independent_of_later_agent_config() -> None:
    config = AgentConfig(default_model="a", memory_namespace="  team ")
    pinned = resolve_session_pinned_config(config, SessionConfig(system_prompt_override="   "), has)
    assert pinned.model_id == "a"
    assert pinned.system_prompt_override is None
    assert pinned.memory_namespace == "team"
    explicit = resolve_session_pinned_config(config, SessionConfig(model_id="b"), has)
    assert explicit.model_id == "b"


@pytest.mark.parametrize(
    ("given", "pinned"),
    [(" user:1 ", "user:1"), (None, "team"), ("", "team"), ("   ", "team")],
)
def test_a_session_namespace_overrides_the_agent_namespace(given: str | None, pinned: str) -> None:
    config = AgentConfig(default_model="a", memory_namespace=" team ")
    session = SessionConfig(memory_namespace=given)
    assert resolve_session_pinned_config(config, session, has).memory_namespace == pinned


def test_unknown_session_model_is_not_supported() -> None:
    with pytest.raises(AgentError) as info:
        resolve_session_pinned_config(
            AgentConfig(default_model="a"), SessionConfig(model_id="zzz"), has
        )
    assert info.value.code is ErrorCode.MODEL_NOT_SUPPORTED


def test_runtime_policy_follows_current_agent_config() -> None:
    pinned = resolve_session_pinned_config(AgentConfig(default_model="a"), SessionConfig(), has)
    changed = AgentConfig(
        default_model="b", compact_model="c", tool_timeout_ms=5, compact_prompt="  "
    )
    policy = resolve_session_runtime_policy(changed, pinned, has)
    assert policy.compact_model_id == "c"
    assert policy.memory_model_id == "a"  # defaults to the pinned model, not default_model
    assert policy.tool_timeout_ms == 5
    assert policy.compact_prompt == DEFAULT_COMPACT_PROMPT
    with pytest.raises(AgentError) as info:
        resolve_session_runtime_policy(changed, pinned, lambda m: m != "a")
    assert info.value.code is ErrorCode.MODEL_NOT_SUPPORTED
