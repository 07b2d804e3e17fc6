"""The formal skill contract (see docs/architecture.md, 'Skills')."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SkillDefinition:
    """``name`` is the registry key and the only ``/name`` match key."""

    name: str
    description: str
    prompt: str
    display_name: str = ""
    tool_dependencies: tuple[str, ...] = ()
    allow_implicit_invocation: bool = True
    extra: dict[str, object] = field(default_factory=dict)
