"""SkillResolver: the explicit ``/skill-name`` trigger grammar."""

from __future__ import annotations

import pytest

from youyou.application.skill_resolver import SkillResolver
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_triggers import find_skill_triggers, strip_skill_triggers

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAA"
    "BJRU5ErkJggg=="
)

SKILLS = {
    name: SkillDefinition(name=name, description=f"{name} things", prompt=f"Do {name} well.")
    for name in ("review", "commit", "pdf-tools", "a1")
}
SKILLS["hidden"] = SkillDefinition(
    name="hidden",
    description="explicit only",
    prompt="Hidden steps.",
    allow_implicit_invocation=False,
)


def resolve(*blocks: ContentBlock | str) -> list[str]:
    given = [TextBlock(text=b) if isinstance(b, str) else b for b in blocks]
    return [i.skill_name for i in SkillResolver(SKILLS).resolve(given)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/review", ["review"]),
        ("/review please look at this", ["review"]),
        ("  \n/review", ["review"]),
        ("please /review this", ["review"]),
        ("end with /review", ["review"]),
        ("/pdf-tools merge them", ["pdf-tools"]),
        ("/a1 x", ["a1"]),
        ("/commit then /review", ["commit", "review"]),
        ("/review\n/commit", ["review", "commit"]),
        ("/commit /review /commit again /review", ["commit", "review"]),
        ("/hidden run it", ["hidden"]),  # explicit-only skills are still explicit-invocable
    ],
)
def test_triggers_in_first_occurrence_order(text: str, expected: list[str]) -> None:
    assert resolve(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "check /tmp now",  # unknown name inside the text is plain text
        "open /tmp/review please",  # a path, not a trigger
        "look at a/review",  # not after whitespace
        "/review/commit",  # a path again
        "/review, please",  # punctuation ends nothing: not a trigger
        "/Review it",  # names are lowercase
        "// comment",
        "/ review",
        "mail me at x@y.z /",
        "run /-review",
        "no skill here",
    ],
)
def test_text_without_a_registered_trigger_is_plain_text(text: str) -> None:
    assert resolve(text) == []


@pytest.mark.parametrize("text", ["/nope", "/nope do this", "  /nope", "/review /nope"])
def test_an_unknown_leading_name_is_skill_not_found(text: str) -> None:
    with pytest.raises(AgentError) as caught:
        resolve(text)
    assert caught.value.code is ErrorCode.SKILL_NOT_FOUND
    assert caught.value.source is ErrorSource.SKILL_RESOLVER
    assert "/nope" in caught.value.message


def test_only_top_level_text_blocks_trigger() -> None:
    file = FileContentBlock(file_name="notes.md", text="/commit\n/nope and /review")
    image = ImageBlock(mime_type="image/png", data_base64=PNG)
    assert resolve(file, image) == []
    assert resolve(file, "/review", image) == ["review"]


def test_order_spans_text_blocks_and_is_deduplicated() -> None:
    assert resolve("first /commit", "/review then /commit") == ["commit", "review"]


def test_injection_is_the_skill_prompt_in_the_b9_envelope() -> None:
    (injection,) = SkillResolver(SKILLS).resolve([TextBlock(text="/pdf-tools go")])
    assert injection.rendered_xml == "<skill>\n<name>pdf-tools</name>\nDo pdf-tools well.\n</skill>"


def test_per_turn_skills_trigger_next_to_the_registered_ones() -> None:
    translate = SkillDefinition(name="translate", description="x", prompt="Translate well.")
    mine = SkillDefinition(name="review", description="x", prompt="My own review steps.")
    resolver = SkillResolver(SKILLS)
    blocks = [TextBlock(text="/translate then /review /commit")]
    injections = resolver.resolve(blocks, (translate, mine))
    assert [(i.skill_name, i.rendered_xml) for i in injections] == [
        ("translate", "<skill>\n<name>translate</name>\nTranslate well.\n</skill>"),
        ("review", "<skill>\n<name>review</name>\nMy own review steps.\n</skill>"),
        ("commit", "<skill>\n<name>commit</name>\nDo commit well.\n</skill>"),
    ]
    with pytest.raises(AgentError) as caught:  # per-turn skills are not remembered
        resolver.resolve([TextBlock(text="/translate")])
    assert caught.value.code is ErrorCode.SKILL_NOT_FOUND


def test_find_skill_triggers_reports_whether_a_trigger_leads_its_block() -> None:
    blocks = [TextBlock(text="/x /y words /z"), TextBlock(text="/w")]
    assert find_skill_triggers(blocks) == [("x", True), ("y", True), ("z", False), ("w", True)]


def test_a_name_longer_than_64_characters_is_not_a_trigger() -> None:
    assert find_skill_triggers([TextBlock(text="/" + "a" * 64)]) == [("a" * 64, True)]
    assert find_skill_triggers([TextBlock(text="/" + "a" * 65)]) == []


def test_strip_skill_triggers_keeps_the_rest_of_the_text() -> None:
    assert strip_skill_triggers("/review fix  this\n/commit now") == "fix this now"
    assert strip_skill_triggers("see /tmp/x") == "see /tmp/x"
