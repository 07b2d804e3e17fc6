"""What the workbench writes when a turn ends, in one transaction: a completed turn's usage,
the session's projection, the durations of the turn's tool calls and the text of its messages
for search. One transaction is one trip to the database's write lock per turn instead of one
per part; a failure leaves none of them written (the ledger has the turn, and the next turn's
indexing catches the message text up)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from youyou.workbench.store.base import StoreBase, now
from youyou.workbench.store.chat_sessions import projection_update
from youyou.workbench.store.message_texts import MessageText, index_after
from youyou.workbench.store.records import SessionProjection
from youyou.workbench.store.tables import turn_usage
from youyou.workbench.store.turn_records import durations_insert
from youyou.workbench.store.usage import TurnUsageRecord


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
        async with self._transaction("storing the end of a turn", write=True) as conn:
            if end.usage is not None:
                values = {**asdict(end.usage), "id": uuid.uuid4().hex, "created_at": now()}
                await conn.execute(turn_usage.insert().values(values))
            await conn.execute(projection_update(end.chat_session_id, end.projection))
            if end.turn_seq and end.durations:
                insert = self._insert
                stmt = durations_insert(insert, end.chat_session_id, end.turn_seq, end.durations)
                await conn.execute(stmt)
            if not end.turn_seq or end.texts is None:
                return False
            return await index_after(
                conn, self._insert, end.chat_session_id, end.turn_seq - 1, end.texts
            )
