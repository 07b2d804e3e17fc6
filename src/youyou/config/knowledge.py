"""``[[knowledge]]``: directories of runbooks that ``search_knowledge`` searches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from youyou.config.base import Section


class KnowledgeSourceSettings(Section):
    """A directory of Markdown or text runbooks searched by ``search_knowledge``
    (docs/knowledge.md). ``path`` is relative to the working directory of ``youyou kb index``,
    the only command that reads it; ``users`` and ``groups`` limit who searches it in the
    workbench (neither: everyone)."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    path: Path
    glob: tuple[str, ...] = Field(("**/*.md", "**/*.txt"), min_length=1)
    users: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None

    @field_validator("glob", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value
