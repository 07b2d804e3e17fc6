"""YouYou: an LLM agent kernel with a durable session ledger.

Quick use::

    agent = await AgentBuilder(AgentConfig(default_model="youyou-demo")) \\
        .register_model_provider(ScriptedProvider.demo()).build()
    session = await agent.new_session()
    turn = await session.send_message("hello")
    async for event in turn.events: ...
    outcome = await turn.join()
"""

from youyou.adapters.providers.scripted import ScriptedProvider, ScriptedResponse
from youyou.api.agent import Agent
from youyou.api.builder import AgentBuilder
from youyou.api.catalog import SessionCatalog
from youyou.api.running_turn import RunningTurn, TurnController
from youyou.api.session import SessionHandle, UserInput
from youyou.application.turn_engine import TurnOptions
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import (
    AgentConfig,
    CompactionPolicy,
    EnvironmentContext,
    MemoryMode,
    SessionConfig,
    SummaryFailurePolicy,
)
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import AgentEvent, ContextUsage
from youyou.domain.hooks import (
    Abort,
    BeforeToolUsePatch,
    Continue,
    ContinueWith,
    HookKind,
    PluginDescriptor,
    TurnStartPatch,
)
from youyou.domain.ledger import LedgerEvent, ToolOutput
from youyou.domain.memory import Memory
from youyou.domain.model import ModelInfo, ProviderCapability
from youyou.domain.session import (
    SearchMode,
    SessionListQuery,
    SessionPage,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.domain.skill import SkillDefinition
from youyou.domain.tool import ToolDescriptor, ToolInput
from youyou.domain.turn import OutcomeStatus, TurnOutcome
from youyou.ports import (
    MemoryStorage,
    ModelProvider,
    Plugin,
    PluginRegistrar,
    SessionStorage,
    TokenCounter,
    ToolHandler,
)

__version__ = "0.1.0"

__all__ = [
    "Abort",
    "Agent",
    "AgentBuilder",
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "BeforeToolUsePatch",
    "CancellationToken",
    "CompactionPolicy",
    "ContentBlock",
    "ContextUsage",
    "Continue",
    "ContinueWith",
    "EnvironmentContext",
    "ErrorCode",
    "ErrorSource",
    "FileContentBlock",
    "HookKind",
    "ImageBlock",
    "LedgerEvent",
    "Memory",
    "MemoryMode",
    "MemoryStorage",
    "ModelInfo",
    "ModelProvider",
    "OutcomeStatus",
    "Plugin",
    "PluginDescriptor",
    "PluginRegistrar",
    "ProviderCapability",
    "RunningTurn",
    "ScriptedProvider",
    "ScriptedResponse",
    "SearchMode",
    "SessionCatalog",
    "SessionConfig",
    "SessionHandle",
    "SessionListQuery",
    "SessionPage",
    "SessionSearchQuery",
    "SessionStorage",
    "SessionSummary",
    "SkillDefinition",
    "SummaryFailurePolicy",
    "TextBlock",
    "TokenCounter",
    "ToolDescriptor",
    "ToolHandler",
    "ToolInput",
    "ToolOutput",
    "TurnController",
    "TurnOptions",
    "TurnOutcome",
    "TurnStartPatch",
    "UserInput",
    "__version__",
]
