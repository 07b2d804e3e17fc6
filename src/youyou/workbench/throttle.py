"""What keeps sign-in affordable under a flood: sliding-window counters per key (failed logins
per username and address, per address; sign-ups per address) and a gate that lets only a few
password hashes run at once, off the event loop, with a bounded queue behind them."""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import TypeVar

from youyou.workbench.errors import ApiCode, ApiError

T = TypeVar("T")

# Keys whose events all left the window are dropped once the table reaches this size, so a
# flood of made-up usernames costs a bounded amount of memory.
_SWEEP_AT = 4096


class SlidingWindow:
    """At most ``limit`` events per key within ``window_s`` seconds; in-process memory only."""

    def __init__(self, limit: int, window_s: float, code: ApiCode) -> None:
        self._limit = limit
        self._window_s = window_s
        self._code = code
        self._events: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - self._window_s:
            events.popleft()
        return events

    def check(self, key: str) -> None:
        """Refuses with 429 and ``Retry-After`` (the seconds until the oldest event leaves the
        window) once ``limit`` events are in it."""
        now = time.monotonic()
        events = self._recent(key, now)
        if len(events) >= self._limit:
            retry = max(1, int(events[0] + self._window_s - now) + 1)
            raise ApiError(self._code, headers={"Retry-After": str(retry)})
        if not events:
            self._events.pop(key, None)

    def record(self, key: str) -> None:
        now = time.monotonic()
        if len(self._events) >= _SWEEP_AT:
            self._sweep(now)
        self._recent(key, now).append(now)

    def forget(self, key: str) -> None:
        self._events.pop(key, None)

    def _sweep(self, now: float) -> None:
        for key in [k for k, events in self._events.items() if events[-1] <= now - self._window_s]:
            del self._events[key]


class LoginLimiter:
    """Failed logins counted twice: per (username, address), so one account is not guessed at,
    and per address across usernames, so one client cannot try every account."""

    def __init__(self, attempts: int, address_attempts: int, window_s: float) -> None:
        self._per_user = SlidingWindow(attempts, window_s, ApiCode.AUTH_RATE_LIMITED)
        self._per_address = SlidingWindow(address_attempts, window_s, ApiCode.AUTH_RATE_LIMITED)

    @staticmethod
    def _key(username: str, address: str) -> str:
        return f"{address}\n{username.lower()}"

    def check(self, username: str, address: str) -> None:
        self._per_address.check(address)
        self._per_user.check(self._key(username, address))

    def failed(self, username: str, address: str) -> None:
        self._per_address.record(address)
        self._per_user.record(self._key(username, address))

    def refused(self, address: str) -> None:
        """A sign-in the hashing gate turned away counts against the address: a client that
        keeps knocking while told to wait is flooding, and soon gets 429 before the gate."""
        self._per_address.record(address)

    def succeeded(self, username: str, address: str) -> None:
        """Clears that account's count only: the address's failures stay counted."""
        self._per_user.forget(self._key(username, address))


class HashGate:
    """At most ``concurrency`` password hashes at once, each in a worker thread so the event
    loop keeps serving; up to ``queue`` callers wait for a slot and any further one is refused
    at once with 503, so a flood costs neither memory nor everyone's latency. One client
    address has at most ``per_address`` sign-ins hashing or waiting (a person signs in one at a
    time); more are refused with 429, so one address cannot fill the queue for everyone."""

    def __init__(self, concurrency: int, queue: int, per_address: int = 2) -> None:
        self._slots = asyncio.Semaphore(concurrency)
        self._queue = queue
        self._waiting = 0
        self._per_address = per_address
        self._in_flight: Counter[str] = Counter()

    async def run(self, address: str, work: Callable[..., T], *args: object) -> T:
        if self._in_flight[address] >= self._per_address:
            raise ApiError(ApiCode.AUTH_RATE_LIMITED, headers={"Retry-After": "1"})
        if self._slots.locked() and self._waiting >= self._queue:
            raise ApiError(ApiCode.AUTH_BUSY, headers={"Retry-After": "1"})
        self._in_flight[address] += 1
        try:
            return await self._hashed(work, *args)
        finally:
            self._in_flight[address] -= 1
            if not self._in_flight[address]:
                del self._in_flight[address]

    async def _hashed(self, work: Callable[..., T], *args: object) -> T:
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        try:
            return await asyncio.to_thread(work, *args)
        finally:
            self._slots.release()
