"""What the workbench writes when a turn ends, in one transaction: a completed turn's usage,
the session's projection, the durations of the turn's tool calls and the text of its messages
for search. One transaction (in one trip to the driver, ``one_trip.py``) is one wait for the
database's write lock per turn instead of one per part; a failure leaves none of them written
(the ledger has the turn, and the next turn's indexing catches the message text up)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

from sqlalchemy import Insert, Update, bindparam, case, update
from sqlalchemy.dialects import postgresql, sqlite

from youyou.adapters.storage.catalog import fold
from youyou.domain.session import UNTITLED_SESSION
from youyou.workbench.store.base import StoreBase, now
from youyou.workbench.store.message_texts import INDEXED_THROUGH, MessageText, text_rows
from youyou.workbench.store.one_trip import Run
from youyou.workbench.store.records import SessionProjection
from youyou.workbench.store.tables import chat_sessions, message_texts, tool_durations, turn_usage
from youyou.workbench.store.usage import TurnUsageRecord

_PROJECTED = [f.name for f in fields(SessionProjection)] + ["title_folded"]


@dataclass(frozen=True, slots=True)
class TurnEnd:
    chat_session_id: str
    projection: SessionProjection
    usage: TurnUsageRecord | None
    """A completed turn's usage; None for a turn that failed or was cancelled."""
    turn_seq: int
    """The ledger seq of the turn's user message; 0 when the turn ended before it started."""
    durations: Mapping[str, int]
    texts: Sequence[MessageText] | None
    """The text of the turn's messages (from ``turn_seq``) as the session has them in memory;
    None when it no longer has them all (the caller indexes from the ledger)."""


class TurnEndQueries(StoreBase):
    async def record_turn_end(self, end: TurnEnd) -> bool:
        """Writes ``end``; whether its messages are indexed. False when ``texts`` is None or
        the index does not reach the turn yet (a turn whose indexing failed before): the
        caller then catches the index up from the ledger."""
        statements = _statements(self._postgresql)
        usage = None
        if end.usage is not None:
            usage = {**asdict(end.usage), "id": uuid.uuid4().hex, "created_at": now()}
        projection = _projection_values(end.chat_session_id, end.projection)

        def work(run: Run) -> bool:
            if usage is not None:
                run(statements.usage, usage)
            run(statements.projection, projection)
            session_id = end.chat_session_id
            if end.turn_seq and end.durations:
                rows = [
                    {"chat_session_id": session_id, "turn_seq": end.turn_seq, "call_id": k}
                    | {"duration_ms": v}
                    for k, v in end.durations.items()
                ]
                run(statements.durations, rows)
            if not end.turn_seq or end.texts is None:
                return False
            through = int(run(INDEXED_THROUGH, {"chat_session_id": session_id})[0][0])
            if through < end.turn_seq - 1:
                return False
            texts = text_rows(session_id, [t for t in end.texts if t.seq > through])
            if texts:
                run(statements.texts, texts)
            return True

        return await self._one_trip.run("storing the end of a turn", work, write=True)


@dataclass(frozen=True, slots=True)
class _Statements:
    usage: Insert
    projection: Update
    durations: Insert
    texts: Insert


@cache
def _statements(postgresql_dialect: bool) -> _Statements:
    """Built once per dialect, values bound when run (``one_trip.py``)."""
    insert = postgresql.insert if postgresql_dialect else sqlite.insert
    # The projection's title replaces only the untitled placeholder (a rename made while the
    # turn ran is kept); the SET clause reads the row as it was.
    untitled = chat_sessions.c.title == bindparam("untitled")
    values: dict[str, Any] = {name: bindparam(f"new_{name}") for name in _PROJECTED}
    for name in ("title", "title_folded"):
        values[name] = case((untitled, values[name]), else_=chat_sessions.c[name])
    projection = (
        update(chat_sessions).where(chat_sessions.c.id == bindparam("session_id")).values(values)
    )
    return _Statements(
        usage=turn_usage.insert(),
        projection=projection,
        durations=insert(tool_durations).on_conflict_do_nothing(),
        texts=insert(message_texts).on_conflict_do_nothing(),
    )


def _projection_values(session_id: str, projection: SessionProjection) -> dict[str, Any]:
    values = {f"new_{name}": value for name, value in asdict(projection).items()}
    values["new_title_folded"] = fold(projection.title)
    return values | {"session_id": session_id, "untitled": UNTITLED_SESSION}
