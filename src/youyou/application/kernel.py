"""The immutable parts of a built agent, shared by every session it runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from youyou.application.agent_control import AgentControl
from youyou.application.context_manager import TokenEstimator
from youyou.application.memory_manager import MemoryManager
from youyou.application.model_router import ModelRegistry
from youyou.application.plugin_manager import PluginManager
from youyou.application.prompt_builder import PromptBuilder
from youyou.application.session_runtime import SessionRuntime
from youyou.application.tracing import NOOP_TRACER
from youyou.application.writer_lease import WriterLeases
from youyou.domain.config import AgentConfig
from youyou.domain.model import ModelInfo
from youyou.domain.skill import SkillDefinition
from youyou.domain.templates import PHRASES, Phrases
from youyou.ports.session_storage import SessionStorage
from youyou.ports.tool import ToolHandler
from youyou.ports.tracer import Tracer


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, eq=False)
class Kernel:
    config: AgentConfig
    models: ModelRegistry
    tools: Mapping[str, ToolHandler]
    skills: Mapping[str, SkillDefinition]
    plugins: PluginManager
    session_storage: SessionStorage | None
    memory: MemoryManager
    control: AgentControl[SessionRuntime]
    prompt_builder: PromptBuilder
    estimator_for: Callable[[ModelInfo], TokenEstimator]
    # One writer per session across processes; None: only this process's own guard.
    writers: WriterLeases | None = None
    clock: Callable[[], datetime] = utc_now
    # Spans of turns, model requests, tools and compactions; the no-op one when tracing is off.
    tracer: Tracer = NOOP_TRACER

    @property
    def phrases(self) -> Phrases:
        """The model-facing fixed texts in the configured language."""
        return PHRASES[self.config.language]
