"""What a caller hands the kernel with one turn, beside the message: a product's per-turn
inputs. A public type, so it lives with the ports a product programs against rather than in
the use cases that read it."""

from __future__ import annotations

from dataclasses import dataclass

from youyou.domain.skill import SkillDefinition
from youyou.ports.tool import ToolHandler


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """Per-turn inputs read fresh by the caller (the workbench's user prompt and skills).

    ``skills`` can be triggered by ``/name`` in this turn only, next to the registered ones.
    ``offer_tools=False`` sends requests without tools: products use it for a model without
    tool use, where the kernel would otherwise refuse a request that carries tools.
    """

    user_prompt: str | None = None
    skill_catalog: str | None = None
    extra_tools: tuple[ToolHandler, ...] = ()
    skills: tuple[SkillDefinition, ...] = ()
    offer_tools: bool = True
