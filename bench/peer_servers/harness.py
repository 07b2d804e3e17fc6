"""What every server of the side-by-side benchmark shares: the adapter contract, the streaming
client that checks each answer word for word, and the two measured phases.

An adapter knows one server: how to start it in front of the fake model, how to make a fresh
user and conversation, how to send a message and what its stream's frames mean. Everything
else (timing, CPU and memory readings, answer checks) is here, identical for every server, so
that the numbers differ only by the server. The stream is read from the wire with httpx
(``aiter_raw``), the same way for all.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
from fake_openai import ANSWER
from server_load import CpuMeter, launch_and_wait, process_tree, vm_hwm_mib

# The peers' own environments (made by setup.sh), outside the repository.
PEERS = Path(os.environ.get("YOUYOU_PEERS_DIR", Path.home() / ".cache" / "youyou-peers"))
START_TIMEOUT_S = 180
# Sign-ups and sign-ins hash passwords (Argon2id, bcrypt), slow on purpose: two at a time, as
# YouYou lets one client address have at most two hashes in flight. New conversations: more.
SIGN_UP_CONCURRENCY = 2
OPEN_CONCURRENCY = 8
QUESTION = "Turn {n}: is the checkout service healthy?"
READ_BACK_AFTER_S = 2.0


@dataclass
class Frame:
    """What one stream frame meant: answer text, the end of the turn, or an error."""

    text: str = ""
    done: bool = False
    error: str = ""


@dataclass
class Conversation:
    """One user's conversation: the headers its requests carry (its token) and the server's
    ids for it; ``history`` is for servers whose client sends the whole conversation;
    ``live`` holds what an adapter keeps open for it (a socket); ``answered`` counts its turns
    that passed every check."""

    headers: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    live: dict[str, Any] = field(default_factory=dict)
    answered: int = 0


@dataclass
class Started:
    """A running server: its process (None for the fake alone) and its address."""

    process: subprocess.Popen[str] | None
    base_url: str


class Adapter(Protocol):
    """One server: start it in ``root`` (its data folder, new each round) in front of the model
    at ``model_url`` and return once it answers; make a fresh account (what its requests carry:
    a token); open a new conversation of an account;
    send a message and yield what its answer's stream means, frame by frame, until the end of
    the turn (most through ``sse``); after a checked answer, do what its own client does to
    keep the turn (if anything; returns an error, or ""); read back what it kept of a
    conversation as (role, text) pairs (None: it keeps nothing); close what ``open`` left
    open."""

    name: str
    # What the server keeps of a turn, and when it is on disk.
    stores: str
    # The stream has an explicit end-of-turn frame; without one the end of the body ends it.
    end_frame: bool

    def start(self, root: Path, model_url: str) -> Started: ...

    def stop(self, started: Started) -> None: ...

    async def sign_up(self, http: httpx.AsyncClient, name: str) -> dict[str, str]: ...

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation: ...

    def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]: ...

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str: ...

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None: ...

    async def close(self, chat: Conversation) -> None: ...


def openai_frame(data: bytes) -> Frame:
    """A chunk of an OpenAI Chat Completions stream (the fake's own, and Open WebUI's)."""
    if data == b"[DONE]":
        return Frame(done=True)
    body = json.loads(data)
    if "error" in body:
        return Frame(error=str(body["error"])[:200])
    choices = body.get("choices") or []
    text = "".join((c.get("delta") or {}).get("content") or "" for c in choices)
    return Frame(text=text)


def launch(
    command: list[str], env: dict[str, str], root: Path, health_url: str
) -> subprocess.Popen[str]:
    """Start a server in ``root`` (its log in ``root/server.log``) with only ``env`` and a
    minimal PATH/HOME, and wait until ``health_url`` answers 200."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), **env}
    base["NO_PROXY"] = "127.0.0.1,localhost"

    def ready(http: httpx.Client) -> bool:
        return http.get(health_url).status_code == 200

    return launch_and_wait(command, base, root, ready, START_TIMEOUT_S)


# -- the client ---------------------------------------------------------------------------


