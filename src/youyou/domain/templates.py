"""Fixed prompt templates and tags, kept in one place (docs/architecture.md, 'Prompt templates').

Texts the model reads in running prose that a user would otherwise see in another language
(markers, instructions, labels) are ``Phrases``, one set per ``Language``; the configured
language (``AgentConfig.language``, English by default) picks the set.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Default compaction prompt (overridable through AgentConfig.compact_prompt).
DEFAULT_COMPACT_PROMPT = (
    "You compress a conversation into a memory summary that another model will use to "
    "continue it. Merge the previous summary (if any) with the new transcript. Keep the "
    "user's goals, established facts, preferences, decisions, open items, tool results "
    "(with the exact values that matter) and cited sources. Drop greetings and repetition. "
    "Write in the language of the conversation. Output only the summary body, at most "
    "1200 words."
)

# First line of the compaction summary shown to the model; fixed, not configurable. Only the
# body is stored, so a change here reaches stored sessions as well, live and resumed alike.
COMPACT_SUMMARY_PREFIX = (
    "[Conversation summary] The earlier part of this conversation was compacted. The "
    "following summary replaces those messages; treat it as a compressed record, not as "
    "new evidence or the user's verbatim words. If recall_history is offered, it returns "
    "the exact originals."
)


class Language(StrEnum):
    """The language of the model-facing fixed texts."""

    EN = "en"
    ZH = "zh"


@dataclass(frozen=True, slots=True)
class Phrases:
    """The model-facing fixed texts that follow the configured language."""

    incomplete_assistant_marker: str
    """Placed after every assistant message cut short by a cancel."""
    skills_how_to_use: str
    """Closes the registered skill list in the system prompt."""
    user_prompt_header: str
    """Heads the system prompt the user picked (the workbench's prompts)."""
    previous_summary_label: str
    no_previous_summary: str
    new_conversation_label: str
    """The three labels of a compaction's summary request."""


PHRASES: dict[Language, Phrases] = {
    Language.EN: Phrases(
        incomplete_assistant_marker="[This message was interrupted because the user cancelled it]",
        skills_how_to_use=(
            "### How to use skills\n"
            "- A skill is active only when the user explicitly types /skill_name\n"
            "- Never activate a skill on your own\n"
            "- You may suggest a skill to the user, but never trigger it for them"
        ),
        user_prompt_header="User-selected system prompt:",
        previous_summary_label="Previous summary:",
        no_previous_summary="(none)",
        new_conversation_label="New conversation:",
    ),
    Language.ZH: Phrases(
        incomplete_assistant_marker="[此消息因用户取消而中断]",
        skills_how_to_use=(
            "### How to use skills\n"
            "- 仅当用户显式使用 /skill_name 时激活\n"
            "- 不得自行激活 Skill\n"
            "- 可建议用户使用 Skill，但不可替用户触发"
        ),
        user_prompt_header="用户选择的系统提示词：",
        previous_summary_label="已有摘要：",
        no_previous_summary="（无）",
        new_conversation_label="新增对话：",
    ),
}

# Registered skill list (system prompt).
SKILLS_SECTION_HEADER = "## Skills\n\n### Available skills"

# Active plugin list (system prompt).
PLUGINS_SECTION_HEADER = "## Plugins\n\n### Active plugins"

# Memory section (system prompt).
MEMORY_SECTION_HEADER = "## Memory"
MEMORY_USAGE_INSTRUCTIONS = (
    "The memories below were saved from earlier conversations with this user. Use them when "
    "they are relevant, prefer newer information when memories conflict, and never reveal "
    "them verbatim unless asked. They may be outdated: confirm before acting on them."
)
MEMORIES_SUBHEADER = "### Memories"

# Context tags.
TAG_SYSTEM_INSTRUCTIONS = "system_instructions"
TAG_SYSTEM_PROMPT_OVERRIDE = "system_prompt_override"
TAG_PERSONALITY = "personality_spec"
TAG_SKILL = "skill"
TAG_ENVIRONMENT = "environment_context"
TAG_TURN_ABORTED = "turn_aborted"

TURN_ABORTED_MESSAGE = (
    f"<{TAG_TURN_ABORTED}>The tool call limit for this turn was reached. Tools are now "
    f"disabled: answer the user with what you have.</{TAG_TURN_ABORTED}>"
)

# Tool output cap and synthetic tool outputs.
TOOL_OUTPUT_LIMIT_BYTES = 1_048_576
TOOL_OUTPUT_TRUNCATED_SUFFIX = "[tool output truncated: original content exceeded 1MB]"
TOOL_SKIPPED_CANCELLED = "[tool skipped: cancelled before execution]"
TOOL_INTERRUPTED = "[tool interrupted: the process stopped before its result was recorded]"


def render_tool_result_clipped(omitted_chars: int, omitted_lines: int, total_chars: int) -> str:
    """The marker between the head and the tail of a tool result too large for the model."""
    return (
        f"\n\n[... {omitted_chars:,} of {total_chars:,} characters ({omitted_lines:,} lines) "
        "of this tool result were cut here to fit the model's context window; the session keeps "
        "the full output. To see the cut part, call the tool again with a narrower query "
        "(a filter, a smaller range or fewer lines). ...]\n\n"
    )


def wrap_tag(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def render_skill_injection(name: str, prompt: str) -> str:
    """The system message of an explicit ``/name`` skill, for its turn only."""
    return f"<{TAG_SKILL}>\n<name>{name}</name>\n{prompt}\n</{TAG_SKILL}>"


def render_environment_context(cwd: str, shell: str, current_date: str, timezone: str) -> str:
    """The environment context section of the system prompt."""
    return (
        f"<{TAG_ENVIRONMENT}>\n"
        f"  <cwd>{cwd}</cwd>\n"
        f"  <shell>{shell}</shell>\n"
        f"  <current_date>{current_date}</current_date>\n"
        f"  <timezone>{timezone}</timezone>\n"
        f"</{TAG_ENVIRONMENT}>"
    )
