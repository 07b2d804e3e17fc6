"""Explicit ``/skill-name`` activation → turn augmentation (docs/architecture.md, 'Skills')."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from youyou.domain.content import ContentBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_triggers import find_skill_triggers
from youyou.domain.templates import render_skill_injection
from youyou.domain.turn import ResolvedSkillInjection


class SkillResolver:
    def __init__(self, skills: Mapping[str, SkillDefinition]) -> None:
        self._skills = skills

    def resolve(
        self, blocks: Sequence[ContentBlock], per_turn: Sequence[SkillDefinition] = ()
    ) -> tuple[ResolvedSkillInjection, ...]:
        """Raise SKILL_NOT_FOUND for an unknown leading name, before anything is written.

        ``per_turn`` skills are offered for this turn only (a caller's per-user selection) and
        win over a registered skill of the same name. An unknown name further inside the text
        (``check /tmp``) is plain text, not a trigger.
        """
        skills = {**self._skills, **{skill.name: skill for skill in per_turn}}
        injections: list[ResolvedSkillInjection] = []
        for name, leading in find_skill_triggers(blocks):
            skill = skills.get(name)
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
