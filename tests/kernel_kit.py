"""Small builders shared by kernel tests: real agents over the scripted provider."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from youyou import (
    Agent,
    AgentBuilder,
    AgentConfig,
    AgentEvent,
    ApprovalPolicy,
    CancellationToken,
    ModelInfo,
    OutcomeStatus,
    ProviderCapability,
    RunningTurn,
    ScriptedProvider,
    ScriptedResponse,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
)
from youyou.adapters.providers.scripted import ResponseSource
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock

T = TypeVar("T")

ALL_CAPS = frozenset(
    {ProviderCapability.TOOL_USE, ProviderCapability.VISION, ProviderCapability.STREAMING}
)
MODEL = ModelInfo(
    model_id="m1", display_name="Model 1", context_window=100_000, capabilities=ALL_CAPS
)


def model(
    model_id: str = "m1", *, window: int = 100_000, caps: frozenset[ProviderCapability] = ALL_CAPS
) -> ModelInfo:
    return ModelInfo(
        model_id=model_id, display_name=model_id, context_window=window, capabilities=caps
    )


@dataclass
class RecordingTool:
    """A tool that records its calls; ``behaviour`` decides the output."""

    name: str
    mutating: bool = False
    delay: float = 0.0
    approval: ApprovalPolicy = "never"
    behaviour: Callable[[dict[str, Any]], Awaitable[ToolOutput]] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    started: list[float] = field(default_factory=list)
    finished: list[float] = field(default_factory=list)

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name=self.name,
            description=f"tool {self.name}",
            parameters_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
            mutating=self.mutating,
            approval=self.approval,
        )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        loop = asyncio.get_running_loop()
        self.calls.append(tool_input.arguments)
        self.started.append(loop.time())
        if self.delay:
            await asyncio.sleep(self.delay)
        self.finished.append(loop.time())
        if self.behaviour is not None:
            return await self.behaviour(tool_input.arguments)
        return ToolOutput(
            content=f"{self.name} ok {tool_input.arguments}", metadata={"tool": self.name}
        )


async def build_agent(
    responses: Sequence[ResponseSource] = (),
    *,
    models: Sequence[ModelInfo] = (MODEL,),
    config: AgentConfig | None = None,
    tools: Sequence[Any] = (),
    configure: Callable[[AgentBuilder], AgentBuilder] | None = None,
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses, provider_id="scripted", models=models)
    builder = AgentBuilder(config or AgentConfig(default_model=models[0].model_id))
    builder.register_model_provider(provider).with_token_counter(
        lambda _: ApproximateTokenCounter()
    )
    for tool in tools:
        builder.register_tool(tool)
    if configure is not None:
        builder = configure(builder)
    return await builder.build(), provider


def payload_types(events: Sequence[AgentEvent]) -> list[str]:
    return [e.payload.type for e in events]


def text(response: str, **kwargs: Any) -> ScriptedResponse:
    return ScriptedResponse.text(response, **kwargs)


def block_text(block: TextBlock | ImageBlock | FileContentBlock) -> str:
    """The text of ``block``, which the test expects to be a text block."""
    assert isinstance(block, TextBlock), block
    return block.text


def payload_as(payload: object, kind: type[T]) -> T:
    """``payload`` as the ``kind`` the test expects it to be (an event or ledger payload)."""
    assert isinstance(payload, kind), payload
    return payload


WAIT_S = 15.0  # generous: a loaded machine, an MCP server answering


class Watch:
    """Consumes a running turn's events in the background, so a test can wait for one."""

    def __init__(self, turn: RunningTurn) -> None:
        self.turn = turn
        self.events: list[AgentEvent] = []
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for event in self.turn.events:
            self.events.append(event)
            self._changed.set()

    def of(self, kind: str) -> list[Any]:
        return [e.payload for e in self.events if e.payload.type == kind]

    async def until(self, kind: str, count: int = 1) -> list[Any]:
        async with asyncio.timeout(WAIT_S):
            while len(self.of(kind)) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.of(kind)

    async def done(self) -> OutcomeStatus:
        async with asyncio.timeout(WAIT_S):
            await self._task
            return (await self.turn.join()).status
