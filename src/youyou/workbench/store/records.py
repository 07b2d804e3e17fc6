"""What the workbench store hands out: immutable snapshots of rows, and its two refusals."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime


class UsernameTaken(Exception):
    """Another account already has this username (compared case-insensitively)."""


class SkillNameTaken(Exception):
    """The owner already has a skill with this name."""


class InviteUnusable(Exception):
    """The invite token is unknown, used already or expired."""


ADMIN, MEMBER = "admin", "member"


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    username: str
    password_hash: str
    created_at: datetime
    role: str = MEMBER  # ``ADMIN`` or ``MEMBER``
    disabled_at: datetime | None = None  # set: the account cannot sign in or use a token

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN


@dataclass(frozen=True, slots=True)
class GroupRecord:
    id: str
    name: str
    created_at: datetime
    member_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RemovedCounts:
    """What deleting an account removed, by kind (each a number of rows)."""

    sessions: int
    ledger_events: int
    prompts: int
    skills: int
    knowledge_documents: int
    memories: int
    tokens: int
    group_memberships: int
    invites: int


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
    """All of one user's prompts and skills, their selection and the folded names of their
    groups (which access lists match), read in one transaction: what a send assembles."""

    prompts: list[PromptRecord]
    skills: list[SkillRecord]
    selection: SelectionRecord | None
    groups: frozenset[str]


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
