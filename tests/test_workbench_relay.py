"""Copying a turn's frames to the database and following them from another process.

The copies and the follower run here against a real store (SQLite file and PostgreSQL); two
real server processes re-attaching through each other are in test_workbench_processes.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from workbench_kit import chat_record
from youyou.workbench import relay
from youyou.workbench.relay import RelayedTurn, copy_frames
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.turn_frames import NewestTurn
from youyou.workbench.streams import KEEPALIVE, Frame, TurnStream


@pytest.fixture
async def chat_id(store: WorkbenchStore) -> str:
    owner = await store.create_user("alice", "hash")
    chat = chat_record(owner.id)
    await store.create_chat_session(chat)
    return chat.id


def turn(seq: int, *texts: str, end: str | None = "turn_complete") -> list[Frame]:
    frames = [Frame(1, "turn_started", {"turnId": f"t{seq}", "userMessageSeq": seq})]
    frames += [Frame(i, "text_delta", {"text": text}) for i, text in enumerate(texts, 2)]
    if end is not None:
        frames.append(Frame(len(frames) + 1, end, {}))
    return frames


async def copied(store: WorkbenchStore, chat_id: str, frames: list[Frame]) -> None:
    """``frames`` published on a stream (two batches) while ``copy_frames`` copies them."""
    stream = TurnStream(chat_id, "turn")
    copying = asyncio.create_task(copy_frames(store, stream))
    stream.publish(frames[0])
    await asyncio.sleep(0.05)
    for frame in frames[1:]:
        stream.publish(frame)
    stream.close()
    await asyncio.wait_for(copying, 10)


class Lease:
    """Held by the other process until its turn's last frame, as in the hub."""

    def __init__(self) -> None:
        self.held = True

    async def held_elsewhere(self) -> bool:
        return self.held


async def run_turn(store: WorkbenchStore, chat_id: str, frames: list[Frame], lease: Lease) -> None:
    """The running process: frames copied as published, the last one after the release."""
    stream = TurnStream(chat_id, "turn")
    copying = asyncio.create_task(copy_frames(store, stream))
    for frame in frames[:-1]:
        stream.publish(frame)
    # the lease is held while the turn runs, well past the copy of its first frames
    started = NewestTurn(int(frames[0].data["userMessageSeq"]), ended=False)
    for _ in range(200):
        if await store.newest_turn(chat_id) == started:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    lease.held = False
    stream.publish(frames[-1])
    stream.close()
    await asyncio.wait_for(copying, 10)


