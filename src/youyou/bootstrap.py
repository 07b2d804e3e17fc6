"""Composition root: turns ``Settings`` into a running ``Agent`` with its storages.

The CLI and the server both start here, so that a ``youyou.toml`` means the same thing to
each: the session ledger and the long-term memories live in the configured database (SQLite
or PostgreSQL, chosen by the URL's scheme), providers come from ``[[providers]]``, and skills
from a directory of ``*/SKILL.md`` files are registered for explicit ``/name`` use.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from youyou.adapters.mcp import McpToolbox
from youyou.adapters.memory import open_memory_storage
from youyou.adapters.providers.factory import build_providers
from youyou.adapters.skills_dir import SkillsDirResult, load_skills_dir
from youyou.adapters.storage.lease_holder import local_holder
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.adapters.tools.builtin import CurrentTimeTool
from youyou.api.agent import Agent
from youyou.api.builder import AgentBuilder
from youyou.application.tracing import NOOP_TRACER
from youyou.config import ModelPrice, Settings
from youyou.domain.config import AgentConfig
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_md import SkillValidationError
from youyou.ports.model_provider import ModelProvider
from youyou.ports.tool import ToolHandler
from youyou.ports.tracer import Tracer

if TYPE_CHECKING:
    from youyou.adapters.knowledge import KnowledgeBase
    from youyou.adapters.memory.sql_base import SqlMemoryStorage
    from youyou.adapters.telemetry.otel import Telemetry

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Writer:
    """A program that writes sessions under their leases: ``program`` names it in another
    process's "in use by" error (``youyou chat``); ``tag`` tells two lives of one pid apart;
    ``renew_every_s`` (default a third of ``[database] lease_ttl_s``, the leases' time to
    live) is also how soon it sees a cancel asked by another process."""

    program: str
    tag: str | None = None
    renew_every_s: float | None = None


@dataclass(slots=True)
class BuiltApp:
    """The agent plus what must be closed after ``agent.shutdown()``."""

    agent: Agent
    session_storage: SqlSessionStorage
    memory_storage: SqlMemoryStorage | None
    skills: tuple[SkillDefinition, ...] = ()
    skill_errors: tuple[tuple[Path, SkillValidationError], ...] = ()
    providers: tuple[ModelProvider, ...] = ()
    # MCP tools are offered per send (TurnOptions.extra_tools): servers start on first use.
    mcp: McpToolbox = field(default_factory=lambda: McpToolbox(()))
    # Passages of [[knowledge]] sources and workbench uploads, on the session store's engine.
    knowledge: KnowledgeBase | None = None
    # What the kernel's spans go to (the no-op tracer unless [telemetry] is on), and the
    # exporter to flush on close when this build opened it.
    tracer: Tracer = NOOP_TRACER
    telemetry: Telemetry | None = None
    # The prices of the models that have them, by model id: the cost of a turn.
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)

    async def tools(self) -> tuple[ToolHandler, ...]:
        """What ``youyou chat`` offers per send: the MCP tools, and ``search_knowledge`` over
        every configured knowledge source when there is one."""
        knowledge = (self.knowledge.tool(),) if self.knowledge and self.knowledge.sources else ()
        return (*await self.mcp.tools(), *knowledge)

    async def close(self) -> None:
        """Shut the agent down (closing sessions extracts memories), then MCP servers,
        providers, storages."""
        try:
            await self.agent.shutdown()
        finally:
            await self.mcp.close()
            for provider in self.providers:
                close = getattr(provider, "close", None)  # HTTP clients, llama.cpp models
                if close is not None:
                    try:
                        await close()
                    except Exception:
                        logger.warning(
                            "closing provider %s failed", provider.provider_id, exc_info=True
                        )
            if self.memory_storage is not None:
                await self.memory_storage.close()
            await self.session_storage.close()
            if self.telemetry is not None:
                await asyncio.to_thread(self.telemetry.shutdown)  # exports what is pending


def agent_config_from(settings: Settings, max_active_sessions: int | None = None) -> AgentConfig:
    """``[agent]`` and ``[compaction]`` as the kernel's ``AgentConfig``."""
    config = settings.agent_config()
    if max_active_sessions is None:
        return config
    return config.model_copy(update={"max_active_sessions": max_active_sessions})


async def build_agent_from_settings(
    settings: Settings,
    *,
    skills_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    max_active_sessions: int | None = None,
    knowledge: bool = False,
    writer: Writer | None = None,
    tracer: Tracer | None = None,
) -> BuiltApp:
    """Open the storages on ``settings.database.url`` (migrated) and build the agent.

    The knowledge base is opened when ``[[knowledge]]`` sources are configured, or always
    with ``knowledge=True`` (the workbench, whose users upload documents).

    ``writer`` registers the session leases of the database: every write of a session then
    holds its lease, so that one process at a time writes it.

    ``tracer`` receives the kernel's spans; without one, ``[telemetry] enabled`` opens the
    OpenTelemetry exporter (``youyou.adapters.telemetry``, imported only then).

    Invalid skill files do not stop the build: they are returned in ``skill_errors``.
    Anything opened here is closed again if a later step fails.
    """
    env = os.environ if environ is None else environ
    providers = build_providers(settings, environ=env)
    skills_dir = skills_dir if skills_dir is not None else settings.skills.dir
    loaded = load_skills_dir(skills_dir) if skills_dir is not None else SkillsDirResult((), ())
    telemetry: Telemetry | None = None
    if tracer is None and settings.telemetry.enabled:
        from youyou.adapters.telemetry import open_telemetry

        telemetry = open_telemetry(settings.telemetry)
        tracer = telemetry.tracer
    tracer = tracer or NOOP_TRACER
    url = settings.database.url
    session_storage = await SqlSessionStorage.open(
        url, sqlite_synchronous=settings.database.sqlite_synchronous
    )
    memory_storage: SqlMemoryStorage | None = None
    knowledge_base: KnowledgeBase | None = None
    try:
        if knowledge or settings.knowledge:
            from youyou.adapters.knowledge import KnowledgeBase  # only then: ~0.02 s to import

            knowledge_base = await KnowledgeBase.open(session_storage.engine, settings.knowledge)
        if settings.memory.enabled:
            memory_storage = await open_memory_storage(url)
        builder = AgentBuilder(agent_config_from(settings, max_active_sessions))
        builder.register_tracer(tracer)
        for provider in providers:
            builder.register_model_provider(provider)
        builder.register_tool(CurrentTimeTool())
        for skill in loaded.skills:
            builder.register_skill(skill)
        builder.register_session_storage(session_storage)
        if writer is not None:
            builder.register_session_leases(
                session_storage.leases(),
                holder=local_holder(writer.program, writer.tag),
                ttl_s=settings.database.lease_ttl_s,
                renew_every_s=writer.renew_every_s,
            )
        if memory_storage is not None:
            builder.register_memory_storage(memory_storage)
        agent = await builder.build()
    except BaseException:
        if memory_storage is not None:
            await memory_storage.close()
        await session_storage.close()
        if telemetry is not None:
            telemetry.shutdown()
        raise
    return BuiltApp(
        agent,
        session_storage,
        memory_storage,
        loaded.skills,
        loaded.errors,
        tuple(providers),
        McpToolbox(settings.mcp_servers, environ=env),
        knowledge_base,
        tracer,
        telemetry,
        settings.model_prices(),
    )
