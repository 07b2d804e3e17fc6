"""SKILL.md validation: each rule at its boundary, several failures at once, and properties."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.skill_md import (
    ParsedSkill,
    SkillValidationError,
    parse_skill_md,
    validate_skill_md,
)
from youyou.domain.skill_messages import MAX_SKILL_BYTES, RULE_IDS

# Rules only the skills-directory loader can break (they need a file system or several files).
DIRECTORY_RULES = {"skill.unreadable", "skill.name_duplicate"}


def skill_md(
    name: str = "log-analysis",
    description: str = "Analyse application logs during an incident.",
    body: str = "# Steps\n\n1. Read the logs.\n",
    more: str = "",
) -> str:
    return f"---\nname: {name}\ndescription: {description}\n{more}---\n\n{body}"


def padded_to(size: int) -> bytes:
    """A valid SKILL.md of exactly ``size`` bytes (the body is padded)."""
    head = skill_md(body="").encode()
    return head + b"x" * (size - len(head))


def md(**fields: str) -> bytes:
    return skill_md(**fields).encode()


Invalid = tuple[str, bytes, tuple[str, ...]]


def ok(case_id: str, content: bytes) -> tuple[str, bytes]:
    return case_id, content


def bad(
    case_id: str, content: bytes, *rules: str, filename: str = "SKILL.md"
) -> tuple[str, Invalid]:
    return case_id, (filename, content, rules)


NOT_MAPPING = "skill.frontmatter_not_mapping"
NO_FRONTMATTER = "skill.frontmatter_missing"
BAD_YAML = "skill.frontmatter_yaml"
BAD_VALUE = "skill.frontmatter_value"
ALIAS_BOMB = (
    "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
)
AGENT_SKILLS_FIELDS = (
    "license: Apache-2.0\ncompatibility: needs kubectl\n"
    "metadata:\n  author: sre\n  version: '1.0'\nallowed-tools: Bash(kubectl:*) Read\n"
)

VALID = [
    ok("minimal", md()),
    ok("one-char name", md(name="a")),
    ok("quoted digits", md(name="'007'")),
    ok("single hyphens", md(name="a-b-9")),
    ok("64-char name", md(name="a" * 64)),
    ok("1024-char description", md(description="d" * 1024)),
    ok("1024 after strip", md(description=f"'  {'d' * 1024}  '")),
    ok("exactly 65536 bytes", padded_to(MAX_SKILL_BYTES)),
    ok("UTF-8 BOM", b"\xef\xbb\xbf" + md()),
    ok("CRLF", skill_md().replace("\n", "\r\n").encode()),
    ok("blank lines first", ("\n\n  \n" + skill_md()).encode()),
    ok("no body", b"---\nname: a\ndescription: b\n---"),
    ok("trailing spaces on fences", b"--- \nname: a\ndescription: b\n---\t\nx"),
    ok("chinese description", md(description="分析日志")),
    ok("block description", md(description="|\n  line one\n  line two")),
    ok("optional Agent Skills fields", md(more=AGENT_SKILLS_FIELDS)),
    ok("unknown keys", md(more="team: payments\nreviewed: 2024-05-01\n")),
]

INVALID = [
    bad("lowercase filename", md(), "skill.filename", filename="skill.md"),
    bad("path in filename", md(), "skill.filename", filename="a/SKILL.md"),
    bad("windows path", md(), "skill.filename", filename="a\\SKILL.md"),
    bad("empty filename", md(), "skill.filename", filename=""),
    bad("filename with space", md(), "skill.filename", filename="SKILL.md "),
    bad("empty file", b"", "skill.empty"),
    bad("empty and misnamed", b"", "skill.filename", "skill.empty", filename="README.md"),
    bad("65537 bytes", padded_to(MAX_SKILL_BYTES + 1), "skill.too_large"),
    bad("not UTF-8", skill_md(description="caf\xe9").encode("latin-1"), "skill.encoding"),
    bad("large, not UTF-8", b"\xff" * (MAX_SKILL_BYTES + 1), "skill.too_large", "skill.encoding"),
    bad("NUL byte", md(body="a\x00b"), "skill.binary"),
    bad("whitespace only", b" \n\t\r\n ", "skill.blank"),
    bad("BOM only", b"\xef\xbb\xbf", "skill.blank"),
    bad("plain markdown", b"# Runbook\n\nDo things.", NO_FRONTMATTER),
    bad("text before frontmatter", ("# T\n" + skill_md()).encode(), NO_FRONTMATTER),
    bad("unclosed frontmatter", b"---\nname: a\ndescription: b\n", NO_FRONTMATTER),
    bad("yaml on fence line", b"--- name: a\ndescription: b\n---\n", NO_FRONTMATTER),
    bad("fence with text", b"---\nname: a\ndescription: b\n---x\n", NO_FRONTMATTER),
    bad("yaml syntax", b"---\nname: [a\ndescription: b\n---\n", BAD_YAML),
    bad("bad tab indent", b"---\nname: a\n\tdescription: b\n---\n", BAD_YAML),
    bad("impossible date", md(more="when: 2024-99-99\n"), BAD_YAML),
    bad("python tag", md(more="x: !!python/name:os.system\n"), BAD_YAML),
    bad("empty frontmatter", b"---\n---\nbody", NOT_MAPPING),
    bad("list frontmatter", b"---\n- name\n- description\n---\n", NOT_MAPPING),
    bad("scalar frontmatter", b"---\nhello\n---\n", NOT_MAPPING),
    bad("binary value", md(more="x: !!binary aGk=\n"), BAD_VALUE),
    bad("set value", md(more="x: !!set {a}\n"), BAD_VALUE),
    bad("cyclic value", md(more="x: &c [*c]\n"), BAD_VALUE),
    bad("alias bomb", md(more=ALIAS_BOMB), BAD_VALUE),
    bad("no name", b"---\ndescription: b\n---\n", "skill.name_missing"),
    bad("null name", md(name=""), "skill.name_missing"),
    bad("integer name", md(name="123"), "skill.name_not_string"),
    bad("boolean name", md(name="yes"), "skill.name_not_string"),
    bad("list name", md(name="[a]"), "skill.name_not_string"),
    bad("empty name", md(name="''"), "skill.name_length"),
    bad("65-char name", md(name="a" * 65), "skill.name_length"),
    bad("uppercase", md(name="Log-Analysis"), "skill.name_charset"),
    bad("unicode letters", md(name="café"), "skill.name_charset"),
    bad("chinese name", md(name="日志分析"), "skill.name_charset"),
    bad("underscore", md(name="log_analysis"), "skill.name_charset"),
    bad("inner space", md(name="'log analysis'"), "skill.name_charset"),
    bad("quoted padding", md(name="' log'"), "skill.name_charset"),
    bad("leading hyphen", md(name="-log"), "skill.name_hyphen_edge"),
    bad("trailing hyphen", md(name="log-"), "skill.name_hyphen_edge"),
    bad("double hyphen", md(name="log--analysis"), "skill.name_double_hyphen"),
    bad("only hyphens", md(name="'--'"), "skill.name_hyphen_edge", "skill.name_double_hyphen"),
    bad("no description", b"---\nname: a\n---\n", "skill.description_missing"),
    bad("numeric description", md(description="42"), "skill.description_not_string"),
    bad("mapping description", md(description="{a: b}"), "skill.description_not_string"),
    bad("blank description", md(description="'   '"), "skill.description_empty"),
    bad("1025-char description", md(description="d" * 1025), "skill.description_too_long"),
    bad(
        "everything at once",
        md(name="'-Bad--Name_" + "x" * 60 + "-'", description="d" * 2000),
        "skill.filename",
        "skill.name_length",
        "skill.name_charset",
        "skill.name_hyphen_edge",
        "skill.name_double_hyphen",
        "skill.description_too_long",
        filename="skill.md",
    ),
    bad(
        "name and description missing",
        b"---\nlicense: MIT\n---\n",
        "skill.name_missing",
        "skill.description_missing",
    ),
    bad(
        "value rule with name rule",
        md(name="A", more="x: !!set {a}\n"),
        "skill.name_charset",
        BAD_VALUE,
    ),
]


@pytest.mark.parametrize("content", [pytest.param(c, id=i) for i, c in VALID])
def test_valid_files_parse(content: bytes) -> None:
    parsed = parse_skill_md("SKILL.md", content)
    assert validate_skill_md("SKILL.md", content) == ()
    assert parsed.size_bytes == len(content)
    assert parsed.content.startswith("---") and "\r" not in parsed.content
    assert parsed.content.endswith(parsed.body)


@pytest.mark.parametrize(
    ("filename", "content", "rules"), [pytest.param(*case, id=i) for i, case in INVALID]
)
def test_invalid_files_report_every_failing_rule(
    filename: str, content: bytes, rules: tuple[str, ...]
) -> None:
    with pytest.raises(SkillValidationError) as caught:
        parse_skill_md(filename, content)
    assert caught.value.rule_ids == rules
    assert tuple(v.rule_id for v in validate_skill_md(filename, content)) == rules


def test_the_table_covers_every_file_rule() -> None:
    covered = {rule for _, (_, _, rules) in INVALID for rule in rules}
    assert covered == set(RULE_IDS) - DIRECTORY_RULES


def test_parsed_fields_and_definition() -> None:
    content = skill_md(
        description="'  Analyse logs.  '",
        body="# Steps\n\nRead the logs.\n\n",
        more="license: MIT\nmetadata:\n  version: 2024-05-01\nallowed-tools: Read\n7: seven\n",
    )
    parsed = parse_skill_md("SKILL.md", ("\ufeff" + content).replace("\n", "\r\n").encode())
    assert parsed == ParsedSkill(
        name="log-analysis",
        description="Analyse logs.",
        body="# Steps\n\nRead the logs.",
        content=content.strip(),
        extra={
            "license": "MIT",
            "metadata": {"version": "2024-05-01"},
            "allowed-tools": "Read",
            "7": "seven",
        },
        size_bytes=len(content.encode()) + 3 + content.count("\n"),
    )
    definition = parsed.to_definition()
    assert (definition.name, definition.description) == ("log-analysis", "Analyse logs.")
    assert definition.prompt == parsed.body
    assert definition.extra == parsed.extra and definition.extra is not parsed.extra
    assert definition.allow_implicit_invocation and definition.tool_dependencies == ()


def test_error_is_an_input_validation_agent_error_in_two_languages() -> None:
    with pytest.raises(AgentError) as caught:
        parse_skill_md("skill.md", b"")
    error = caught.value
    assert isinstance(error, SkillValidationError)
    assert error.code is ErrorCode.INPUT_VALIDATION
    assert (
        error.message
        == error.render("zh-CN")
        == ("Skill 文件名必须严格为 SKILL.md。Skill 文件不能为空，请上传 UTF-8 Markdown 文本。")
    )
    assert error.render("en") == (
        "The skill file must be named exactly SKILL.md. "
        "The skill file is empty; upload UTF-8 Markdown text."
    )


def test_messages_name_the_numbers_and_the_yaml_problem() -> None:
    too_long = validate_skill_md(
        "SKILL.md", skill_md(name="a" * 70, description="d" * 1030).encode()
    )
    assert "70" in too_long[0].message_zh and "70" in too_long[0].message_en
    assert "1030" in too_long[1].message("zh-CN") and "1030" in too_long[1].message("en")
    (bad_yaml,) = validate_skill_md("SKILL.md", b"---\nname: a\nname: [\n---\n")
    assert bad_yaml.message_zh.startswith(
        "SKILL.md 的 YAML frontmatter 格式无效。（frontmatter 第 "
    )
    assert "line 2" in bad_yaml.message_en


# --- properties ----------------------------------------------------------------------------

FILENAMES = st.one_of(st.just("SKILL.md"), st.text(max_size=20))
YAML_ISH = st.text(alphabet="-:[]{}&*!|>'\"#%@`,?\n\t ab\x85\u2028\ufeff\r\x00", max_size=200)
CONTENTS = st.one_of(
    st.binary(max_size=400),
    st.builds(lambda y, b: f"---\n{y}\n---\n{b}".encode(), YAML_ISH, st.text(max_size=50)),
    st.builds(lambda y: f"---\nname: a\ndescription: b\n{y}\n---\n".encode(), YAML_ISH),
    st.builds(
        lambda n, d: f"---\nname: {n}\ndescription: {d}\n---\n".encode("utf-8", "replace"),
        st.text(max_size=80),
        st.text(max_size=80),
    ),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(FILENAMES, CONTENTS)
def test_any_input_either_parses_or_raises_the_validation_error(
    filename: str, content: bytes
) -> None:
    try:
        parsed = parse_skill_md(filename, content)
    except SkillValidationError as exc:
        assert exc.violations
        assert validate_skill_md(filename, content) == exc.violations
        assert all(v.rule_id in RULE_IDS and v.message_zh and v.message_en for v in exc.violations)
    else:
        assert filename == "SKILL.md"
        assert parsed.to_definition().name == parsed.name


NAMES = st.from_regex(r"[a-z0-9]{1,9}(-[a-z0-9]{1,10}){0,5}", fullmatch=True)  # ≤ 64 chars
# PyYAML's emitter writes the YAML 1.1 line breaks NEL/LS/PS unescaped and its reader then folds
# them into spaces, so they cannot round-trip through ``safe_dump`` at all.
DUMPABLE = st.characters(blacklist_characters="\x85\u2028\u2029")
DESCRIPTIONS = st.text(DUMPABLE, min_size=1, max_size=1024).filter(lambda d: d.strip() != "")
EXTRA_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12).filter(
    lambda k: k not in ("name", "description")
)
EXTRAS = st.dictionaries(
    EXTRA_KEYS, st.one_of(st.text(DUMPABLE, max_size=40), st.integers()), max_size=4
)
BODIES = st.text(max_size=500)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(NAMES, DESCRIPTIONS, EXTRAS, BODIES)
def test_valid_generated_skills_round_trip(
    name: str, description: str, extra: dict[str, object], body: str
) -> None:
    front = yaml.safe_dump(
        {"name": name, "description": description, **extra}, allow_unicode=True, sort_keys=False
    )
    content = f"---\n{front}---\n{body}".encode()
    if "\x00" in body:
        assert validate_skill_md("SKILL.md", content)[0].rule_id == "skill.binary"
        return
    parsed = parse_skill_md("SKILL.md", content)
    assert (parsed.name, parsed.description, parsed.extra) == (name, description.strip(), extra)
    assert parsed.body == body.replace("\r\n", "\n").strip()
    again = parse_skill_md("SKILL.md", parsed.content.encode())
    assert again == dataclasses.replace(parsed, size_bytes=len(parsed.content.encode()))
