"""Session discovery: the summary projection and catalog queries (docs/sessions.md, 'Catalog')."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from youyou.domain.content import FileContentBlock, TextBlock
from youyou.domain.ledger import LedgerEvent, UserMessage, is_message
from youyou.domain.skill_triggers import strip_leading_skill_triggers

UNTITLED_SESSION = "Untitled session"
TITLE_MAX_CHARS = 80


class SessionSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int


@dataclass(frozen=True, slots=True)
class SessionListQuery:
    limit: int = 20
    cursor: str | None = None


class SearchMode(StrEnum):
    ID_PREFIX = "id_prefix"
    TITLE_CONTAINS = "title_contains"
    ID_PREFIX_OR_TITLE = "id_prefix_or_title"


@dataclass(frozen=True, slots=True)
class SessionSearchQuery:
    mode: SearchMode
    text: str


@dataclass(frozen=True, slots=True)
class SessionPage:
    items: tuple[SessionSummary, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class SessionHead:
    """The latest projection and standard metadata events, so resume can skip old events."""

    summary: SessionSummary
    last_seq: int
    profile: LedgerEvent
    latest_compaction: LedgerEvent | None
    latest_memory_checkpoint: LedgerEvent | None
    latest_memory_mode: LedgerEvent | None = None


def title_from(message: UserMessage) -> str | None:
    """Title of the first user message with text; None if it carries no text at all."""
    for block in message.content:
        if isinstance(block, TextBlock):
            line = strip_leading_skill_triggers(block.text).strip().splitlines()
        elif isinstance(block, FileContentBlock):
            line = block.text.strip().splitlines()
        else:
            continue
        first = line[0].strip() if line else ""
        return first[:TITLE_MAX_CHARS] or UNTITLED_SESSION
    return None


def next_summary(
    previous: SessionSummary | None, session_id: str, event: LedgerEvent
) -> SessionSummary:
    """The summary after ``event`` is appended; the rules live here, not in storage."""
    if previous is None:
        previous = SessionSummary(
            session_id=session_id,
            title=UNTITLED_SESSION,
            created_at=event.timestamp,
            updated_at=event.timestamp,
            message_count=0,
        )
    title = previous.title
    if title == UNTITLED_SESSION and isinstance(event.payload, UserMessage):
        title = title_from(event.payload) or title
    return SessionSummary(
        session_id=session_id,
        title=title,
        created_at=previous.created_at,
        updated_at=event.timestamp,
        message_count=previous.message_count + (1 if is_message(event.payload) else 0),
    )
