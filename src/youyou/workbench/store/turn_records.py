"""What the workbench keeps of a session's turns beside the ledger: how long each tool call ran
(the ledger has no such time), and the indexed message text (``message_texts.py``)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import delete, select

from youyou.workbench.store.base import StoreBase
from youyou.workbench.store.tables import message_texts, tool_durations


class TurnRecordQueries(StoreBase):
    async def save_tool_durations(
        self, chat_session_id: str, turn_seq: int, durations: Mapping[str, int]
    ) -> None:
        """The durations of one turn's calls (``call id → ms``); saving again keeps the first."""
        if not durations:
            return
        rows = [
            {
                "chat_session_id": chat_session_id,
                "turn_seq": turn_seq,
                "call_id": k,
                "duration_ms": v,
            }
            for k, v in durations.items()
        ]
        stmt = self._insert(tool_durations).values(rows).on_conflict_do_nothing()
        async with self._transaction("storing tool durations", write=True) as conn:
            await conn.execute(stmt)

    async def tool_durations(self, chat_session_id: str) -> dict[tuple[int, str], int]:
        """``(turn seq, call id) → ms`` of every call whose duration was stored."""
        query = select(
            tool_durations.c.turn_seq, tool_durations.c.call_id, tool_durations.c.duration_ms
        ).where(tool_durations.c.chat_session_id == chat_session_id)
        async with self._transaction("loading tool durations") as conn:
            rows = (await conn.execute(query)).all()
        return {(turn_seq, call_id): ms for turn_seq, call_id, ms in rows}

    async def forget_turn_records(self, chat_session_id: str) -> None:
        """Clearing a session starts a new ledger: the old one's durations and indexed
        message text go."""
        async with self._transaction("clearing a session's records", write=True) as conn:
            await conn.execute(
                delete(tool_durations).where(tool_durations.c.chat_session_id == chat_session_id)
            )
            await conn.execute(
                delete(message_texts).where(message_texts.c.chat_session_id == chat_session_id)
            )
