"""Skills directory loader against real files in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from youyou.adapters.skills_dir import load_skills_dir
from youyou.domain.errors import AgentError, ErrorCode


def write_skill(root: Path, folder: str, text: str, filename: str = "SKILL.md") -> Path:
    path = root / folder / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, description: str = "Does a thing.", body: str = "Steps.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def test_valid_skills_load_in_folder_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "b-rollback", skill_text("rollback", body="# Rollback\nRevert."))
    write_skill(tmp_path, "a-logs", skill_text("log-analysis", "Analyse logs.", "# Logs"))
    result = load_skills_dir(tmp_path)
    assert result.errors == ()
    assert [s.name for s in result.skills] == ["log-analysis", "rollback"]
    logs = result.skills[0]
    assert (logs.description, logs.prompt) == ("Analyse logs.", "# Logs")


def test_invalid_files_are_reported_with_every_rule_and_do_not_block_others(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path, "good", skill_text("good"))
    bad = write_skill(tmp_path, "bad", skill_text("Bad--Name-", "d" * 1025))
    result = load_skills_dir(tmp_path)
    assert [s.name for s in result.skills] == ["good"]
    ((path, error),) = result.errors
    assert path == bad
    assert error.code is ErrorCode.INPUT_VALIDATION
    assert error.rule_ids == (
        "skill.name_charset",
        "skill.name_hyphen_edge",
        "skill.name_double_hyphen",
        "skill.description_too_long",
    )


def test_binary_and_empty_files_are_reported(tmp_path: Path) -> None:
    empty = write_skill(tmp_path, "empty", "")
    binary = tmp_path / "binary" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"\xff\xfe\x00junk")
    result = load_skills_dir(tmp_path)
    assert result.skills == ()
    assert [(p, e.rule_ids) for p, e in result.errors] == [
        (binary, ("skill.encoding",)),
        (empty, ("skill.empty",)),
    ]


def test_duplicate_names_keep_the_first_and_report_the_rest(tmp_path: Path) -> None:
    first = write_skill(tmp_path, "one", skill_text("triage", "First."))
    second = write_skill(tmp_path, "two", skill_text("triage", "Second."))
    result = load_skills_dir(tmp_path)
    assert [(s.name, s.description) for s in result.skills] == [("triage", "First.")]
    ((path, error),) = result.errors
    assert path == second and error.rule_ids == ("skill.name_duplicate",)
    assert str(first) in error.render("zh-CN") and str(first) in error.render("en")
    assert "triage" in error.message


def test_wrongly_cased_file_names_are_reported_not_ignored(tmp_path: Path) -> None:
    lower = write_skill(tmp_path, "lower", skill_text("lower"), filename="skill.md")
    result = load_skills_dir(tmp_path)
    assert result.skills == ()
    assert [(p, e.rule_ids) for p, e in result.errors] == [(lower, ("skill.filename",))]


def test_only_one_level_of_folders_and_no_hidden_ones(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text(skill_text("at-root"), encoding="utf-8")
    write_skill(tmp_path, "outer/inner", skill_text("too-deep"))
    write_skill(tmp_path, ".git", skill_text("hidden"))
    write_skill(tmp_path, "notes", "just notes", filename="README.md")
    write_skill(tmp_path, "real", skill_text("real"))
    result = load_skills_dir(str(tmp_path))
    assert [s.name for s in result.skills] == ["real"]
    assert result.errors == ()


def test_a_dangling_symlink_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "gone").mkdir()
    link = tmp_path / "gone" / "SKILL.md"
    link.symlink_to(tmp_path / "nowhere.md")
    ((path, error),) = load_skills_dir(tmp_path).errors
    assert path == link and error.rule_ids == ("skill.unreadable",)
    assert "No such file" in error.render("en")


@pytest.mark.parametrize("target", ["absent", "a-file"])
def test_a_missing_directory_or_a_file_is_a_config_error(tmp_path: Path, target: str) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    with pytest.raises(AgentError) as caught:
        load_skills_dir(tmp_path / target)
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert str(tmp_path / target) in caught.value.message


def test_an_empty_directory_loads_nothing(tmp_path: Path) -> None:
    result = load_skills_dir(tmp_path)
    assert (result.skills, result.errors) == ((), ())


def test_a_home_relative_path_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    write_skill(tmp_path / "skills", "triage", skill_text("triage"))
    assert [s.name for s in load_skills_dir("~/skills").skills] == ["triage"]
