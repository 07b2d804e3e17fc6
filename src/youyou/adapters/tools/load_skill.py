"""``load_skill``: progressive disclosure of skills (see docs/skills.md).

The system prompt lists only name and description (``render_skill_catalog``); the model calls
this tool to read a skill's full instructions. The registry is closed over the skills given at
construction: an unknown or unselected name never falls back to any wider catalog.
"""

from __future__ import annotations

from collections.abc import Sequence

from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import ToolOutput
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_messages import (
    LOAD_SKILL_DESCRIPTION,
    LOAD_SKILL_TOOL_NAME,
    loadable_skills,
    render_skill_catalog,
    render_skill_loaded,
    render_skill_unavailable,
)
from youyou.domain.tool import ToolDescriptor, ToolInput

__all__ = ["DISPLAY_KEY", "LoadSkillTool", "render_skill_catalog"]

# Events and SSE show ``metadata["display"]`` instead of ``content`` when it is present, so the
# UI sees one line while the model receives the whole skill body.
DISPLAY_KEY = "display"


class LoadSkillTool:
    """A read-only tool over exactly the skills the model may load on its own.

    Skills with ``allow_implicit_invocation=False`` are explicit-only (``/name``), so they are
    neither listed in the catalog nor loadable here.
    """

    def __init__(self, skills: Sequence[SkillDefinition]) -> None:
        registry: dict[str, SkillDefinition] = {}
        for skill in loadable_skills(skills):
            if skill.name in registry:
                raise AgentError(
                    ErrorCode.NAME_CONFLICT,
                    f"skill '{skill.name}' is given twice to load_skill",
                    source=ErrorSource.TOOL,
                )
            registry[skill.name] = skill
        self._registry = registry
        self._descriptor = ToolDescriptor.builtin(
            name=LOAD_SKILL_TOOL_NAME,
            description=LOAD_SKILL_DESCRIPTION,
            parameters_schema=_schema(tuple(registry)),
            # The enum advertises the names; a stripped name or an unknown one gets this
            # tool's own answer (docs/skills.md), not a schema error.
            validate_arguments=False,
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(self._registry)

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        raw = tool_input.arguments.get("skill_name")
        if not isinstance(raw, str):
            return _output("load_skill needs a string argument skill_name.", is_error=True)
        requested = raw.strip()
        skill = self._registry.get(requested)
        if skill is None:
            return _output(render_skill_unavailable(requested, self.skill_names))
        return _output(render_skill_loaded(skill.name, skill.prompt), skill=skill.name)


def _schema(names: tuple[str, ...]) -> dict[str, object]:
    skill_name: dict[str, object] = {
        "type": "string",
        "description": "The exact name of one skill listed under Available Skills.",
    }
    if names:  # an empty enum matches nothing and several providers reject it
        skill_name["enum"] = list(names)
    return {
        "type": "object",
        "properties": {"skill_name": skill_name},
        "required": ["skill_name"],
        "additionalProperties": False,
    }


def _output(content: str, *, is_error: bool = False, skill: str | None = None) -> ToolOutput:
    metadata: dict[str, object] = {DISPLAY_KEY: content.split("\n", 1)[0]}
    if skill is not None:
        metadata["skill"] = skill
    return ToolOutput(content=content, is_error=is_error, metadata=metadata)
