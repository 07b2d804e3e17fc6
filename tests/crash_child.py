"""Child process of the crash tests: runs turns forever until the parent kills it.

Usage: ``python -m tests.crash_child DB_URL [SESSION_ID]``. It prints ``SESSION <id>`` once the
session is active and ``ACK <seq> <kind>`` after every ``append_event`` that returned (the write
is committed), flushing each line, so the parent knows exactly what was acknowledged.

The crash test forks its children from a fork server that imported this module once
(``forked_main``): each child is still a process of its own, killed by a real SIGKILL, but it
starts in milliseconds instead of importing YouYou anew for every kill.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection

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
from youyou.domain.ledger import LedgerEvent
from youyou.domain.model import ChatRequest, ModelInfo, ProviderCapability
from youyou.domain.session import (
    SessionHead,
    SessionListQuery,
    SessionPage,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.ports.session_storage import SessionStorage

# What the fork server of the crash test imports once (it cannot import this module, which is
# not on its path): YouYou, and what opening a storage and building an agent import lazily.
PRELOAD = (
    "youyou",
    "youyou.adapters.storage.sql",
    "youyou.adapters.tokens",
    "alembic.command",
    "alembic.config",
    "alembic.runtime.migration",
    "alembic.script",
    "aiosqlite",
    "asyncpg",
    "jsonschema",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "sqlalchemy.dialects.postgresql.asyncpg",
)

MODEL = ModelInfo(
    model_id="crash-model",
    display_name="crash model",
    context_window=1_000_000,
    capabilities=frozenset({ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}),
)
CONFIG = AgentConfig(default_model=MODEL.model_id)


class PassThroughStorage:
    """A real storage behind the port; subclasses intercept the calls they care about."""

    def __init__(self, inner: SqlSessionStorage) -> None:
        self.inner = inner

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        await self.inner.append_event(session_id, event, summary)

    async def load_events(self, session_id: str, after_seq: int = 0) -> Sequence[LedgerEvent]:
        return await self.inner.load_events(session_id, after_seq)

    async def load_head(self, session_id: str) -> SessionHead:
        return await self.inner.load_head(session_id)

    async def load_session(
        self, session_id: str, events_after: Callable[[SessionHead], int]
    ) -> tuple[SessionHead, Sequence[LedgerEvent]]:
        return await self.inner.load_session(session_id, events_after)

    async def list_sessions(self, query: SessionListQuery) -> SessionPage:
        return await self.inner.list_sessions(query)

    async def find_sessions(
        self, query: SessionSearchQuery, limit: int
    ) -> Sequence[SessionSummary]:
        return await self.inner.find_sessions(query, limit)

    async def delete_session(self, session_id: str) -> None:
        await self.inner.delete_session(session_id)


class AckingStorage(PassThroughStorage):
    """Prints ``ACK <seq> <kind>`` once a write is durable."""

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        await self.inner.append_event(session_id, event, summary)
        print(f"ACK {event.seq} {event.payload.kind}", flush=True)


class SleepyTool:
    """A read-only tool that takes a little while, so kills land inside tool batches."""

    @property
    def descriptor(self) -> ToolDescriptor:
        return ToolDescriptor(
            name="nap",
            description="sleeps a little",
            parameters_schema={"type": "object"},
            mutating=False,
        )

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        await asyncio.sleep(0.01)
        return ToolOutput(content=f"slept {tool_input.arguments}")


def script() -> ScriptedProvider:
    """Each turn: a batch of two tool calls, then a streamed answer; call ids never repeat."""
    counter = itertools.count()

    def respond(request: ChatRequest) -> ScriptedResponse:
        last = request.messages[-1]
        if last.role.value == "user":
            n = next(counter)
            return ScriptedResponse.tool_calls(
                [(f"call-{n}-a", "nap", {"n": n}), (f"call-{n}-b", "nap", {"n": n})],
                text="checking",
                delay_s=0.003,
            )
        return ScriptedResponse.text("streamed answer " * 8, chunks=8, delay_s=0.002)

    return ScriptedProvider(provider_id="crash", models=(MODEL,), fallback=respond)


def builder(storage: SessionStorage) -> AgentBuilder:
    """The agent of the child, also used by the parent to resume after a kill."""
    return (
        AgentBuilder(CONFIG)
        .register_model_provider(script())
        .register_tool(SleepyTool())
        .register_session_storage(storage)
        .with_token_counter(lambda _: ApproximateTokenCounter())
    )


async def main(url: str, session_id: str | None) -> None:
    storage = await SqlSessionStorage.open(url)
    agent = await builder(AckingStorage(storage)).build()
    session = await agent.resume_session(session_id) if session_id else await agent.new_session()
    print(f"SESSION {session.session_id}", flush=True)
    for n in itertools.count():
        outcome = await (await session.send_message(f"message {n}")).join()
        if outcome.error is not None:
            raise outcome.error


def forked_main(url: str, session_id: str | None, out: Connection, err_path: str) -> None:
    """``main`` in a child forked from a process that imported this module: its lines go to
    ``out`` (the parent's pipe), its stderr to ``err_path``."""
    sys.stdout = os.fdopen(os.dup(out.fileno()), "w", encoding="utf-8")
    out.close()
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(err, 2)
    os.close(err)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (lives as long as the child)
    asyncio.run(main(url, session_id))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
