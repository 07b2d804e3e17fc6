"""Workbench store records built by hand, for tests of the store, the relay and projection."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.store import ChatSessionRecord

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def chat_record(owner_id: str, **fields: Any) -> ChatSessionRecord:
    """A new, empty chat session of ``owner_id`` created at ``T0``; ``fields`` override any
    column (a fresh id and a ledger id made from it unless given)."""
    session_id = fields.pop("id", str(uuid.uuid4()))
    values: dict[str, Any] = {
        "id": session_id,
        "owner_id": owner_id,
        "ledger_session_id": f"ledger-{session_id}",
        "title": UNTITLED_SESSION,
        "model_id": "scripted/echo",
        "created_at": T0,
        "updated_at": T0,
        "message_count": 0,
        "memory_mode": "manual",
        "summary": None,
        "compacted_message_count": 0,
        "context_tokens": 0,
        "context_window_tokens": 8192,
        "last_compacted_at": None,
    }
    return ChatSessionRecord(**{**values, **fields})
