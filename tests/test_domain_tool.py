from typing import cast

import pytest

from youyou.adapters.knowledge.index import KnowledgeIndex
from youyou.adapters.knowledge.tool import SearchKnowledgeTool
from youyou.adapters.tools.builtin import CurrentTimeTool
from youyou.adapters.tools.load_skill import LoadSkillTool
from youyou.domain.ledger import ToolOutput
from youyou.domain.recall import RECALL_DESCRIPTOR
from youyou.domain.skill import SkillDefinition
from youyou.domain.templates import TOOL_OUTPUT_LIMIT_BYTES, TOOL_OUTPUT_TRUNCATED_SUFFIX
from youyou.domain.tool import ToolDescriptor, truncate_tool_output

SUFFIX_BYTES = len(TOOL_OUTPUT_TRUNCATED_SUFFIX.encode())


def test_output_at_the_limit_is_untouched() -> None:
    output = ToolOutput(content="a" * TOOL_OUTPUT_LIMIT_BYTES)
    assert truncate_tool_output(output) is output


def test_one_byte_over_is_truncated_with_the_suffix_inside_the_budget() -> None:
    output = ToolOutput(content="a" * (TOOL_OUTPUT_LIMIT_BYTES + 1), metadata={"k": 1})
    truncated = truncate_tool_output(output)
    assert truncated.content.endswith(TOOL_OUTPUT_TRUNCATED_SUFFIX)
    assert len(truncated.content.encode()) == TOOL_OUTPUT_LIMIT_BYTES
    assert truncated.metadata == {"k": 1}


def test_multibyte_character_is_never_split() -> None:
    # "é" is 2 bytes; align so the budget boundary falls inside a character.
    budget = TOOL_OUTPUT_LIMIT_BYTES - SUFFIX_BYTES
    content = "a" + "é" * (TOOL_OUTPUT_LIMIT_BYTES // 2 + 10)
    assert budget % 2 == 0  # so the odd leading byte puts the cut inside an "é"
    truncated = truncate_tool_output(ToolOutput(content=content))
    encoded = truncated.content.encode("utf-8")
    assert len(encoded) <= TOOL_OUTPUT_LIMIT_BYTES
    assert len(encoded) == TOOL_OUTPUT_LIMIT_BYTES - 1  # the half character was dropped
    body = truncated.content[: -len(TOOL_OUTPUT_TRUNCATED_SUFFIX)]
    assert body == content[: len(body)]


def test_four_byte_characters() -> None:
    content = "😀" * (TOOL_OUTPUT_LIMIT_BYTES // 4 + 1)
    truncated = truncate_tool_output(ToolOutput(content=content, is_error=True))
    assert truncated.is_error
    assert len(truncated.content.encode()) <= TOOL_OUTPUT_LIMIT_BYTES
    assert set(truncated.content[: -len(TOOL_OUTPUT_TRUNCATED_SUFFIX)]) == {"😀"}


def _builtin_descriptors() -> list[ToolDescriptor]:
    return [
        RECALL_DESCRIPTOR,
        CurrentTimeTool().descriptor,
        SearchKnowledgeTool(cast(KnowledgeIndex, None), ()).descriptor,
        LoadSkillTool([SkillDefinition(name="disk-full", description="d", prompt="p")]).descriptor,
    ]


@pytest.mark.parametrize("descriptor", _builtin_descriptors(), ids=lambda d: d.name)
def test_every_builtin_descriptor_passes_the_check_it_skips(descriptor: ToolDescriptor) -> None:
    assert ToolDescriptor.model_validate(descriptor.model_dump()) == descriptor
    assert not descriptor.mutating
    assert descriptor.approval == "never"  # the kernel's own tools never ask a person
