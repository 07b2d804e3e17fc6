"""Kernel overhead per turn and read-only tool batch wall time, with a zero-latency model.

(a) 200 turns of one session: a short user message, a 50-token answer streamed as ~10 deltas,
    in-memory ledger. Prints mean ms/turn and the mean of the first 10 vs the last 10 turns.
(b) 5 rounds × 4 read-only async tools that sleep 50 ms and return 2 KB. Prints wall time
    against the 0.25 s floor (5 × 50 ms).

Run: ``python bench/kernel_overhead.py [--turns 200] [--profile]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from youyou import (
    AgentBuilder,
    AgentConfig,
    CancellationToken,
    ModelInfo,
    ScriptedProvider,
    ScriptedResponse,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
)
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.domain.model import ChatRequest, ProviderCapability, Usage

MODEL = ModelInfo(
    model_id="bench-model",
    display_name="bench",
    context_window=1_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
ANSWER = " ".join(f"word{i}" for i in range(50))  # ~50 tokens


def answer(_: ChatRequest) -> ScriptedResponse:
    return ScriptedResponse.text(
        ANSWER, chunks=10, usage=Usage(input_tokens=20, output_tokens=50, total_tokens=70)
    )


class SleepTool:
    def __init__(self, name: str) -> None:
        self._descriptor = ToolDescriptor(name=name, description="sleeps 50 ms", mutating=False)

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        await asyncio.sleep(0.05)
        return ToolOutput(content="x" * 2048)


async def bench_turns(turns: int) -> list[float]:
    provider = ScriptedProvider(
        provider_id="bench", models=[MODEL], fallback=answer, record_requests=False
    )
    agent = await (
        AgentBuilder(AgentConfig(default_model=MODEL.model_id))
        .register_model_provider(provider)
        .register_session_storage(InMemorySessionStorage())
        .build()
    )
    session = await agent.new_session()
    durations: list[float] = []
    for i in range(turns):
        start = time.perf_counter()
        turn = await session.send_message(f"question number {i}: what is the status?")
        async for _ in turn.events:
            pass
        await turn.join()
        durations.append((time.perf_counter() - start) * 1000)
    await agent.shutdown()
    return durations


async def bench_tools(rounds: int = 5, width: int = 4) -> float:
    script: list[ScriptedResponse] = []
    for r in range(rounds):
        calls: list[tuple[str, str, dict[str, Any]]] = [
            (f"c{r}_{k}", f"sleep{k}", {}) for k in range(width)
        ]
        script.append(ScriptedResponse.tool_calls(calls))
    script.append(ScriptedResponse.text("done"))
    provider = ScriptedProvider(script, provider_id="bench", models=[MODEL])
    builder = AgentBuilder(AgentConfig(default_model=MODEL.model_id)).register_model_provider(
        provider
    )
    for k in range(width):
        builder.register_tool(SleepTool(f"sleep{k}"))
    agent = await builder.build()
    session = await agent.new_session()
    start = time.perf_counter()
    turn = await session.send_message("run the tools")
    await turn.collect()
    await turn.join()
    wall = time.perf_counter() - start
    await agent.shutdown()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="profile (a) with pyinstrument")
    args = parser.parse_args()
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler()
        profiler.start()
    durations = asyncio.run(bench_turns(args.turns))
    if args.profile:
        profiler.stop()
        print(profiler.output_text(unicode=True, color=False, show_all=False))
    print(
        f"(a) {args.turns} turns: mean {statistics.mean(durations):.3f} ms/turn, "
        f"median {statistics.median(durations):.3f} ms, "
        f"first 10 {statistics.mean(durations[:10]):.3f} ms, "
        f"last 10 {statistics.mean(durations[-10:]):.3f} ms"
    )
    wall = asyncio.run(bench_tools())
    print(f"(b) 5 rounds x 4 read-only tools (50 ms each): wall {wall:.3f} s (floor 0.250 s)")


if __name__ == "__main__":
    main()
