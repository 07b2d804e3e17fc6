"""SKILL.md parsing and validation, pure and shared (rules in docs/skills.md).

The kernel (skills directory), the workbench upload route and the CLI all call this one
validator, so a file accepted in one place is accepted everywhere. Every failing rule is
reported at once; a rule that needs an earlier step (e.g. name rules need parsed YAML) is only
evaluated when that step succeeded.

Normalisation: a UTF-8 BOM is dropped, CRLF becomes LF, and the text is stripped before the
frontmatter is matched, so leading blank lines are allowed but any other text
before the opening ``---`` is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_messages import (
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    MAX_SKILL_BYTES,
    Language,
    SkillViolation,
    render_violations,
    violation,
    yaml_violation,
)

SKILL_FILENAME = "SKILL.md"
_FRONTMATTER = re.compile(r"---[ \t]*\n(?:(.*?)\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
_NAME_CHARSET = re.compile(r"[a-z0-9-]*")
# Aliases let a small frontmatter describe a huge tree; copying it into ``extra`` is capped.
_MAX_EXTRA_NODES = 10_000


class SkillValidationError(AgentError):
    """A SKILL.md broke one or more rules; ``violations`` lists all of them in rule order."""

    def __init__(self, violations: Sequence[SkillViolation]) -> None:
        self.violations = tuple(violations)
        super().__init__(
            ErrorCode.INPUT_VALIDATION,
            render_violations(self.violations),
            source=ErrorSource.SKILL_RESOLVER,
        )

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(v.rule_id for v in self.violations)

    def render(self, language: Language = "zh-CN") -> str:
        return render_violations(self.violations, language)


@dataclass(frozen=True, slots=True)
class ParsedSkill:
    """A valid SKILL.md: ``content`` is the normalised file, ``body`` the Markdown after it."""

    name: str
    description: str
    body: str
    content: str
    extra: dict[str, object]
    size_bytes: int

    def to_definition(self) -> SkillDefinition:
        return SkillDefinition(
            name=self.name,
            description=self.description,
            prompt=self.body,
            extra=dict(self.extra),
        )


def parse_skill_md(filename: str, content: bytes) -> ParsedSkill:
    """Raise ``SkillValidationError`` with every failing rule, or return the parsed skill."""
    found: list[SkillViolation] = []
    parsed = _parse(filename, content, found)
    if found or parsed is None:
        raise SkillValidationError(found)
    return parsed


def validate_skill_md(filename: str, content: bytes) -> tuple[SkillViolation, ...]:
    """All failing rules; empty when the file is a valid SKILL.md."""
    try:
        parse_skill_md(filename, content)
    except SkillValidationError as exc:
        return exc.violations
    return ()


def _parse(filename: str, content: bytes, found: list[SkillViolation]) -> ParsedSkill | None:
    if filename != SKILL_FILENAME:  # equal to SKILL.md implies its basename is SKILL.md too
        found.append(violation("skill.filename"))
    text = _decode(content, found)
    if text is None:
        return None
    match = _FRONTMATTER.match(text)
    if match is None:
        found.append(violation("skill.frontmatter_missing"))
        return None
    metadata = _load_mapping(match.group(1) or "", found)
    if metadata is None:
        return None
    name = _string_field(metadata, "name", found)
    if name is not None:
        name = _check_name(name, found)
    description = _string_field(metadata, "description", found)
    if description is not None:
        description = _check_description(description, found)
    extra = _extra_fields(metadata, found)
    if name is None or description is None or extra is None:
        return None
    return ParsedSkill(
        name=name,
        description=description,
        body=text[match.end() :].strip(),
        content=text,
        extra=extra,
        size_bytes=len(content),
    )


def _decode(content: bytes, found: list[SkillViolation]) -> str | None:
    if not content:
        found.append(violation("skill.empty"))
        return None
    if len(content) > MAX_SKILL_BYTES:
        found.append(violation("skill.too_large"))
    try:
        decoded = content.decode("utf-8-sig")  # accepts and drops one leading BOM
    except UnicodeDecodeError:
        found.append(violation("skill.encoding"))
        return None
    if "\x00" in decoded:
        found.append(violation("skill.binary"))
        return None
    text = decoded.replace("\r\n", "\n").strip()
    if not text:
        found.append(violation("skill.blank"))
        return None
    return text


def _load_mapping(source: str, found: list[SkillViolation]) -> dict[Any, Any] | None:
    import yaml  # ~20 ms to import, for sessions that parse a SKILL.md

    try:
        loaded: object = yaml.safe_load(source)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        found.append(yaml_violation(None if mark is None else mark.line + 1, exc.problem))
        return None
    except Exception:  # PyYAML constructors also leak ValueError, RecursionError, …
        found.append(yaml_violation(None, None))
        return None
    if not isinstance(loaded, dict):
        found.append(violation("skill.frontmatter_not_mapping"))
        return None
    return loaded


def _string_field(metadata: dict[Any, Any], key: str, found: list[SkillViolation]) -> str | None:
    """An absent key and an explicit null are both "missing"; any other non-string is wrong."""
    value = metadata.get(key)
    if value is None:
        found.append(violation(f"skill.{key}_missing"))
        return None
    if not isinstance(value, str):
        found.append(violation(f"skill.{key}_not_string"))
        return None
    return value


def skill_name_violations(name: str) -> tuple[SkillViolation, ...]:
    """The SKILL.md name rules, for skills defined in code too."""
    found: list[SkillViolation] = []
    _check_name(name, found)
    return tuple(found)


def _check_name(value: str, found: list[SkillViolation]) -> str | None:
    before = len(found)
    if not 1 <= len(value) <= MAX_NAME_CHARS:
        found.append(violation("skill.name_length", length=len(value)))
    if _NAME_CHARSET.fullmatch(value) is None:
        found.append(violation("skill.name_charset"))
    if value.startswith("-") or value.endswith("-"):
        found.append(violation("skill.name_hyphen_edge"))
    if "--" in value:
        found.append(violation("skill.name_double_hyphen"))
    return value if len(found) == before else None


def _check_description(value: str, found: list[SkillViolation]) -> str | None:
    description = value.strip()
    if not description:
        found.append(violation("skill.description_empty"))
        return None
    if len(description) > MAX_DESCRIPTION_CHARS:
        found.append(violation("skill.description_too_long", length=len(description)))
        return None
    return description


class _NotPlainError(Exception):
    """A frontmatter value that cannot be kept as plain (JSON-like) data."""


def _extra_fields(
    metadata: dict[Any, Any], found: list[SkillViolation]
) -> dict[str, object] | None:
    """Every other key (license, compatibility, metadata, allowed-tools, unknown ones) is kept."""
    budget = [_MAX_EXTRA_NODES]
    extra: dict[str, object] = {}
    for key, value in metadata.items():
        if key in ("name", "description"):
            continue
        try:
            extra[str(key)] = _plain(value, frozenset(), budget)
        except (_NotPlainError, RecursionError):
            found.append(violation("skill.frontmatter_value", key=str(key)))
            return None
    return extra


def _plain(value: object, active: frozenset[int], budget: list[int]) -> object:
    """Dates become ISO strings; cycles, binary, sets and alias bombs are rejected."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotPlainError
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, date):
        return value.isoformat()
    if id(value) in active:
        raise _NotPlainError
    inner = active | {id(value)}
    if isinstance(value, list):
        return [_plain(item, inner, budget) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, inner, budget) for k, v in value.items()}
    raise _NotPlainError
