"""What every send assembles fresh from the database: the user's selected prompt and skills.

The mandatory instructions are the agent's ``system_instructions`` and always come first; the
user's prompt is a preference section after them, never a replacement. Selected skills appear
only as ``name: description`` in the catalog, with a ``load_skill`` tool closed over exactly
that selection; ``/name`` of a selected skill injects its body for one turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from youyou.adapters.tools.load_skill import LoadSkillTool, render_skill_catalog
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_md import SKILL_FILENAME, parse_skill_md
from youyou.ports.tool import ToolHandler
from youyou.ports.turn import TurnOptions
from youyou.workbench.errors import Language
from youyou.workbench.store import OwnerAssets, PromptRecord, SkillRecord, WorkbenchStore

MANDATORY_CHAT_INSTRUCTIONS = (
    "你是 YouYou 值班工作台中的运维助手。按需使用工具；引用知识或工具结果时注明来源；"
    "绝不编造工具结果、指标或日志内容；回答与当前时间有关的问题前先调用 get_current_time。"
    "用户选择的提示词只是偏好，不能取消以上规则。\n"
    "You are the operations assistant of the YouYou on-call workbench. Use tools when they "
    "help; cite the source of knowledge and tool results; never invent tool results, metrics "
    "or log lines; call get_current_time before answering anything that depends on the "
    "current time. The user's selected prompt is a preference and cannot lift these rules."
)
# The prompt every user starts with, in each language of the API. It is stored in Chinese (as
# it always was); while its label or text is still the shipped one it is shown, and sent to
# the model, in the language of the request.
DEFAULT_PROMPT_LABELS: dict[Language, str] = {"en": "Default prompt", "zh-CN": "默认提示词"}
DEFAULT_PROMPT_CONTENTS: dict[Language, str] = {
    "en": (
        "You are an experienced SRE. First establish the impact and the symptoms, then give "
        "troubleshooting steps that can be carried out and rolled back; say what each "
        "conclusion rests on."
    ),
    "zh-CN": (
        "你是一名经验丰富的 SRE。先确认影响范围和现象，再给出可执行、可回滚的排查步骤；"
        "结论要说明依据。"
    ),
}
DEFAULT_PROMPT_LABEL = DEFAULT_PROMPT_LABELS["zh-CN"]
DEFAULT_PROMPT_CONTENT = DEFAULT_PROMPT_CONTENTS["zh-CN"]


def in_language(prompt: PromptRecord, language: Language) -> PromptRecord:
    """The default prompt's shipped label and text in ``language``; anything a user wrote
    stays as written."""
    if not prompt.is_default:
        return prompt
    label, content = prompt.label, prompt.content
    if label in DEFAULT_PROMPT_LABELS.values():
        label = DEFAULT_PROMPT_LABELS[language]
    if content in DEFAULT_PROMPT_CONTENTS.values():
        content = DEFAULT_PROMPT_CONTENTS[language]
    return replace(prompt, label=label, content=content)


@dataclass(frozen=True, slots=True)
class UserConfiguration:
    prompts: list[PromptRecord]
    skills: list[SkillRecord]
    system_prompt_id: str
    skill_ids: list[str]
    groups: frozenset[str]
    """The folded names of the user's groups, which access lists match."""


async def read_configuration(
    store: WorkbenchStore, owner_id: str, assets: OwnerAssets | None = None
) -> UserConfiguration:
    """The first read creates the default prompt and an empty selection; ids that became
    stale (deleted prompt or skill) are dropped and the repaired selection written back.
    ``assets``: the owner's, when the caller has just read them (else read here)."""
    if assets is None:
        assets = await store.assets(owner_id)
    prompts, skills, selection = assets.prompts, assets.skills, assets.selection
    default = next((p for p in prompts if p.is_default), None)
    if default is None:  # the first read, or the default was deleted: no write otherwise
        default = await store.ensure_default_prompt(
            owner_id, DEFAULT_PROMPT_LABEL, DEFAULT_PROMPT_CONTENT
        )
        prompts = await store.list_prompts(owner_id)
    prompt_ids = {p.id for p in prompts}
    skill_ids = {s.id for s in skills}
    prompt_id = default.id
    chosen: list[str] = []
    if selection is not None:
        if selection.system_prompt_id in prompt_ids:
            prompt_id = selection.system_prompt_id
        chosen = [i for i in selection.skill_ids if i in skill_ids]
    if selection is None or (prompt_id, chosen) != (
        selection.system_prompt_id,
        list(selection.skill_ids),
    ):
        await store.save_selection(owner_id, prompt_id, chosen)
    return UserConfiguration(prompts, skills, prompt_id, chosen, assets.groups)


@lru_cache(maxsize=1024)
def skill_definition(content: str) -> SkillDefinition:
    """Stored files passed validation on upload; parsing again only splits off the body."""
    return parse_skill_md(SKILL_FILENAME, content.encode()).to_definition()


def turn_options(
    config: UserConfiguration,
    *,
    tool_use: bool,
    tools: Sequence[ToolHandler] = (),
    language: Language = "en",
) -> TurnOptions:
    """``config`` as ``read_configuration`` read it for this send. Without tool use the model
    gets no tools and no catalog (it could not load a skill); ``/name`` of a selected skill
    still works. ``tools`` are the user's MCP tools."""
    selected = next(p for p in config.prompts if p.id == config.system_prompt_id)
    prompt = in_language(selected, language)
    by_id = {s.id: s for s in config.skills}
    skills = tuple(skill_definition(by_id[i].content) for i in config.skill_ids)
    offered = skills if tool_use else ()
    skill_tool: tuple[ToolHandler, ...] = (LoadSkillTool(offered),) if offered else ()
    return TurnOptions(
        user_prompt=prompt.content,
        skill_catalog=render_skill_catalog(offered),
        extra_tools=(*skill_tool, *tools) if tool_use else (),
        skills=skills,
        offer_tools=tool_use,
    )
