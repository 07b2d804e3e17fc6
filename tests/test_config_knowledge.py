"""``[[knowledge]]`` in ``youyou.toml``: defaults, one glob or many, ids, who may search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from youyou.config import parse_settings
from youyou.domain.errors import AgentError, ErrorCode


def refusal(*entries: dict[str, Any]) -> str:
    with pytest.raises(AgentError) as info:
        parse_settings({"knowledge": list(entries)})
    assert info.value.code is ErrorCode.INVALID_CONFIG
    return info.value.message


def test_defaults_globs_and_users() -> None:
    first, second = parse_settings(
        {
            "knowledge": [
                {"id": "runbooks", "path": "ops/runbooks"},
                {"id": "wiki.v2", "path": "/srv/wiki", "glob": "**/*.markdown", "users": ["a"]},
            ]
        }
    ).knowledge
    assert (first.path, first.glob, first.users) == (
        Path("ops/runbooks"),
        ("**/*.md", "**/*.txt"),
        None,
    )
    assert second.glob == ("**/*.markdown",)
    assert (first.groups, second.users, second.groups) == (None, ("a",), None)
    assert parse_settings({}).knowledge == ()


def test_ids_are_unique_and_safe_and_a_path_is_required() -> None:
    twice = refusal({"id": "ops", "path": "a"}, {"id": "ops", "path": "b"})
    assert "knowledge[].id: 'ops' appears more than once" in twice
    assert "knowledge[0].id" in refusal({"id": "a/b", "path": "a"})
    assert "knowledge[0].path" in refusal({"id": "ops"})
    assert "knowledge[0].glob" in refusal({"id": "ops", "path": "a", "glob": []})
    assert "knowledge[0].extra" in refusal({"id": "ops", "path": "a", "extra": 1})
