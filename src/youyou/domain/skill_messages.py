"""Fixed texts of the skill feature: validation messages, ``load_skill`` replies, the catalog.

zh-CN is the default language (the workbench UI shows these texts); every text
also has an English version so the workbench can answer ``Accept-Language: en``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from youyou.domain.skill import SkillDefinition

Language = Literal["zh-CN", "en"]

MAX_SKILL_BYTES = 65_536
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024

# rule id -> (zh-CN template, en template); templates use str.format fields.
_CATALOG: dict[str, tuple[str, str]] = {
    "skill.filename": (
        "Skill 文件名必须严格为 SKILL.md。",
        "The skill file must be named exactly SKILL.md.",
    ),
    "skill.empty": (
        "Skill 文件不能为空，请上传 UTF-8 Markdown 文本。",
        "The skill file is empty; upload UTF-8 Markdown text.",
    ),
    "skill.too_large": (
        "Skill 文件不能超过 64 KB。",
        f"The skill file must not exceed 64 KB ({MAX_SKILL_BYTES} bytes).",
    ),
    "skill.encoding": (
        "Skill 文件必须是 UTF-8 编码的 Markdown 文本。",
        "The skill file must be UTF-8 encoded Markdown text.",
    ),
    "skill.binary": (
        "Skill 文件包含 NUL 字符，不是 Markdown 文本。",
        "The skill file contains NUL characters; it is not Markdown text.",
    ),
    "skill.blank": (
        "Skill 文件不能为空，请写入可读的 Markdown 指令。",
        "The skill file contains only whitespace; write readable Markdown instructions.",
    ),
    "skill.frontmatter_missing": (
        "SKILL.md 必须以包含 name 和 description 的 YAML frontmatter 开头。",
        "SKILL.md must start with YAML frontmatter (between --- lines) holding name and "
        "description.",
    ),
    "skill.frontmatter_yaml": (
        "SKILL.md 的 YAML frontmatter 格式无效。",
        "The YAML frontmatter of SKILL.md is invalid.",
    ),
    "skill.frontmatter_not_mapping": (
        "SKILL.md 的 YAML frontmatter 必须是键值对象。",
        "The YAML frontmatter of SKILL.md must be a mapping of keys to values.",
    ),
    "skill.frontmatter_value": (
        "frontmatter 字段 {key} 只能包含普通数据（字符串、数字、布尔、日期、列表、映射）。",
        "Frontmatter field {key} may only hold plain data (strings, numbers, booleans, dates, "
        "lists, mappings).",
    ),
    "skill.name_missing": (
        "SKILL.md 的 frontmatter 缺少 name。",
        "The frontmatter of SKILL.md has no name.",
    ),
    "skill.name_not_string": (
        "Skill name 必须是字符串。",
        "The skill name must be a string.",
    ),
    "skill.name_length": (
        f"Skill name 长度必须为 1 到 {MAX_NAME_CHARS} 个字符（当前 {{length}} 个）。",
        f"The skill name must be 1 to {MAX_NAME_CHARS} characters long (it has {{length}}).",
    ),
    "skill.name_charset": (
        "Skill name 只能包含小写字母 a-z、数字 0-9 和连字符 -。",
        "The skill name may only contain lowercase letters a-z, digits 0-9 and hyphens.",
    ),
    "skill.name_hyphen_edge": (
        "Skill name 不能以连字符开头或结尾。",
        "The skill name must not start or end with a hyphen.",
    ),
    "skill.name_double_hyphen": (
        "Skill name 不能包含连续的双连字符 --。",
        "The skill name must not contain two hyphens in a row (--).",
    ),
    "skill.description_missing": (
        "SKILL.md 的 frontmatter 缺少 description。",
        "The frontmatter of SKILL.md has no description.",
    ),
    "skill.description_not_string": (
        "Skill description 必须是字符串。",
        "The skill description must be a string.",
    ),
    "skill.description_empty": (
        "Skill description 不能为空。",
        "The skill description must not be empty.",
    ),
    "skill.description_too_long": (
        f"Skill description 不能超过 {MAX_DESCRIPTION_CHARS} 个字符（当前 {{length}} 个）。",
        f"The skill description must not exceed {MAX_DESCRIPTION_CHARS} characters "
        "(it has {length}).",
    ),
    "skill.unreadable": (
        "无法读取 Skill 文件：{reason}",
        "The skill file cannot be read: {reason}",
    ),
    "skill.name_duplicate": (
        "Skill name {name} 重复，已由 {first} 使用。",
        "The skill name {name} is already used by {first}.",
    ),
}

RULE_IDS: tuple[str, ...] = tuple(_CATALOG)


@dataclass(frozen=True, slots=True)
class SkillViolation:
    """One failed SKILL.md rule; ``rule_id`` is stable, the messages are for people."""

    rule_id: str
    message_zh: str
    message_en: str

    def message(self, language: Language = "zh-CN") -> str:
        return self.message_en if language == "en" else self.message_zh


def violation(rule_id: str, **fields: object) -> SkillViolation:
    zh, en = _CATALOG[rule_id]
    return SkillViolation(rule_id, zh.format(**fields), en.format(**fields))


def yaml_violation(line: int | None, problem: str | None) -> SkillViolation:
    """``skill.frontmatter_yaml`` with the parser's own explanation when it gives one."""
    plain = violation("skill.frontmatter_yaml")
    if line is None or not problem:
        return plain
    return SkillViolation(
        plain.rule_id,
        f"{plain.message_zh}（frontmatter 第 {line} 行：{problem}）",
        f"{plain.message_en} (frontmatter line {line}: {problem})",
    )


