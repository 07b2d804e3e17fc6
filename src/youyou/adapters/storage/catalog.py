"""Catalog query rules shared by the storage adapters: order, cursors, search matching.

Sessions are listed newest first by ``(updated_at, session_id)`` descending; the cursor is the
key of the last item of a page, opaque to callers (urlsafe base64 of a small JSON object).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from youyou.adapters.storage.errors import invalid_query, storage_error
from youyou.domain.errors import AgentError
from youyou.domain.session import SearchMode, SessionPage, SessionSearchQuery, SessionSummary

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


@dataclass(frozen=True, slots=True, order=True)
class SortKey:
    updated_at: datetime
    session_id: str

    @classmethod
    def of(cls, summary: SessionSummary) -> SortKey:
        return cls(summary.updated_at.astimezone(UTC), summary.session_id)


def append_action(session_id: str, seq: int, summary: SessionSummary) -> str:
    """The label of an append for its errors; refuses a summary of another session."""
    action = f"appending event {seq} to session {session_id!r}"
    if summary.session_id != session_id:
        raise storage_error(f"{action}: summary is for session {summary.session_id!r}")
    return action


def seq_conflict(action: str) -> AgentError:
    return storage_error(f"{action}: seq does not follow the session's last seq")


def check_limit(limit: int) -> None:
    if limit < 1:
        raise invalid_query(f"limit must be at least 1, got {limit}")


def encode_cursor(key: SortKey) -> str:
    raw = json.dumps({"u": key.updated_at.isoformat(), "i": key.session_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> SortKey:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        updated_at = datetime.fromisoformat(data["u"])
        session_id = data["i"]
    except (binascii.Error, ValueError, TypeError, KeyError) as exc:
        raise invalid_query("invalid session list cursor") from exc
    if not isinstance(session_id, str) or updated_at.tzinfo is None:
        raise invalid_query("invalid session list cursor")
    return SortKey(updated_at.astimezone(UTC), session_id)


def page_of(newest_first: Sequence[SessionSummary], limit: int) -> SessionPage:
    """A page from up to ``limit + 1`` ordered items: the extra one only says "there is more"."""
    items = tuple(newest_first[:limit])
    more = len(newest_first) > limit
    return SessionPage(items, encode_cursor(SortKey.of(items[-1])) if more else None)


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (code point order).

    ``id >= prefix AND id < bound`` is an index range on both databases, case-sensitive, and
    needs no LIKE escaping. None means "no upper bound" (empty prefix or all U+10FFFF).
    """
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last in _SURROGATES:
            last = _SURROGATES.stop
        if last <= _MAX_CODE_POINT:
            return "".join(chars) + chr(last)
    return None


def fold(title: str) -> str:
    """Case-insensitive search form of a title (or of the searched text).

    Folded in Python, not by the database, so every backend matches the same way (SQLite's own
    ``lower`` only knows ASCII) and a plain LIKE / trigram index can serve the search.
    """
    return title.lower()


def matches(summary: SessionSummary, query: SessionSearchQuery) -> bool:
    """The in-memory twin of the SQL search predicates."""
    by_id = summary.session_id.startswith(query.text)
    by_title = fold(query.text) in fold(summary.title)
    if query.mode is SearchMode.ID_PREFIX:
        return by_id
    if query.mode is SearchMode.TITLE_CONTAINS:
        return by_title
    return by_id or by_title
