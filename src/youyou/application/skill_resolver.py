"""Explicit ``/skill-name`` activation → turn augmentation (seed 001 §4.4, §8.3)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from youyou.domain.content import ContentBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.skill import SkillDefinition
from youyou.domain.templates import render_skill_injection
from youyou.domain.turn import ResolvedSkillInjection

# A trigger is "/name" at the start of the text or after whitespace, ended by whitespace/end.
_TRIGGER = re.compile(r"(?:(?<=\s)|^)/([a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)(?=\s|$)")
_LEADING_TEXT = re.compile(r"(?:^|\s)[^/\s]")


def find_skill_triggers(blocks: Sequence[ContentBlock]) -> list[tuple[str, bool]]:
    """``(name, leading)`` of triggers in top-level text blocks, first occurrence, de-duplicated.

    ``leading`` is true for a trigger before any other word of its block.
    """
    found: dict[str, bool] = {}
    for block in blocks:
        if isinstance(block, TextBlock):
            for match in _TRIGGER.finditer(block.text):
                leading = not _LEADING_TEXT.search(block.text[: match.start()])
                found.setdefault(match.group(1), leading)
    return list(found.items())


def strip_skill_triggers(text: str) -> str:
    return " ".join(_TRIGGER.sub(" ", text).split())


class SkillResolver:
    def __init__(self, skills: Mapping[str, SkillDefinition]) -> None:
        self._skills = skills

    def resolve(self, blocks: Sequence[ContentBlock]) -> tuple[ResolvedSkillInjection, ...]:
        """Raise SKILL_NOT_FOUND for an unknown leading name, before anything is written.

        An unknown name further inside the text (``check /tmp``) is plain text, not a trigger.
        """
        injections: list[ResolvedSkillInjection] = []
        for name, leading in find_skill_triggers(blocks):
            skill = self._skills.get(name)
            if skill is None and not leading:
                continue
            if skill is None:
                raise AgentError(
                    ErrorCode.SKILL_NOT_FOUND,
                    f"skill /{name} is not registered",
                    source=ErrorSource.SKILL_RESOLVER,
                )
            injections.append(
                ResolvedSkillInjection(name, render_skill_injection(name, skill.prompt))
            )
        return tuple(injections)
