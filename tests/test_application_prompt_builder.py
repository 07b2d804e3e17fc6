"""PromptBuilder: section order, omitted blanks, fixed template formats, no tool schemas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kernel_kit import build_agent, text
from plugin_kit import ScriptedPlugin
from youyou import AgentBuilder, AgentConfig, EnvironmentContext, SessionConfig, TurnOptions
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.application.prompt_builder import PromptBuilder, PromptInputs
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import (
    ResolvedSessionConfig,
    SessionPinnedConfig,
    resolve_session_runtime_policy,
)
from youyou.domain.hooks import HookKind, PluginDescriptor
from youyou.domain.ledger import ToolOutput
from youyou.domain.memory import Memory
from youyou.domain.skill import SkillDefinition
from youyou.domain.templates import PHRASES, Language
from youyou.domain.tool import ToolDescriptor, ToolInput

ENVIRONMENT = EnvironmentContext(
    cwd="/home/u/proj", shell="zsh", current_date="2026-03-04", timezone="Asia/Shanghai"
)
SKILLS = [
    SkillDefinition(name="review", description="Review code", prompt="REVIEW-BODY"),
    SkillDefinition(
        name="secret", description="Hidden", prompt="SECRET-BODY", allow_implicit_invocation=False
    ),
]
PLUGINS = [
    PluginDescriptor(
        id="audit",
        display_name="Audit",
        description="logs calls",
        tapped_hooks=frozenset({HookKind.TURN_END}),
    )
]


def resolved(override: str | None = None) -> ResolvedSessionConfig:
    pinned = SessionPinnedConfig(
        model_id="m1", system_prompt_override=override, memory_namespace="default"
    )
    policy = resolve_session_runtime_policy(AgentConfig(default_model="m1"), pinned, lambda _: True)
    return ResolvedSessionConfig(pinned=pinned, runtime_policy=policy)


def builder(**overrides: Any) -> PromptBuilder:
    arguments: dict[str, Any] = {
        "system_instructions": ("Be exact.", "  ", "Cite sources."),
        "personality": "A calm engineer.",
        "environment": ENVIRONMENT,
        "skills": SKILLS,
        "plugins": PLUGINS,
        "phrases": PHRASES[Language.EN],
    }
    arguments.update(overrides)
    return PromptBuilder(**arguments)


def test_every_section_in_order() -> None:
    prompt = (
        builder()
        .render(
            resolved("OVERRIDE TEXT"),
            PromptInputs(
                memory_section="## Memory\n\nMEMORIES",
                user_prompt="  USER PROMPT  ",
                skill_catalog="## Available Skills\n- **x**: y",
                dynamic_sections=("DYNAMIC ONE", "DYNAMIC TWO"),
            ),
        )
        .system_prompt
    )

    assert prompt.split("\n\n") == [
        "<system_instructions>\nBe exact.",
        "Cite sources.\n</system_instructions>",
        "<system_prompt_override>\nOVERRIDE TEXT\n</system_prompt_override>",
        "User-selected system prompt:\nUSER PROMPT",
        "<personality_spec>\nA calm engineer.\n</personality_spec>",
        "## Skills",
        "### Available skills\n- review: Review code",
        "### How to use skills\n- A skill is active only when the user explicitly types "
        "/skill_name\n- Never activate a skill on your own\n"
        "- You may suggest a skill to the user, but never trigger it for them",
        "## Available Skills\n- **x**: y",
        "## Plugins",
        "### Active plugins\n- audit (Audit): logs calls",
        "## Memory",
        "MEMORIES",
        "<environment_context>\n  <cwd>/home/u/proj</cwd>\n  <shell>zsh</shell>\n"
        "  <current_date>2026-03-04</current_date>\n  <timezone>Asia/Shanghai</timezone>\n"
        "</environment_context>",
        "DYNAMIC ONE",
        "DYNAMIC TWO",
    ]


def test_chinese_phrases_when_the_language_is_chinese() -> None:
    prompt = (
        builder(phrases=PHRASES[Language.ZH])
        .render(resolved(), PromptInputs(user_prompt="USER PROMPT"))
        .system_prompt
    )

    assert "用户选择的系统提示词：\nUSER PROMPT" in prompt
    assert "- 仅当用户显式使用 /skill_name 时激活" in prompt
    assert "User-selected" not in prompt and "Never activate" not in prompt


def test_blank_sections_are_omitted() -> None:
    empty = builder(
        system_instructions=(" ", ""),
        personality="  \n",
        environment=None,
        skills=[SKILLS[1]],
        plugins=[],
    )
    prompt = empty.render(
        resolved(), PromptInputs(user_prompt="   ", skill_catalog=None, dynamic_sections=("", "  "))
    ).system_prompt
    assert prompt == ""


def test_only_the_present_sections_are_joined() -> None:
    prompt = (
        builder(system_instructions=(), personality=None, skills=[], plugins=[])
        .render(resolved(), PromptInputs(dynamic_sections=("LAST",)))
        .system_prompt
    )
    assert prompt.startswith("<environment_context>\n")
    assert prompt.endswith("</environment_context>\n\nLAST")


class SchemaTool:
    """A tool whose description and schema are easy to spot."""

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="quokka_lookup",
            description="ZEBRA-DESCRIPTION finds quokkas",
            parameters_schema={
                "type": "object",
                "properties": {"platypus_param": {"type": "string"}},
            },
        )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        return ToolOutput(content="found")


async def test_tool_schemas_travel_only_in_request_tools() -> None:
    plugin = ScriptedPlugin("audit")

    def configure(b: AgentBuilder) -> AgentBuilder:
        return b.register_skill(SKILLS[0]).register_plugin(plugin)

    agent, provider = await build_agent(
        [text("ok")],
        tools=[SchemaTool()],
        configure=configure,
        config=AgentConfig(
            default_model="m1", system_instructions=("Be exact.",), environment_context=ENVIRONMENT
        ),
    )
    session = await agent.new_session(SessionConfig(system_prompt_override="OVERRIDE"))
    await (await session.send_message("hi", options=TurnOptions(user_prompt="MY PROMPT"))).join()

    (request,) = provider.requests
    for needle in ("quokka_lookup", "ZEBRA-DESCRIPTION", "platypus_param", "parameters"):
        assert needle not in request.system_prompt
    (tool,) = request.tools
    assert tool.description == "ZEBRA-DESCRIPTION finds quokkas"
    assert "platypus_param" in tool.parameters_schema["properties"]
    prompt = request.system_prompt
    order = [
        "<system_instructions>",
        "<system_prompt_override>\nOVERRIDE",
        "MY PROMPT",
        "## Skills",
        "## Plugins",
        "<environment_context>",
    ]
    assert [prompt.index(part) for part in order] == sorted(prompt.index(p) for p in order)


async def test_memories_sit_between_plugins_and_environment() -> None:
    memories = InMemoryMemoryStorage()
    moment = datetime(2026, 2, 1, tzinfo=UTC)
    await memories.upsert(
        Memory(
            id="m1",
            namespace="default",
            content="User prefers tabs",
            created_at=moment,
            updated_at=moment,
        )
    )

    def configure(b: AgentBuilder) -> AgentBuilder:
        return b.register_plugin(ScriptedPlugin("audit")).register_memory_storage(memories)

    agent, provider = await build_agent(
        [text("ok")],
        configure=configure,
        config=AgentConfig(default_model="m1", environment_context=ENVIRONMENT),
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()

    prompt = provider.requests[0].system_prompt
    memory = prompt.index("## Memory\n\n")
    assert prompt.index("## Plugins") < memory < prompt.index("<environment_context>")
    assert "### Memories\n- [2026-02-01] User prefers tabs\n\n<environment_context>" in prompt


async def test_no_memory_section_without_memories() -> None:
    agent, provider = await build_agent(
        [text("ok")],
        configure=lambda b: b.register_memory_storage(InMemoryMemoryStorage()),
    )
    session = await agent.new_session()
    await (await session.send_message("hi")).join()
    assert "## Memory" not in provider.requests[0].system_prompt