@dataclass
class Tally:
    """One phase's turns: first-token times of the good ones, failures by kind, and the
    conversations read back without all their checked turns, by what was missing."""

    ttft_ms: list[float] = field(default_factory=list)
    turns: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    bad_answers: list[str] = field(default_factory=list)
    unkept: Counter[str] = field(default_factory=Counter)


def _frames(buffer: bytes) -> tuple[list[tuple[str, bytes]], bytes]:
    """Complete SSE frames in ``buffer`` as (event, data), and the incomplete rest."""
    *raw_frames, rest = buffer.replace(b"\r\n", b"\n").split(b"\n\n")
    frames = []
    for raw in raw_frames:
        event, data = "message", []
        for line in raw.split(b"\n"):
            if line.startswith(b"event:"):
                event = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].strip())
        if data:  # comments (keep-alives) carry none
            frames.append((event, b"\n".join(data)))
    return frames, rest


async def sse(
    http: httpx.AsyncClient, request: httpx.Request, parse: Callable[[str, bytes], Frame]
) -> AsyncIterator[Frame]:
    """Send ``request`` and read its server-sent events to the end of the body, each frame
    (event name, data) as ``parse`` reads it; a refusal is an error frame."""
    response = await http.send(request, stream=True)
    try:
        if response.status_code != 200:
            await response.aread()
            yield Frame(error=f"HTTP {response.status_code}")
            return
        buffer = b""
        async for chunk in response.aiter_raw():
            frames, buffer = _frames(buffer + chunk)
            for event, data in frames:
                yield parse(event, data)
    finally:
        await response.aclose()


async def turn(
    adapter: Adapter, http: httpx.AsyncClient, chat: Conversation, text: str, tally: Tally
) -> None:
    """Send one message, read its stream to the end, check the answer word for word."""
    sent = time.perf_counter()
    first: float | None = None
    pieces: list[str] = []
    done, error = False, ""
    try:
        async for frame in adapter.stream(http, chat, text):
            if frame.text and first is None:
                first = time.perf_counter()
            pieces.append(frame.text)
            error = error or frame.error
            done = done or frame.done
    except (httpx.HTTPError, OSError, TimeoutError) as exc:
        tally.errors[f"transport {type(exc).__name__}"] += 1
        return
    answer = "".join(pieces)
    if error:
        tally.errors[error[:80]] += 1
    elif adapter.end_frame and not done:
        tally.errors["stream ended without the end of the turn"] += 1
    elif answer.split() != ANSWER.split() or first is None:
        tally.errors["answer differs from the model's"] += 1
        tally.bad_answers.append(answer[:200])
    else:
        try:
            error = await adapter.answered(http, chat, text, answer)
        except httpx.HTTPError as exc:
            error = f"transport {type(exc).__name__} keeping the turn"
        if error:
            tally.errors[error] += 1
            return
        tally.turns += 1
        tally.ttft_ms.append((first - sent) * 1000)
        chat.answered += 1


async def check_stored(
    adapter: Adapter, people: list[tuple[httpx.AsyncClient, Conversation]], tally: Tally
) -> None:
    """After a phase: each conversation the server keeps must hold every checked turn, the
    question and the answer word for word; one that does not is counted in ``unkept``. Read
    ``READ_BACK_AFTER_S`` after the phase, for servers that write after the end of the turn."""
    await asyncio.sleep(READ_BACK_AFTER_S)
    expected = ANSWER.split()
    for http, chat in people:
        try:
            kept = await adapter.stored(http, chat)
        except httpx.HTTPError as exc:
            tally.unkept[f"reading back: {type(exc).__name__}"] += 1
            continue
        if kept is None:
            continue
        answers = sum(role == "assistant" and text.split() == expected for role, text in kept)
        questions = sum(role == "user" for role, _ in kept)
        if answers != chat.answered or questions != chat.answered:
            tally.unkept[f"kept {answers} answers, {questions} questions of {chat.answered}"] += 1


def new_client(base_url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url, timeout=httpx.Timeout(300, connect=60), trust_env=False
    )


