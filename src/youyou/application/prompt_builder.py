"""System prompt text, section by section.

The section order and the fixed texts are in docs/architecture.md, 'The system prompt and
requests' and 'Prompt templates'.

Tool schemas never appear here: they travel only in ``ChatRequest.tools``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from youyou.domain.config import EnvironmentContext, ResolvedSessionConfig
from youyou.domain.hooks import PluginDescriptor
from youyou.domain.skill import SkillDefinition
from youyou.domain.templates import (
    PLUGINS_SECTION_HEADER,
    SKILLS_SECTION_HEADER,
    TAG_PERSONALITY,
    TAG_SYSTEM_INSTRUCTIONS,
    TAG_SYSTEM_PROMPT_OVERRIDE,
    Phrases,
    render_environment_context,
    wrap_tag,
)


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    system_prompt: str


@dataclass(frozen=True, slots=True)
class PromptInputs:
    """What varies per turn: the user's prompt and skill catalog are read fresh each turn."""

    memory_section: str | None = None
    user_prompt: str | None = None
    skill_catalog: str | None = None
    dynamic_sections: tuple[str, ...] = ()


def render_skill_list(skills: Sequence[SkillDefinition], how_to_use: str) -> str | None:
    """The registered skill list; only skills that allow implicit invocation are listed."""
    listed = [s for s in skills if s.allow_implicit_invocation]
    if not listed:
        return None
    lines = "\n".join(f"- {s.name}: {s.description}" for s in listed)
    return f"{SKILLS_SECTION_HEADER}\n{lines}\n\n{how_to_use}"


def render_plugin_list(plugins: Sequence[PluginDescriptor]) -> str | None:
    """The active plugin list."""
    if not plugins:
        return None
    lines = "\n".join(f"- {p.id} ({p.display_name}): {p.description}" for p in plugins)
    return f"{PLUGINS_SECTION_HEADER}\n{lines}"


def _environment(context: EnvironmentContext | None) -> str | None:
    if context is None:
        return None
    return render_environment_context(
        context.cwd, context.shell, context.current_date, context.timezone
    )


class PromptBuilder:
    """Static sections are rendered once per session; per-turn inputs are appended in order."""

    def __init__(
        self,
        *,
        system_instructions: Sequence[str],
        personality: str | None,
        environment: EnvironmentContext | None,
        skills: Sequence[SkillDefinition],
        plugins: Sequence[PluginDescriptor],
        phrases: Phrases,
    ) -> None:
        instructions = [i.strip() for i in system_instructions if i.strip()]
        self._instructions = (
            wrap_tag(TAG_SYSTEM_INSTRUCTIONS, "\n\n".join(instructions)) if instructions else None
        )
        self._personality = (
            wrap_tag(TAG_PERSONALITY, personality.strip())
            if personality and personality.strip()
            else None
        )
        self._skill_list = render_skill_list(skills, phrases.skills_how_to_use)
        self._user_prompt_header = phrases.user_prompt_header
        self._plugin_list = render_plugin_list(plugins)
        self._environment = _environment(environment)

    def render(self, resolved: ResolvedSessionConfig, inputs: PromptInputs) -> RenderedPrompt:
        override = resolved.pinned.system_prompt_override
        user_prompt = inputs.user_prompt.strip() if inputs.user_prompt else ""
        sections = [
            self._instructions,
            wrap_tag(TAG_SYSTEM_PROMPT_OVERRIDE, override) if override else None,
            f"{self._user_prompt_header}\n{user_prompt}" if user_prompt else None,
            self._personality,
            self._skill_list,
            inputs.skill_catalog,
            self._plugin_list,
            inputs.memory_section,
            self._environment,
            *inputs.dynamic_sections,
        ]
        return RenderedPrompt("\n\n".join(s for s in sections if s and s.strip()))
