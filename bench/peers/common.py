"""What every framework driver shares: the workload, the checks and the JSON it prints.

Standard library only: it is imported by YouYou's driver (project venv) and by the peers'
drivers (bench/peers/.venv) alike, so every framework runs the very same workload.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

SCENARIOS = ("s1-memory", "s1-sqlite", "s2", "s3", "s4")
TURNS = 200  # S1
ROUNDS, WIDTH, TOOL_SLEEP_S = 5, 4, 0.05  # S2: 5 rounds × 4 tools of 50 ms
TOOL_RESULT = "x" * 2048
STORED_MESSAGES = 2_000  # S3
S3_REOPENS = 5
HISTORY_SIZES = (100, 1_000, 10_000)  # S4
S4_TURNS = 30
CHUNKS = 10
ANSWER = " ".join(f"word{i}" for i in range(50))  # ~50 tokens, streamed as 10 deltas
_STEP = -(-len(ANSWER) // CHUNKS)
ANSWER_DELTAS = tuple(ANSWER[i : i + _STEP] for i in range(0, len(ANSWER), _STEP))
SYSTEM_PROMPT = "You are a helpful assistant."
TOOL_NAMES = tuple(f"sleep{k}" for k in range(WIDTH))


def question(n: int) -> str:
    return f"question number {n}: what is the status?"


def seeded_text(index: int) -> str:
    """Message ``index`` (0-based) of a seeded history: user questions and assistant answers."""
    if index % 2 == 0:
        return f"question {index}: how does this work?"
    return f"answer {index}: {ANSWER}"


def tool_plan(round_no: int) -> list[tuple[str, str]]:
    """The ``(call_id, tool_name)`` pairs the fake model asks for in round ``round_no``."""
    return [(f"c{round_no}_{k}", name) for k, name in enumerate(TOOL_NAMES)]


@dataclass
class ModelLog:
    """What a fake model saw: per call, the chat messages and the tool results it was sent."""

    messages: list[int] = field(default_factory=list)
    tool_results: list[int] = field(default_factory=list)
    last_user: list[str] = field(default_factory=list)

    def record(self, messages: int, tool_results: int = 0, last_user: str = "") -> None:
        self.messages.append(messages)
        self.tool_results.append(tool_results)
        self.last_user.append(last_user)


class Received:
    """Text deltas the caller got from the framework's stream: the answers really streamed."""

    def __init__(self) -> None:
        self.deltas = 0

    def take(self) -> int:
        count, self.deltas = self.deltas, 0
        return count


RECEIVED = Received()


class CheckFailed(AssertionError):
    """The framework did less work than the scenario asks: the run is not reported."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def check_chat(log: ModelLog, before: int, turns: int, first_question: int = 0) -> None:
    """Each turn sent the whole history: ``before`` messages, 2 per earlier turn, the question;
    and the caller got each answer as ``CHUNKS`` deltas."""
    deltas = RECEIVED.take()
    check(deltas == CHUNKS * turns, f"{deltas} text deltas streamed for {turns} turns")
    check(len(log.messages) == turns, f"{len(log.messages)} model calls for {turns} turns")
    for n in range(turns):
        expected = before + 2 * n + 1
        check(log.messages[n] == expected, f"turn {n}: model got {log.messages[n]} != {expected}")
        check(
            log.last_user[n] == question(first_question + n),
            f"turn {n}: last user message {log.last_user[n]!r}",
        )


def check_tools(log: ModelLog) -> None:
    """Call r+1 of the model saw the 4 results of every round so far, 2 KB each."""
    check(len(log.messages) == ROUNDS + 1, f"{len(log.messages)} model calls")
    RECEIVED.take()
    for r in range(ROUNDS + 1):
        check(
            log.tool_results[r] == WIDTH * r,
            f"model call {r}: {log.tool_results[r]} tool results != {WIDTH * r}",
        )


class InFlight:
    """Counts the tools running at once, to report whether a framework ran them in parallel."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def sleep(self) -> str:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(TOOL_SLEEP_S)
        finally:
            self.now -= 1
        return TOOL_RESULT


TOOLS = InFlight()


async def timed_ms(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


async def tool_rounds(run: Callable[[], Awaitable[float]]) -> dict[str, Any]:
    """S2 twice, each on a fresh agent: the first pays one-time costs (lazy imports, schema
    builds), the second is the number reported."""
    cold_ms = await run()
    warm_ms = await run()
    return {
        "wall_s": warm_ms / 1000,
        "cold_wall_s": cold_ms / 1000,
        "peak_tools_in_flight": TOOLS.peak,
    }


async def timed_turns(
    turn: Callable[[int], Awaitable[Any]], count: int, first: int = 0
) -> list[float]:
    """Wall time of ``count`` consecutive turns, each awaited to its end."""
    gc.collect()
    durations = []
    for n in range(first, first + count):
        start = time.perf_counter()
        await turn(n)
        durations.append((time.perf_counter() - start) * 1000)
    return durations


def summary(durations: list[float]) -> dict[str, float]:
    return {
        "median": statistics.median(durations),
        "mean": statistics.mean(durations),
        "first10_mean": statistics.mean(durations[:10]),
        "last10_mean": statistics.mean(durations[-10:]),
        "n": len(durations),
    }


Driver = Callable[[str, str], Coroutine[Any, Any, dict[str, Any]]]


def main(framework: str, version: str, driver: Driver) -> None:
    """``python DRIVER.py SCENARIO WORKDIR``: run one scenario once, print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("workdir", help="an empty folder for SQLite files")
    args = parser.parse_args()
    result = asyncio.run(driver(args.scenario, args.workdir))
    out = {"framework": framework, "version": version, "scenario": args.scenario, **result}
    sys.stdout.write(json.dumps(out) + "\n")
