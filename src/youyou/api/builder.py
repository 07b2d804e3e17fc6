"""Collects registrations, validates them and builds an immutable agent.

Build-time failures are listed in docs/architecture.md, 'Errors'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from youyou.api.agent import Agent
from youyou.application.agent_control import AgentControl
from youyou.application.kernel import Kernel
from youyou.application.memory_manager import MemoryManager
from youyou.application.model_router import ModelRegistry, complete_text
from youyou.application.plugin_manager import PluginManager
from youyou.application.prompt_builder import PromptBuilder
from youyou.application.session_runtime import SessionRuntime
from youyou.application.token_estimator import (
    ContextTokenEstimator,
    exactness_floor,
    warm_up,
)
from youyou.application.tracing import NOOP_TRACER
from youyou.application.writer_lease import WriterLeases
from youyou.domain.config import AgentConfig, validate_agent_config
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.model import ChatRequest, ModelInfo
from youyou.domain.skill import SkillDefinition
from youyou.domain.skill_md import skill_name_violations
from youyou.domain.templates import PHRASES
from youyou.ports.memory_storage import MemoryStorage
from youyou.ports.model_provider import ModelProvider
from youyou.ports.plugin import Plugin
from youyou.ports.session_lease import SessionLeases
from youyou.ports.session_storage import SessionStorage
from youyou.ports.token_counter import TokenCounter
from youyou.ports.tool import ToolHandler
from youyou.ports.tracer import Tracer

TokenCounterFactory = Callable[[str], TokenCounter]


def _build_error(code: ErrorCode, message: str) -> AgentError:
    return AgentError(code, message, source=ErrorSource.AGENT_BUILDER)


def _unique(kind: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise _build_error(ErrorCode.NAME_CONFLICT, f"{kind} {name!r} is registered twice")
        seen.add(name)


def _default_token_counter(model_id: str) -> TokenCounter:
    from youyou.adapters.tokens import counter_for_model

    return counter_for_model(model_id)


@dataclass(frozen=True)
class _Leases:
    """Session leases as registered; the writer built at ``build`` knows the session storage,
    so that an operation's last write gives the lease back when that storage keeps it."""

    leases: SessionLeases
    holder: str
    ttl_s: float
    renew_every_s: float

    def writers(self, ledger: SessionStorage | None) -> WriterLeases:
        return WriterLeases(
            self.leases, self.holder, self.ttl_s, renew_every_s=self.renew_every_s, ledger=ledger
        )


