"""One source of configuration truth: the kernel's models hold the bounds and defaults,
``youyou.toml`` accepts exactly what the kernel accepts, and the documented defaults are the
real ones (the tables in README.md and docs/providers.md are read and compared)."""

from __future__ import annotations

import ast
import re
import tomllib
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from youyou.config import (
    MEMORY_MODE_NAMES,
    AgentSettings,
    AnthropicProviderSettings,
    CompactionSettings,
    LocalProviderSettings,
    MemorySettings,
    ModelSettings,
    OpenAIProviderSettings,
    ProviderType,
    ScriptedProviderSettings,
    TelemetrySettings,
    parse_settings,
)
from youyou.domain.config import AgentConfig, CompactionPolicy
from youyou.domain.errors import AgentError, ErrorCode

ROOT = Path(__file__).resolve().parent.parent
PROVIDER_MODELS: dict[ProviderType, type[BaseModel]] = {
    ProviderType.OPENAI: OpenAIProviderSettings,
    ProviderType.ANTHROPIC: AnthropicProviderSettings,
    ProviderType.LOCAL: LocalProviderSettings,
    ProviderType.SCRIPTED: ScriptedProviderSettings,
}
DESCRIBED = object()  # a default told in words ("the session's model"), not a value


def table_after(path: Path, heading: str) -> list[list[str]]:
    """The rows (cells without the pipes) of the first Markdown table after the line that
    starts with ``heading``; the header and separator rows are left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    return rows[2:]


def documented(cell: str) -> Any:
    """A default as the docs write it: one backticked literal, ``none``, or words."""
    literal = re.fullmatch(r"`([^`]*)`", cell)
    if literal is None:
        return None if cell == "none" or cell.startswith("none ") else DESCRIBED
    text = literal.group(1)
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare enum value such as every_n_turns


def comparable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, frozenset | set):
        return sorted(comparable(v) for v in value)
    if isinstance(value, tuple | list):
        return [comparable(v) for v in value]
    if isinstance(value, str) and value in MEMORY_MODE_NAMES:
        return MEMORY_MODE_NAMES[value].value
    return value


def real_default(model: type[BaseModel], key: str) -> Any:
    return model.model_fields[key].get_default(call_default_factory=True, validated_data={})


def assert_documented(model: type[BaseModel], key: str, cell: str) -> None:
    real, written = real_default(model, key), documented(cell)
    if isinstance(real, frozenset) and isinstance(written, list):
        written = set(written)  # a set written as a TOML array
    if written is DESCRIBED:
        assert real in (None, PydanticUndefined), (
            f"{model.__name__}.{key}: the docs describe {cell!r}, the default is {real!r}"
        )
    else:
        assert comparable(written) == comparable(real), (
            f"{model.__name__}.{key}: the docs say {cell}, the default is {real!r}"
        )


def keyed_rows(rows: list[list[str]]) -> list[tuple[str, str]]:
    """``(key, default cell)`` pairs; a row naming several keys splits its defaults on ', '."""
    pairs: list[tuple[str, str]] = []
    for row in rows:
        keys = re.findall(r"`([^`]+)`", row[0])
        defaults = row[1].split(", ") if len(keys) > 1 else [row[1]]
        assert len(keys) == len(defaults), row
        pairs.extend(zip(keys, defaults, strict=True))
    return pairs


def test_the_readme_shows_the_kernels_defaults() -> None:
    rows = keyed_rows(table_after(ROOT / "README.md", "`AgentConfig` (kernel) defaults"))
    seen = set()
    for key, cell in rows:
        model: type[BaseModel] = AgentConfig
        if key.startswith("compaction."):
            model, key = CompactionPolicy, key.removeprefix("compaction.")
            seen.add(f"compaction.{key}")
        else:
            seen.add(key)
        assert_documented(model, key, cell)
    every = set(AgentConfig.model_fields) - {"compaction"}
    every |= {f"compaction.{key}" for key in CompactionPolicy.model_fields}
    assert seen == every


@pytest.mark.parametrize(
    ("heading", "model"),
    [
        ("`[agent]`", AgentSettings),
        ("`[compaction]`", CompactionSettings),
        ("`[memory]`", MemorySettings),
        ("`[[providers.models]]`", ModelSettings),
        ("`[telemetry]`", TelemetrySettings),
    ],
)
def test_the_configuration_reference_shows_the_real_defaults(
    heading: str, model: type[BaseModel]
) -> None:
    rows = keyed_rows(table_after(ROOT / "docs" / "providers.md", heading))
    for key, cell in rows:
        assert_documented(model, key, cell)
    assert {key for key, _ in rows} == set(model.model_fields)


def test_each_provider_key_exists_for_the_types_the_reference_names() -> None:
    rows = table_after(ROOT / "docs" / "providers.md", "`[[providers]]`")
    seen = set()
    for key_cell, default, applies in rows:
        key = key_cell.strip("`")
        seen.add(key)
        named = re.split(r"[:;]", applies, maxsplit=1)[0]
        types = (
            set(ProviderType)
            if named == "all"
            else {ProviderType(t) for t in re.findall(r"`([a-z]+)`", named)}
        )
        for kind, model in PROVIDER_MODELS.items():
            assert (key in model.model_fields) is (kind in types), (key, kind)
            if kind in types:
                assert_documented(model, key, default)
    every = set().union(*(model.model_fields for model in PROVIDER_MODELS.values()))
    assert seen == every - {"models"}  # [[providers.models]] has its own table


def kernel_accepts(agent: dict[str, Any], compaction: dict[str, Any]) -> bool:
    try:
        AgentConfig(default_model="m", compaction=CompactionPolicy(**compaction), **agent)
    except AgentError as exc:
        assert exc.code is ErrorCode.INVALID_CONFIG
        return False
    return True


def file_accepts(agent: dict[str, Any], compaction: dict[str, Any]) -> bool:
    try:
        parse_settings({"agent": agent, "compaction": compaction})
    except AgentError as exc:
        assert exc.code is ErrorCode.INVALID_CONFIG
        return False
    return True


@pytest.mark.parametrize(
    ("agent", "compaction"),
    [
        ({}, {"context_percent": 0.96}),  # above the default hard limit
        ({}, {"context_percent": 1.0, "hard_limit": 1.0}),
        ({}, {"context_percent": 0.5, "hard_limit": 1.0}),
        ({}, {"every_n_turns": 0}),
        ({"compact_threshold": 1.0}, {}),
        ({"compact_threshold": 0.99}, {}),
        ({"memory_namespace": " "}, {}),
        ({"memory_max_items": 0}, {}),
        ({"max_active_sessions": 1}, {}),
    ],
)
def test_the_file_accepts_exactly_what_the_kernel_accepts(
    agent: dict[str, Any], compaction: dict[str, Any]
) -> None:
    assert file_accepts(agent, compaction) is kernel_accepts(agent, compaction)


def test_an_out_of_range_value_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(AgentError) as info:
        AgentConfig(default_model="m", tool_timeout_ms=0)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "tool_timeout_ms: Input should be greater than 0" in info.value.message
    with pytest.raises(AgentError) as info:
        CompactionPolicy(context_percent=0.96)
    assert "context_percent must be below hard_limit" in info.value.message
