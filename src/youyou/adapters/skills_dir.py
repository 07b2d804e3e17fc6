"""Load a skills directory: one sub-folder per skill, each holding a SKILL.md.

Used by the kernel's embedders and the CLI to register skills from disk. Every file goes
through the same validator as a workbench upload, and a bad file never hides the good ones:
it is reported with all its failing rules while the others load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_md import SkillValidationError, parse_skill_md
from youyou.domain.skill_messages import MAX_SKILL_BYTES, violation


@dataclass(frozen=True, slots=True)
class SkillsDirResult:
    skills: tuple[SkillDefinition, ...]
    errors: tuple[tuple[Path, SkillValidationError], ...]


def load_skills_dir(path: str | Path) -> SkillsDirResult:
    """Validate ``<path>/*/SKILL.md`` in sorted order; an unreadable directory is a config error.

    Hidden folders (``.git``…) are skipped. A file named like ``skill.md`` in another case is
    reported through ``skill.filename`` instead of being silently ignored. When two files
    declare the same name, the first in sorted order wins and the second is an error.
    """
    root = Path(path).expanduser()
    skills: list[SkillDefinition] = []
    errors: list[tuple[Path, SkillValidationError]] = []
    first_by_name: dict[str, Path] = {}
    for candidate in _candidates(root, errors):
        try:
            parsed = parse_skill_md(candidate.name, _read_at_most(candidate, MAX_SKILL_BYTES))
        except SkillValidationError as exc:
            errors.append((candidate, exc))
            continue
        except OSError as exc:
            errors.append((candidate, _unreadable(exc)))
            continue
        first = first_by_name.setdefault(parsed.name, candidate)
        if first != candidate:
            duplicate = violation("skill.name_duplicate", name=parsed.name, first=str(first))
            errors.append((candidate, SkillValidationError([duplicate])))
            continue
        skills.append(parsed.to_definition())
    return SkillsDirResult(tuple(skills), tuple(errors))


def _candidates(root: Path, errors: list[tuple[Path, SkillValidationError]]) -> list[Path]:
    found: list[Path] = []
    try:
        folders = sorted(root.iterdir())
    except OSError as exc:  # missing, not a directory, or not readable
        raise AgentError(
            ErrorCode.INVALID_CONFIG,
            f"skills directory cannot be read: {root}: {exc.strerror or exc}",
            source=ErrorSource.SKILL_RESOLVER,
        ) from exc
    for folder in folders:
        if folder.name.startswith(".") or not folder.is_dir():
            continue
        try:
            entries = sorted(folder.iterdir())
        except OSError as exc:
            errors.append((folder, _unreadable(exc)))
            continue
        # A dangling symlink is kept so that it is reported as unreadable, not skipped.
        found.extend(
            e
            for e in entries
            if e.name.casefold() == "skill.md" and (e.is_file() or e.is_symlink())
        )
    return found


def _read_at_most(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes: enough to tell a file over the limit whatever its size
    claims, so a SKILL.md linked to ``/dev/zero``, a pipe or a huge file is reported as too
    large instead of filling the memory."""
    with path.open("rb") as handle:
        return handle.read(limit + 1)


def _unreadable(exc: OSError) -> SkillValidationError:
    return SkillValidationError([violation("skill.unreadable", reason=exc.strerror or str(exc))])
