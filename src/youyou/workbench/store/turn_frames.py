"""Copies of a running turn's SSE frames, read by processes other than the one running it.

A client following a turn through another process asks for the copies (``wb_turn_followers``);
a session's copies are those of its newest turn (the turn before it while that one starts),
keyed by the ledger seq of the turn's user message: see ``workbench/relay.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import case, delete, func, select

from youyou.workbench.store.base import StoreBase, now
from youyou.workbench.store.tables import turn_followers, turn_frames
from youyou.workbench.turn_events import TURN_END_EVENTS


@dataclass(frozen=True, slots=True)
class StoredFrame:
    frame_id: int
    event: str
    frame: str
    """The frame as it went over the wire (``id:``, ``event:`` and ``data:`` lines)."""


@dataclass(frozen=True, slots=True)
class NewestTurn:
    turn_seq: int
    ended: bool
    """Its last frame (complete, cancelled or failed) is among the copies."""


_FRAME = (turn_frames.c.frame_id, turn_frames.c.event, turn_frames.c.frame)


class TurnFrameQueries(StoreBase):
    async def request_turn_frames(self, chat_session_id: str) -> None:
        """A client follows the session's turn through a process that does not run it."""
        stmt = (
            self._insert(turn_followers)
            .values(chat_session_id=chat_session_id, requested_at=now())
            .on_conflict_do_nothing()
        )
        async with self._transaction("asking for turn frames", write=True) as conn:
            await conn.execute(stmt)

    async def take_turn_frame_requests(self, chat_session_ids: Collection[str]) -> set[str]:
        """Which of these sessions' turns a client follows elsewhere; the requests are used up."""
        if not chat_session_ids:
            return set()
        taken = (
            delete(turn_followers)
            .where(turn_followers.c.chat_session_id.in_(list(chat_session_ids)))
            .returning(turn_followers.c.chat_session_id)
        )
        async with self._transaction("taking turn frame requests", write=True) as conn:
            return set((await conn.execute(taken)).scalars())

    async def start_turn_frames(self, chat_session_id: str, turn_seq: int) -> None:
        """A turn begins: the copies of the session's other turns go."""
        stmt = delete(turn_frames).where(
            turn_frames.c.chat_session_id == chat_session_id, turn_frames.c.turn_seq != turn_seq
        )
        async with self._transaction("dropping old turn frames", write=True) as conn:
            await conn.execute(stmt)

    async def save_turn_frames(
        self, chat_session_id: str, turn_seq: int, frames: Sequence[StoredFrame]
    ) -> None:
        rows = [
            {
                "chat_session_id": chat_session_id,
                "turn_seq": turn_seq,
                "frame_id": f.frame_id,
                "event": f.event,
                "frame": f.frame,
            }
            for f in frames
        ]
        async with self._transaction("copying turn frames", write=True) as conn:
            await conn.execute(turn_frames.insert(), rows)

    async def newest_turn(self, chat_session_id: str) -> NewestTurn | None:
        """The session's newest turn with copied frames, if any."""
        ends = func.max(case((turn_frames.c.event.in_(TURN_END_EVENTS), 1), else_=0))
        stmt = (
            select(turn_frames.c.turn_seq, ends)
            .where(turn_frames.c.chat_session_id == chat_session_id)
            .group_by(turn_frames.c.turn_seq)
            .order_by(turn_frames.c.turn_seq.desc())
            .limit(1)
        )
        async with self._transaction("finding the newest turn's frames") as conn:
            found = (await conn.execute(stmt)).first()
        return None if found is None else NewestTurn(int(found[0]), bool(found[1]))

    async def turn_frames_after(
        self, chat_session_id: str, turn_seq: int, after: int
    ) -> list[StoredFrame]:
        stmt = (
            select(*_FRAME)
            .where(
                turn_frames.c.chat_session_id == chat_session_id,
                turn_frames.c.turn_seq == turn_seq,
                turn_frames.c.frame_id > after,
            )
            .order_by(turn_frames.c.frame_id)
        )
        async with self._transaction("reading turn frames") as conn:
            return [StoredFrame(*row) for row in await conn.execute(stmt)]
