"""What tracing costs a turn: the same turns with tracing off (the kernel's no-op tracer) and
on (the OpenTelemetry SDK, every trace sampled, spans exported in batches to an exporter that
drops them, so only YouYou's and the SDK's own work is measured), with and without content.

Each turn: a user message, one read-only tool call, then a 50-token answer streamed as 10
deltas, with a zero-latency scripted model, an in-memory ledger and no compaction: 4 spans per
turn (the turn, two model requests, the tool run). Prints the median over rounds of the CPU
ms per turn of each variant and the difference to tracing off.

Run: ``python bench/trace_overhead.py [--turns 300] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from youyou import (
    AgentBuilder,
    AgentConfig,
    CancellationToken,
    CompactionPolicy,
    MemoryMode,
    ModelInfo,
    ScriptedProvider,
    ScriptedResponse,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
)
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.adapters.telemetry.otel import Telemetry
from youyou.config import TelemetrySettings
from youyou.domain.model import ChatRequest, ModelMessageRole, ProviderCapability, Usage
from youyou.domain.turn import OutcomeStatus
from youyou.ports.tracer import Tracer

MODEL = ModelInfo(
    model_id="bench-model",
    display_name="bench",
    context_window=1_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
ANSWER = " ".join(f"word{i}" for i in range(50))
USAGE = Usage(input_tokens=20, output_tokens=50, total_tokens=70)
MANUAL = CompactionPolicy(mode=MemoryMode.MANUAL)  # every turn alike: no compaction


def respond(request: ChatRequest) -> ScriptedResponse:
    """A tool call for a new question, the answer once the tool has answered."""
    if request.messages[-1].role is ModelMessageRole.USER:
        return ScriptedResponse.tool_calls([("call-1", "status", {"host": "db-1"})])
    return ScriptedResponse.text(ANSWER, chunks=10, usage=USAGE)


class StatusTool:
    descriptor = ToolDescriptor(
        name="status",
        description="host status",
        parameters_schema={"type": "object", "properties": {"host": {"type": "string"}}},
    )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        return ToolOutput(content="load 0.4, disk 91 %")


class DroppingExporter(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


async def ms_per_turn(
    tracer: Tracer | None, turns: int, flush: Callable[[], object] = lambda: None
) -> float:
    """CPU time of the whole process per turn (all threads): a loaded machine's waits for
    the CPU do not count, the exporter thread's work does."""
    provider = ScriptedProvider(
        provider_id="bench", models=[MODEL], fallback=respond, record_requests=False
    )
    builder = (
        AgentBuilder(AgentConfig(default_model=MODEL.model_id, compaction=MANUAL))
        .register_model_provider(provider)
        .register_tool(StatusTool())
        .register_session_storage(InMemorySessionStorage())
    )
    if tracer is not None:
        builder.register_tracer(tracer)
    agent = await builder.build()
    session = await agent.new_session()
    for i in range(20):  # warm-up
        await (await session.send_message(f"warm-up {i}")).join()
    start = time.process_time()
    for i in range(turns):
        outcome = await (await session.send_message(f"is db-1 healthy? ({i})")).join()
        assert outcome.status is OutcomeStatus.COMPLETED, outcome
    await asyncio.to_thread(flush)  # the exporter thread's work counts too
    elapsed = (time.process_time() - start) * 1000 / turns
    await agent.shutdown()
    return elapsed


async def main(turns: int, rounds: int) -> None:
    variants: dict[str, list[float]] = {"off": [], "on": [], "on + content": []}
    exported = 0
    for _ in range(rounds):
        variants["off"].append(await ms_per_turn(None, turns))
        for name, content in (("on", False), ("on + content", True)):
            exporter = DroppingExporter()
            settings = TelemetrySettings(enabled=True, record_content=content)
            telemetry = Telemetry(settings, BatchSpanProcessor(exporter))
            flush = telemetry.provider.force_flush
            variants[name].append(await ms_per_turn(telemetry.tracer, turns, flush))
            telemetry.shutdown()
            exported += exporter.spans
    off = statistics.median(variants["off"])
    print(f"{turns} turns x {rounds} rounds, one tool call per turn ({exported} spans exported)")
    for name, values in variants.items():
        value = statistics.median(values)
        print(f"tracing {name:<13} {value:6.3f} CPU ms/turn  ({value - off:+.3f} ms vs off)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.rounds))
