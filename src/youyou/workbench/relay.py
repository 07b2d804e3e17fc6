"""A running turn followed through another server process (several processes, PostgreSQL).

A client whose connection drops re-attaches with its ``Last-Event-ID``; behind one port with
``--workers N``, or behind a load balancer, that request may reach a process other than the
one running the turn. That process asks for the turn's frames (``wb_turn_followers``) and
serves the re-attach from copies in the database (``RelayedTurn``), polling them until the
turn's last frame. The running process sees the request when it next renews its leases
(every 0.5 s) and copies the turn's frames from the first one on, as they are published
(``copy_frames``: one insert per batch, best effort, the turn never waits for it). Turns that
nobody follows elsewhere are never copied. A session keeps the copies of its newest turn only.

The last frame of a turn is published once the session's lease is released (so that a client
reading it may send its next message at once); a follower that finds the lease released keeps
polling for ``END_GRACE_S`` before it ends the stream. Only a poll that found no new frame
reads the lease: while frames arrive, the turn is running. A stream ended without a last
frame makes the client re-attach, get 204 and read the history, as after any turn that has
ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.turn_frames import StoredFrame
from youyou.workbench.streams import KEEPALIVE, TurnStream
from youyou.workbench.turn_events import TURN_END_EVENTS

logger = logging.getLogger(__name__)

POLL_S = 0.1
END_GRACE_S = 1.0


async def copy_frames(store: WorkbenchStore, stream: TurnStream) -> None:
    """Copy ``stream``'s frames until it closes. A turn whose first frame does not name its
    user message (it failed before starting) is not copied; a failed write is logged once and
    ends the copying, never the turn."""
    turn_seq: int | None = None
    chat_id = stream.chat_session_id
    try:
        async for batch in stream.batches():
            if not batch:  # a note: progress is not copied
                continue
            if turn_seq is None:
                first = batch[0]
                if first.event != "turn_started":
                    return
                turn_seq = int(first.data["userMessageSeq"])
                await store.start_turn_frames(chat_id, turn_seq)
            copies = [StoredFrame(f.id, f.event, f.text()) for f in batch]
            await store.save_turn_frames(chat_id, turn_seq, copies)
    except Exception:
        logger.warning("copying the frames of turn %s failed", stream.turn_id, exc_info=True)


class RelayedTurn:
    """The turn another process runs in a session, read from the copies of its frames.

    ``held_elsewhere`` says whether another process still holds the session's lease. Until it
    is released, a newest turn whose copies already end is an earlier turn: the running one
    has not copied its first frames yet (or the lease is held for a compaction), so the
    follower waits for a newer one.
    """

    def __init__(
        self,
        store: WorkbenchStore,
        chat_session_id: str,
        held_elsewhere: Callable[[], Awaitable[bool]],
    ) -> None:
        self._store = store
        self._chat_id = chat_session_id
        self._held_elsewhere = held_elsewhere

    async def follow(self, after: int, keepalive_s: float) -> AsyncIterator[bytes]:
        await self._store.request_turn_frames(self._chat_id)
        loop = asyncio.get_running_loop()
        turn_seq: int | None = None
        quiet_since = loop.time()
        released_at: float | None = None
        while True:
            held: bool | None = None
            if turn_seq is None:
                held = await self._held_elsewhere()
                newest = await self._store.newest_turn(self._chat_id)
                if newest is not None and (not newest.ended or not held):
                    turn_seq = newest.turn_seq
            frames = []
            if turn_seq is not None:
                frames = await self._store.turn_frames_after(self._chat_id, turn_seq, after)
            for frame in frames:
                yield frame.frame.encode()
                after = frame.frame_id
                if frame.event in TURN_END_EVENTS:
                    return
            now = loop.time()
            if frames:  # the turn is alive: its lease need not be read
                quiet_since = now
            else:
                if now - quiet_since >= keepalive_s:
                    yield KEEPALIVE
                    quiet_since = now
                if held is None:
                    held = await self._held_elsewhere()
                if not held:
                    released_at = now if released_at is None else released_at
                    if now - released_at >= END_GRACE_S:
                        return
            await asyncio.sleep(POLL_S)
