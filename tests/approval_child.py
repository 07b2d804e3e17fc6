"""Child process of the approval restart tests: asks for approval, then waits to be killed.

Usage: ``python -m tests.approval_child DB_URL TIMEOUT_S``. It prints ``SESSION <id>`` once the
session exists and ``WAITING <call_id>`` once the approval request is in the ledger, flushing
each line, then waits for a decision that never comes (the parent SIGKILLs it).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any

from youyou import (
    AgentBuilder,
    AgentConfig,
    CancellationToken,
    ScriptedProvider,
    ScriptedResponse,
    ToolDescriptor,
    ToolInput,
    ToolOutput,
)
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.tokens import ApproximateTokenCounter
from youyou.domain.model import ChatRequest, ModelInfo, ProviderCapability
from youyou.ports.session_storage import SessionStorage

MODEL = ModelInfo(
    model_id="approval-model",
    display_name="approval model",
    context_window=1_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
CALL_ID = "call-close-42"


@dataclass
class CloseTicket:
    """A mutating tool that always asks; remembers what it was called with."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="tickets__close_ticket",
            description="closes a ticket",
            parameters_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
            mutating=True,
            approval="always",
            server_id="tickets",
        )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        self.calls.append(tool_input.arguments)
        return ToolOutput(content=f"ticket {tool_input.arguments['id']} closed")


def script() -> ScriptedProvider:
    """The first request asks to close ticket 42; a request after a tool result answers with
    what that result said."""

    def respond(request: ChatRequest) -> ScriptedResponse:
        last = request.messages[-1]
        if last.role.value == "user":
            return ScriptedResponse.tool_calls([(CALL_ID, "tickets__close_ticket", {"id": 42})])
        said = "".join(getattr(block, "text", "") for block in last.content)
        return ScriptedResponse.text(f"answer after: {said}")

    return ScriptedProvider(provider_id="approvals", models=(MODEL,), fallback=respond)


def builder(storage: SessionStorage, tool: CloseTicket, timeout_s: float) -> AgentBuilder:
    """The agent of the child, also used by the parent to resume after the kill."""
    config = AgentConfig(default_model=MODEL.model_id, approval_timeout_s=timeout_s)
    return (
        AgentBuilder(config)
        .register_model_provider(script())
        .register_tool(tool)
        .register_session_storage(storage)
        .with_token_counter(lambda _: ApproximateTokenCounter())
    )


async def main(url: str, timeout_s: float) -> None:
    storage = await SqlSessionStorage.open(url)
    agent = await builder(storage, CloseTicket(), timeout_s).build()
    session = await agent.new_session()
    print(f"SESSION {session.session_id}", flush=True)
    turn = await session.send_message("close ticket 42")
    async for event in turn.events:
        if event.payload.type == "tool_approval_requested":
            print(f"WAITING {event.payload.call_id}", flush=True)
    await turn.join()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
