"""Per-turn context cost (token counting + request building) as history grows.

For sessions of 100, 1 000 and 10 000 visible messages, measures the mean kernel time of the
next turns with a zero-latency scripted model: once with the whole history visible and once
after a summary compaction. The compacted cost must stay flat whatever the history length.

Run: ``python bench/context.py``
"""

from __future__ import annotations

import asyncio
import statistics
import time

from youyou import (
    AgentBuilder,
    AgentConfig,
    CompactionPolicy,
    MemoryMode,
    ModelInfo,
    ScriptedProvider,
    ScriptedResponse,
)
from youyou.domain.model import ChatRequest, ProviderCapability

MODEL = ModelInfo(
    model_id="gpt-4o-mini",  # a real BPE tokenizer (o200k) is used for counting
    display_name="bench",
    context_window=50_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
ANSWER = "The service recovered after the rollback; error rate is back under 0.1 %."


def respond(request: ChatRequest) -> ScriptedResponse:
    if request.system_prompt.startswith("You compress"):
        return ScriptedResponse.text("Summary: the user investigated many incidents.")
    return ScriptedResponse.text(ANSWER, chunks=10)


async def measure(messages: int, measured_turns: int = 30) -> tuple[float, float]:
    provider = ScriptedProvider(
        provider_id="bench", models=[MODEL], fallback=respond, record_requests=False
    )
    config = AgentConfig(
        default_model=MODEL.model_id, compaction=CompactionPolicy(mode=MemoryMode.MANUAL)
    )
    agent = await AgentBuilder(config).register_model_provider(provider).build()
    session = await agent.new_session()
    for i in range(messages // 2):
        await (await session.send_message(f"incident {i}: latency spike on api-{i % 17}")).join()

    async def per_turn() -> float:
        durations = []
        for i in range(measured_turns):
            start = time.perf_counter()
            await (await session.send_message(f"follow-up {i}")).join()
            durations.append((time.perf_counter() - start) * 1000)
        return statistics.mean(durations)

    uncompacted = await per_turn()
    await session.compact()
    compacted = await per_turn()
    await agent.shutdown()
    return uncompacted, compacted


def main() -> None:
    print("messages  full-history ms/turn  compacted ms/turn")
    for size in (100, 1_000, 10_000):
        full, compacted = asyncio.run(measure(size))
        print(f"{size:>8}  {full:>20.3f}  {compacted:>17.3f}")


if __name__ == "__main__":
    main()
