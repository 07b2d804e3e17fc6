"""Token counting port: one small interface, one implementation per model family."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    def count_text(self, text: str) -> int:
        """Tokens of plain text (system prompt, summary, message text)."""
        ...
