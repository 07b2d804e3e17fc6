"""What the workbench store hands out: immutable snapshots of rows, and its two refusals."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime


class UsernameTaken(Exception):
    """Another account already has this username (compared case-insensitively)."""


class SkillNameTaken(Exception):
    """The owner already has a skill with this name."""


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    username: str
    password_hash: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class PromptRecord:
    id: str
    owner_id: str
    label: str
    content: str
    is_default: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SkillRecord:
    id: str
    owner_id: str
    filename: str
    name: str
    description: str
    content: str
    size_bytes: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SelectionRecord:
    owner_id: str
    system_prompt_id: str | None
    skill_ids: tuple[str, ...]
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class OwnerAssets:
    """All of one user's prompts and skills and their selection, read in one transaction."""

    prompts: list[PromptRecord]
    skills: list[SkillRecord]
    selection: SelectionRecord | None


@dataclass(frozen=True, slots=True)
class SessionProjection:
    """The part of a chat session row rewritten after each turn (read off the kernel)."""

    ledger_session_id: str
    title: str
    updated_at: datetime
    message_count: int
    memory_mode: str
    summary: str | None
    compacted_message_count: int
    context_tokens: int
    context_window_tokens: int
    last_compacted_at: datetime | None


@dataclass(frozen=True, slots=True)
class ChatSessionRecord:
    id: str
    owner_id: str
    ledger_session_id: str
    title: str
    model_id: str
    created_at: datetime
    updated_at: datetime
    message_count: int
    memory_mode: str
    summary: str | None
    compacted_message_count: int
    context_tokens: int
    context_window_tokens: int
    last_compacted_at: datetime | None

    @property
    def projection(self) -> SessionProjection:
        """The part rewritten after each turn, for ``update_chat_session``."""
        return SessionProjection(
            **{f.name: getattr(self, f.name) for f in fields(SessionProjection)}
        )