async def stopped(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has ended: a follower cancelled in a store call still
    hands its connection back, and a store closed before that never answers it (the test's
    event loop then waits for ever)."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def wire(frames: list[Frame]) -> list[bytes]:
    return [frame.encode() for frame in frames]


def lease(*answers: bool) -> Callable[[], Awaitable[bool]]:
    """Whether another process holds the session: ``answers`` in turn, then the last one."""
    left = list(answers)

    async def held_elsewhere() -> bool:
        return left.pop(0) if len(left) > 1 else left[0]

    return held_elsewhere


async def read(source: RelayedTurn, after: int = 0, keepalive_s: float = 30) -> list[bytes]:
    async def collect() -> list[bytes]:
        return [chunk async for chunk in source.follow(after, keepalive_s)]

    return await asyncio.wait_for(collect(), 10)


async def test_copies_are_the_frames_as_sent_under_the_turns_user_message(
    store: WorkbenchStore, chat_id: str
) -> None:
    frames = turn(7, "a", "b")
    await copied(store, chat_id, frames)
    assert await store.newest_turn(chat_id) == NewestTurn(7, ended=True)
    stored = await store.turn_frames_after(chat_id, 7, 0)
    assert [s.frame.encode() for s in stored] == wire(frames)
    assert [s.frame_id for s in await store.turn_frames_after(chat_id, 7, 2)] == [3, 4]


async def test_a_new_turn_drops_the_copies_of_the_others(
    store: WorkbenchStore, chat_id: str
) -> None:
    await copied(store, chat_id, turn(7, "a"))
    await copied(store, chat_id, turn(3, "after a clear, a new ledger", end=None))
    assert await store.newest_turn(chat_id) == NewestTurn(3, ended=False)
    assert await store.turn_frames_after(chat_id, 7, 0) == []


async def test_requests_for_frames_are_used_up_by_the_process_running_the_turn(
    store: WorkbenchStore, chat_id: str
) -> None:
    assert await store.take_turn_frame_requests([chat_id]) == set()
    await store.request_turn_frames(chat_id)
    await store.request_turn_frames(chat_id)  # a second follower: one request
    assert await store.take_turn_frame_requests([]) == set()
    assert await store.take_turn_frame_requests(["another session", chat_id]) == {chat_id}
    assert await store.take_turn_frame_requests([chat_id]) == set()


async def test_a_follower_asks_for_the_frames_before_it_reads(
    store: WorkbenchStore, chat_id: str
) -> None:
    follower = asyncio.create_task(read(RelayedTurn(store, chat_id, Lease().held_elsewhere)))
    await asyncio.sleep(0.3)
    assert await store.take_turn_frame_requests([chat_id]) == {chat_id}
    await stopped(follower)


async def test_a_turn_that_did_not_start_is_not_copied(store: WorkbenchStore, chat_id: str) -> None:
    await copied(store, chat_id, [Frame(1, "error", {"code": "X", "message": "m"})])
    assert await store.newest_turn(chat_id) is None


async def test_a_failed_copy_is_logged_and_never_reaches_the_turn(
    store: WorkbenchStore, caplog: pytest.LogCaptureFixture
) -> None:
    await copied(store, "no-such-chat-session", turn(1, "a"))  # rejected by the foreign key
    assert await store.newest_turn("no-such-chat-session") is None
    assert "copying the frames of turn turn failed" in caplog.text


async def test_the_follower_reads_the_running_turn_to_its_end(
    store: WorkbenchStore, chat_id: str
) -> None:
    frames = turn(5, "a", "b")
    lease = Lease()
    follower = asyncio.create_task(read(RelayedTurn(store, chat_id, lease.held_elsewhere), 1))
    await asyncio.sleep(0.3)  # nothing copied yet: it polls
    await run_turn(store, chat_id, frames, lease)
    assert await follower == wire(frames[1:])


async def test_while_frames_arrive_the_follower_does_not_read_the_lease(
    store: WorkbenchStore, chat_id: str
) -> None:
    """A frame every 0.03 s, faster than the follower polls: every poll finds new frames."""
    frames = turn(5, *(f"delta {n}" for n in range(40)))
    reads: list[int] = []
    lease = Lease()

    async def held_elsewhere() -> bool:
        reads.append(1)
        return await lease.held_elsewhere()

    follower = asyncio.create_task(read(RelayedTurn(store, chat_id, held_elsewhere)))
    await asyncio.sleep(0.25)  # nothing copied yet: each poll reads the lease
    before = len(reads)
    assert before >= 2
    stream = TurnStream(chat_id, "turn")
    copying = asyncio.create_task(copy_frames(store, stream))
    for frame in frames[:-1]:
        stream.publish(frame)
        await asyncio.sleep(0.03)
    during = len(reads) - before
    lease.held = False
    stream.publish(frames[-1])
    stream.close()
    await asyncio.wait_for(copying, 10)
    assert await follower == wire(frames)
    assert during <= 2  # the poll that finds the turn; about 12 polls in all read frames


async def test_an_ended_turn_is_not_followed_while_another_process_holds_the_session(
    store: WorkbenchStore, chat_id: str
) -> None:
    """Its copies are an earlier turn's: the running one has not copied its first frame."""
    await copied(store, chat_id, turn(5, "earlier"))
    lease = Lease()
    follower = asyncio.create_task(read(RelayedTurn(store, chat_id, lease.held_elsewhere)))
    await asyncio.sleep(0.3)
    assert not follower.done()
    running = turn(7, "now")
    await run_turn(store, chat_id, running, lease)
    assert await follower == wire(running)


async def test_once_the_session_is_released_its_newest_turn_is_read_to_its_end(
    store: WorkbenchStore, chat_id: str
) -> None:
    """A compaction held the session after the turn the client followed had ended."""
    frames = turn(5, "a")
    await copied(store, chat_id, frames)
    assert await read(RelayedTurn(store, chat_id, lease(True, True, False)), after=2) == wire(
        frames[2:]
    )


async def test_a_released_session_without_a_last_frame_ends_the_stream_after_a_grace(
    store: WorkbenchStore, chat_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process running the turn died: the client re-attaches, gets 204, reads history."""
    monkeypatch.setattr(relay, "END_GRACE_S", 0.3)
    frames = turn(5, "a", end=None)
    await copied(store, chat_id, frames)
    assert await read(RelayedTurn(store, chat_id, lease(False))) == wire(frames)


async def test_an_idle_follower_sends_keep_alive_comments(
    store: WorkbenchStore, chat_id: str
) -> None:
    source = RelayedTurn(store, chat_id, lease(True))
    chunks: list[bytes] = []

    async def collect() -> None:
        async for chunk in source.follow(0, keepalive_s=0.2):
            chunks.append(chunk)

    following = asyncio.create_task(collect())
    await asyncio.sleep(0.7)
    await stopped(following)
    assert chunks and set(chunks) == {KEEPALIVE}