class AgentBuilder:
    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._providers: list[ModelProvider] = []
        self._tools: list[ToolHandler] = []
        self._skills: list[SkillDefinition] = []
        self._plugins: list[tuple[Plugin, Any]] = []
        self._session_storages: list[SessionStorage] = []
        self._memory_storages: list[MemoryStorage] = []
        self._leases: list[_Leases] = []
        self._token_counter: TokenCounterFactory = _default_token_counter
        self._tracer: Tracer = NOOP_TRACER

    def register_model_provider(self, provider: ModelProvider) -> AgentBuilder:
        self._providers.append(provider)
        return self

    def register_tool(self, tool: ToolHandler) -> AgentBuilder:
        self._tools.append(tool)
        return self

    def register_skill(self, skill: SkillDefinition) -> AgentBuilder:
        self._skills.append(skill)
        return self

    def register_plugin(self, plugin: Plugin, config: Any = None) -> AgentBuilder:
        self._plugins.append((plugin, config))
        return self

    def register_session_storage(self, storage: SessionStorage) -> AgentBuilder:
        self._session_storages.append(storage)
        return self

    def register_memory_storage(self, storage: MemoryStorage) -> AgentBuilder:
        self._memory_storages.append(storage)
        return self

    def register_session_leases(
        self,
        leases: SessionLeases,
        *,
        holder: str,
        ttl_s: float = 30.0,
        renew_every_s: float | None = None,
    ) -> AgentBuilder:
        """One writer per session across the processes sharing the session storage: every
        operation that writes a session holds its lease (as ``holder``, the name another
        process's SESSION_BUSY error shows), renewed every ``renew_every_s`` seconds (default
        ``ttl_s / 3``); the lease of a process that stopped renewing expires after ``ttl_s``.
        A renewal is also when a cancel asked by another process is seen: a server whose
        users cancel from any process renews more often than its time to live needs. Needs a
        session storage."""
        if ttl_s <= 0:
            raise _build_error(ErrorCode.INVALID_CONFIG, "the lease time to live must be positive")
        every = ttl_s / 3 if renew_every_s is None else renew_every_s
        if not 0 < every < ttl_s:
            raise _build_error(
                ErrorCode.INVALID_CONFIG, "leases must be renewed within their time to live"
            )
        self._leases.append(_Leases(leases, holder, ttl_s, every))
        return self

    def register_tracer(self, tracer: Tracer) -> AgentBuilder:
        """Spans of every turn, model request, tool run and compaction (docs/telemetry.md);
        without one the kernel traces nothing and needs no tracing library."""
        self._tracer = tracer
        return self

    def with_token_counter(self, factory: TokenCounterFactory) -> AgentBuilder:
        """Token counter per model id (default: offline BPE per model family)."""
        self._token_counter = factory
        return self

    async def build(self) -> Agent:
        if not self._providers:
            raise _build_error(ErrorCode.NO_MODEL_PROVIDER, "register at least one model provider")
        _unique("provider", [p.provider_id for p in self._providers])
        _unique("tool", [t.descriptor.name for t in self._tools])
        _unique("skill", [s.name for s in self._skills])
        _unique("plugin", [p.descriptor.id for p, _ in self._plugins])
        if len(self._session_storages) > 1 or len(self._memory_storages) > 1:
            raise _build_error(
                ErrorCode.STORAGE_DUPLICATE, "at most one session storage and one memory storage"
            )
        if len(self._leases) > 1:
            raise _build_error(ErrorCode.STORAGE_DUPLICATE, "session leases are registered twice")
        if self._leases and not self._session_storages:
            raise _build_error(ErrorCode.INVALID_CONFIG, "session leases need a session storage")
        session_storage = self._session_storages[0] if self._session_storages else None
        models = ModelRegistry(self._providers)
        validate_agent_config(self._config, models.has)
        tools = {t.descriptor.name: t for t in self._tools}
        for skill in self._skills:
            self._check_skill(skill, tools)
        plugins = PluginManager()
        await plugins.initialize(self._plugins)
        memory_storage = self._memory_storages[0] if self._memory_storages else None

        tracer = self._tracer

        async def complete(request: ChatRequest) -> str:
            return await complete_text(models, request, tracer=tracer)

        counter_for = self._token_counter
        # Loading a counter can take ~0.5 s: pay it at build, off the event loop (an exact BPE
        # tokenizer is deferred until a context comes near a threshold; see token_estimator).
        await asyncio.to_thread(lambda: warm_up(counter_for(i.model_id) for i in models.infos()))

        def estimator_for(model: ModelInfo) -> ContextTokenEstimator:
            floor = exactness_floor(self._config, model.context_window)
            return ContextTokenEstimator(counter_for(model.model_id), exact_from=floor)

        config = self._config
        kernel = Kernel(
            config=config,
            models=models,
            tools=tools,
            skills={s.name: s for s in self._skills},
            plugins=plugins,
            session_storage=session_storage,
            memory=MemoryManager(memory_storage, complete),
            control=AgentControl[SessionRuntime](config.max_active_sessions),
            prompt_builder=PromptBuilder(
                system_instructions=config.system_instructions,
                personality=config.personality,
                environment=config.environment_context,
                skills=self._skills,
                plugins=plugins.descriptors,
                phrases=PHRASES[config.language],
            ),
            estimator_for=estimator_for,
            writers=self._leases[0].writers(session_storage) if self._leases else None,
            tracer=tracer,
        )
        return Agent(kernel)

    @staticmethod
    def _check_skill(skill: SkillDefinition, tools: dict[str, ToolHandler]) -> None:
        violations = skill_name_violations(skill.name)
        if violations:
            rules = "; ".join(v.message("en") for v in violations)
            raise _build_error(
                ErrorCode.INVALID_CONFIG, f"invalid skill name {skill.name!r}: {rules}"
            )
        if not skill.description.strip() or not skill.prompt.strip():
            raise _build_error(
                ErrorCode.INVALID_CONFIG, f"skill {skill.name!r} needs a description and a prompt"
            )
        missing = [t for t in skill.tool_dependencies if t not in tools]
        if missing:
            raise _build_error(
                ErrorCode.SKILL_DEPENDENCY_NOT_MET,
                f"skill {skill.name!r} needs unregistered tools {missing}",
            )
