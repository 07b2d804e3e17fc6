"""load_skill: the closed registry, the reply texts, the one-line display and the catalog."""

from __future__ import annotations

import pytest

from youyou.adapters.tools.load_skill import DISPLAY_KEY, LoadSkillTool, render_skill_catalog
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import ToolOutput
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_md import parse_skill_md
from youyou.domain.tool import ToolInput

LOGS = SkillDefinition(
    name="log-analysis",
    description="Analyse application logs.",
    prompt="# Log analysis\n\n1. Query the last 15 minutes.\n2. Group errors by code.",
)
ROLLBACK = SkillDefinition(
    name="rollback",
    description="Roll a deployment back\nsafely.",
    prompt="Check the previous revision first.",
)
EXPLICIT_ONLY = SkillDefinition(
    name="drain-node",
    description="Drain a Kubernetes node.",
    prompt="kubectl drain …",
    allow_implicit_invocation=False,
)


async def load(tool: LoadSkillTool, **arguments: object) -> ToolOutput:
    tool_input = ToolInput(session_id="s", turn_id="t", call_id="c1", arguments=arguments)
    return await tool.call(tool_input, CancellationToken())


def test_descriptor_is_read_only_and_enumerates_the_loadable_names() -> None:
    tool = LoadSkillTool([LOGS, ROLLBACK, EXPLICIT_ONLY])
    descriptor = tool.descriptor
    assert descriptor.name == "load_skill" and descriptor.mutating is False
    schema = descriptor.parameters_schema
    assert schema["required"] == ["skill_name"]
    assert schema["properties"]["skill_name"]["type"] == "string"
    assert schema["properties"]["skill_name"]["enum"] == ["log-analysis", "rollback"]
    assert tool.skill_names == ("log-analysis", "rollback")


async def test_loading_returns_the_whole_body_and_displays_only_the_first_line() -> None:
    output = await load(LoadSkillTool([LOGS, ROLLBACK]), skill_name="  log-analysis\n")
    assert output.content == f"Loaded skill: log-analysis\n\n{LOGS.prompt}"
    assert output.is_error is False
    assert output.metadata == {DISPLAY_KEY: "Loaded skill: log-analysis", "skill": "log-analysis"}


@pytest.mark.parametrize("requested", ["deploy", "Log-Analysis", "", "drain-node"])
async def test_unknown_unselected_or_explicit_only_names_are_not_available(requested: str) -> None:
    output = await load(LoadSkillTool([LOGS, ROLLBACK, EXPLICIT_ONLY]), skill_name=requested)
    first = f"Skill '{requested}' 不可用。当前可加载的 Skill: log-analysis, rollback。"
    assert output.is_error is False
    assert output.content == (
        f"{first}\nSkill '{requested}' is not available. "
        "Skills that can be loaded: log-analysis, rollback."
    )
    assert output.metadata == {DISPLAY_KEY: first}


async def test_a_registry_is_never_wider_than_its_own_skills() -> None:
    only_logs = LoadSkillTool([LOGS])
    both = LoadSkillTool([LOGS, ROLLBACK])
    assert (await load(both, skill_name="rollback")).content.startswith("Loaded skill: rollback")
    refused = await load(only_logs, skill_name="rollback")
    assert refused.content.startswith("Skill 'rollback' 不可用。当前可加载的 Skill: log-analysis。")


async def test_an_empty_registry_says_none_and_has_no_enum() -> None:
    tool = LoadSkillTool([])
    assert "enum" not in tool.descriptor.parameters_schema["properties"]["skill_name"]
    output = await load(tool, skill_name="x")
    assert output.content == (
        "Skill 'x' 不可用。当前可加载的 Skill: 无。\n"
        "Skill 'x' is not available. Skills that can be loaded: none."
    )


@pytest.mark.parametrize("arguments", [{}, {"skill_name": 3}, {"skill_name": None}])
async def test_a_missing_or_non_string_name_is_an_error_output(
    arguments: dict[str, object],
) -> None:
    output = await load(LoadSkillTool([LOGS]), **arguments)
    assert output.is_error is True
    assert "skill_name" in output.content


def test_the_same_name_twice_is_a_name_conflict() -> None:
    with pytest.raises(AgentError) as caught:
        LoadSkillTool([LOGS, LOGS])
    assert caught.value.code is ErrorCode.NAME_CONFLICT


async def test_a_parsed_skill_md_loads_its_markdown_body() -> None:
    parsed = parse_skill_md(
        "SKILL.md", b"---\nname: triage\ndescription: Triage an alert.\n---\n\n# Triage\nStep 1."
    )
    output = await load(LoadSkillTool([parsed.to_definition()]), skill_name="triage")
    assert output.content == "Loaded skill: triage\n\n# Triage\nStep 1."


def test_catalog_lists_name_and_description_and_the_load_instruction() -> None:
    catalog = render_skill_catalog([LOGS, ROLLBACK, EXPLICIT_ONLY])
    assert catalog is not None
    lines = catalog.split("\n")
    assert lines[:3] == [
        "## Available Skills",
        "- **log-analysis**: Analyse application logs.",
        "- **rollback**: Roll a deployment back safely.",
    ]
    assert lines[3] == (
        "以上仅为当前会话允许使用的 Skill。判断用户任务与某个 Skill 的描述匹配时，"
        "必须先调用 `load_skill` 并传入该 Skill 的 name，再依据返回的完整指令回答。"
        "不要猜测或声称已加载未调用的 Skill。"
    )
    assert "call `load_skill`" in lines[4] and "did not load" in lines[4]
    assert "drain-node" not in catalog
    assert LOGS.prompt not in catalog


def test_catalog_is_none_when_nothing_can_be_listed() -> None:
    assert render_skill_catalog([]) is None
    assert render_skill_catalog([EXPLICIT_ONLY]) is None