async def open_users(
    adapter: Adapter, base_url: str, users: int, accounts: int, tag: str
) -> list[tuple[httpx.AsyncClient, Conversation]]:
    """``users`` fresh users, each with its own connection and a new conversation, on
    ``accounts`` new accounts (user i on account i mod ``accounts``: several conversations of
    one person at once, as in several browser tabs)."""
    signing, opening = asyncio.Semaphore(SIGN_UP_CONCURRENCY), asyncio.Semaphore(OPEN_CONCURRENCY)

    async def sign_up(index: int) -> dict[str, str]:
        async with signing, new_client(base_url) as http:
            return await adapter.sign_up(http, f"{tag}-{index:04d}")

    made = await asyncio.gather(*(sign_up(i) for i in range(min(users, accounts))))

    async def one(index: int) -> tuple[httpx.AsyncClient, Conversation]:
        http = new_client(base_url)
        async with opening:
            return http, await adapter.open(http, made[index % len(made)])

    return list(await asyncio.gather(*(one(i) for i in range(users))))


async def close_users(
    adapter: Adapter, people: list[tuple[httpx.AsyncClient, Conversation]]
) -> None:
    for http, chat in people:
        await adapter.close(chat)
        await http.aclose()


# -- the phases -----------------------------------------------------------------------------


@dataclass
class Phase:
    tally: Tally
    wall_s: float
    server_cpu_s: float
    model_calls: int


async def _measured(
    run: Callable[[], Awaitable[None]],
    tally: Tally,
    server_pid: int | None,
    model_calls: Callable[[], Awaitable[int]],
) -> Phase:
    meter = CpuMeter(lambda: process_tree(server_pid) if server_pid else [])
    calls = await model_calls()
    meter.start()
    began = time.perf_counter()
    await run()
    wall = time.perf_counter() - began
    cpu = meter.stop()
    return Phase(tally, wall, cpu, await model_calls() - calls)


async def one_user(
    adapter: Adapter,
    base_url: str,
    turns: int,
    warmup: int,
    server_pid: int | None,
    model_calls: Callable[[], Awaitable[int]],
    tag: str,
) -> Phase:
    """One user, turns one after the other in one conversation; ``warmup`` unmeasured first."""
    people = await open_users(adapter, base_url, 1, 1, tag)
    [(http, chat)] = people
    try:
        for n in range(warmup):
            await turn(adapter, http, chat, QUESTION.format(n=n), Tally())
        tally = Tally()

        async def run() -> None:
            for n in range(warmup, warmup + turns):
                await turn(adapter, http, chat, QUESTION.format(n=n), tally)

        phase = await _measured(run, tally, server_pid, model_calls)
        await check_stored(adapter, people, tally)
        return phase
    finally:
        await close_users(adapter, people)


async def many_users(
    adapter: Adapter,
    base_url: str,
    users: int,
    accounts: int,
    turns: int,
    stagger_s: float,
    server_pid: int | None,
    model_calls: Callable[[], Awaitable[int]],
    tag: str,
) -> Phase:
    """``users`` fresh users on ``accounts`` accounts (set up first, not timed), each sending
    ``turns`` messages back to back; user i starts at i/users × ``stagger_s``, so they do not
    arrive in lockstep."""
    people = await open_users(adapter, base_url, users, accounts, tag)
    tally = Tally()

    async def user(index: int, http: httpx.AsyncClient, chat: Conversation) -> None:
        await asyncio.sleep(index / users * stagger_s)
        for n in range(turns):
            await turn(adapter, http, chat, QUESTION.format(n=n), tally)

    async def run() -> None:
        await asyncio.gather(*(user(i, http, chat) for i, (http, chat) in enumerate(people)))

    try:
        await asyncio.sleep(0.5)  # let the setup's stragglers settle
        phase = await _measured(run, tally, server_pid, model_calls)
        await check_stored(adapter, people, tally)
        return phase
    finally:
        await close_users(adapter, people)


def peak_rss_mib(started: Started) -> float:
    process = started.process
    return vm_hwm_mib(process_tree(process.pid)) if process else math.nan


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]
