"""Cursor encoding, id-prefix ranges and search matching shared by the storage adapters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from youyou.adapters.storage.catalog import (
    SortKey,
    decode_cursor,
    encode_cursor,
    matches,
    prefix_upper_bound,
)
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.session import SearchMode, SessionSearchQuery, SessionSummary

# Strings a database can hold: no surrogates, no NUL.
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=6)


def test_cursor_round_trips_in_utc() -> None:
    at = datetime(2026, 3, 1, 17, 0, tzinfo=timezone(timedelta(hours=8)))
    key = SortKey(at, "会话-1")
    cursor = encode_cursor(key)
    assert "=" not in cursor and "/" not in cursor and "+" not in cursor
    decoded = decode_cursor(cursor)
    assert decoded == key and decoded.updated_at.tzinfo is UTC


@pytest.mark.parametrize(
    "cursor",
    ["", "%%%", "bm90IGpzb24", "eyJ1IjogMX0", "eyJ1IjogIjIwMjYtMDEtMDEiLCAiaSI6ICJ4In0"],
)
def test_bad_cursors_are_input_validation(cursor: str) -> None:
    with pytest.raises(AgentError) as exc:
        decode_cursor(cursor)
    assert exc.value.code is ErrorCode.INPUT_VALIDATION


@pytest.mark.parametrize(
    ("prefix", "bound"),
    [
        ("abc", "abd"),
        ("a\U0010ffff", "b"),
        ("\U0010ffff", None),
        ("", None),
        ("a\ud7ff", "a\ue000"),
    ],
)
def test_prefix_upper_bound_edges(prefix: str, bound: str | None) -> None:
    assert prefix_upper_bound(prefix) == bound


@given(_TEXT, _TEXT)
def test_prefix_range_is_exactly_startswith(prefix: str, candidate: str) -> None:
    bound = prefix_upper_bound(prefix)
    in_range = candidate >= prefix and (bound is None or candidate < bound)
    assert in_range == candidate.startswith(prefix)


def test_matching_modes() -> None:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    summary = SessionSummary(
        session_id="abc-1", title="CPU 100% on db_1", created_at=at, updated_at=at, message_count=1
    )

    def hit(mode: SearchMode, text: str) -> bool:
        return matches(summary, SessionSearchQuery(mode, text))

    assert hit(SearchMode.ID_PREFIX, "abc") and not hit(SearchMode.ID_PREFIX, "ABC")
    assert hit(SearchMode.TITLE_CONTAINS, "cpu 100%") and not hit(SearchMode.TITLE_CONTAINS, "abc")
    assert hit(SearchMode.ID_PREFIX_OR_TITLE, "db_") and hit(SearchMode.ID_PREFIX_OR_TITLE, "ab")
    assert not hit(SearchMode.ID_PREFIX_OR_TITLE, "zz")