def render_violations(violations: Iterable[SkillViolation], language: Language = "zh-CN") -> str:
    """All messages in one line: zh sentences end with 。, English ones are space-joined."""
    separator = " " if language == "en" else ""
    return separator.join(v.message(language) for v in violations)


# --- load_skill tool texts ----------------------------------------------------------------

LOAD_SKILL_TOOL_NAME = "load_skill"
LOAD_SKILL_DESCRIPTION = (
    "Load the full instructions of one skill listed under Available Skills. Call it with the "
    "skill's name before following that skill. "
    "加载 Available Skills 中列出的某个 Skill 的完整指令；在按该 Skill 执行前先调用。"
)
NO_SKILLS_ZH = "无"
NO_SKILLS_EN = "none"


def render_skill_loaded(name: str, prompt: str) -> str:
    return f"Loaded skill: {name}\n\n{prompt}"


def render_skill_unavailable(requested: str, available: Sequence[str]) -> str:
    """The zh-CN line first (that line is what the UI shows), then an English line."""
    names_zh = ", ".join(available) or NO_SKILLS_ZH
    names_en = ", ".join(available) or NO_SKILLS_EN
    return (
        f"Skill '{requested}' 不可用。当前可加载的 Skill: {names_zh}。\n"
        f"Skill '{requested}' is not available. Skills that can be loaded: {names_en}."
    )


# --- progressive-disclosure catalog (a system-prompt section) -----------------------------

SKILL_CATALOG_HEADER = "## Available Skills"
SKILL_CATALOG_INSTRUCTION = (
    "以上仅为当前会话允许使用的 Skill。判断用户任务与某个 Skill 的描述匹配时，"
    "必须先调用 `load_skill` 并传入该 Skill 的 name，再依据返回的完整指令回答。"
    "不要猜测或声称已加载未调用的 Skill。\n"
    "Only the skills above are available in this session. When the user's task matches a "
    "skill's description, first call `load_skill` with that skill's name, then answer by the "
    "full instructions it returns. Never guess a skill's instructions or claim to have loaded "
    "a skill you did not load."
)


def loadable_skills(skills: Iterable[SkillDefinition]) -> tuple[SkillDefinition, ...]:
    """Skills the model may discover and load itself (``allow_implicit_invocation``)."""
    return tuple(skill for skill in skills if skill.allow_implicit_invocation)


def render_skill_catalog(skills: Iterable[SkillDefinition]) -> str | None:
    """The system-prompt section listing only name and description; None when nothing to list."""
    listed = loadable_skills(skills)
    if not listed:
        return None
    # A multi-line description would break the list, so its whitespace is collapsed.
    lines = [f"- **{skill.name}**: {' '.join(skill.description.split())}" for skill in listed]
    return "\n".join([SKILL_CATALOG_HEADER, *lines, SKILL_CATALOG_INSTRUCTION])
