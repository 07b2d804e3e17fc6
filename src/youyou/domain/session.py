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


def title_from(message: UserMessage) -> str:
    """The first line of the first text or file block that has one, or ``UNTITLED_SESSION``."""
    for block in message.content:
        if isinstance(block, TextBlock):
            text = strip_leading_skill_triggers(block.text)
        elif isinstance(block, FileContentBlock):
            text = block.text
        else:
            continue
        lines = text.strip().splitlines()
        if lines and (first := lines[0].strip()):
            return first[:TITLE_MAX_CHARS]
    return UNTITLED_SESSION


def next_summary(
    previous: SessionSummary | None, session_id: str, event: LedgerEvent
) -> SessionSummary:
    """The summary after ``event`` is appended; the rules live here, not in storage.

    The title is decided once, by the first user message (the first message of a session):
    a later message never replaces it, even when it stayed ``UNTITLED_SESSION``. The title
    alone cannot tell "not decided yet" from "decided untitled", while the message count can.
    """
    if previous is None:
        previous = SessionSummary(
            session_id=session_id,
            title=UNTITLED_SESSION,
            created_at=event.timestamp,
            updated_at=event.timestamp,
            message_count=0,
        )
    title = previous.title
    if previous.message_count == 0 and isinstance(event.payload, UserMessage):
        title = title_from(event.payload)
    return SessionSummary(
        session_id=session_id,
        title=title,
        created_at=previous.created_at,
        updated_at=event.timestamp,
        message_count=previous.message_count + (1 if is_message(event.payload) else 0),
    )
