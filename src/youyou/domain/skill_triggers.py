"""The ``/skill-name`` grammar, shared by skill activation, session titles and memory queries.

A trigger is ``/name`` at the start of a text or after whitespace, ended by whitespace or the
end; ``name`` follows the SKILL.md name rules (1–64 of ``[a-z0-9-]``, no edge hyphen).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from youyou.domain.content import ContentBlock, TextBlock

_NAME = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"
_TRIGGER = re.compile(rf"(?:(?<=\s)|^)/({_NAME})(?=\s|$)")
_LEADING_TRIGGERS = re.compile(rf"^(?:\s*/{_NAME}(?=\s|$))+")
_WORD_BEFORE = re.compile(r"(?:^|\s)[^/\s]")


def find_skill_triggers(blocks: Sequence[ContentBlock]) -> list[tuple[str, bool]]:
    """``(name, leading)`` of triggers in top-level text blocks, first occurrence, de-duplicated.

    ``leading`` is true for a trigger before any other word of its block.
    """
    found: dict[str, bool] = {}
    for block in blocks:
        if isinstance(block, TextBlock):
            for match in _TRIGGER.finditer(block.text):
                leading = not _WORD_BEFORE.search(block.text[: match.start()])
                found.setdefault(match.group(1), leading)
    return list(found.items())


def strip_skill_triggers(text: str) -> str:
    """The text without any trigger, whitespace collapsed (memory search queries)."""
    return " ".join(_TRIGGER.sub(" ", text).split())


def strip_leading_skill_triggers(text: str) -> str:
    """The text without the triggers before its first word (session titles)."""
    return _LEADING_TRIGGERS.sub("", text)
