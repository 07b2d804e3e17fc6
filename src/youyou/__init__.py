"""YouYou: an LLM agent kernel with a durable session ledger.

Quick use::

    agent = await AgentBuilder(AgentConfig(default_model="youyou-demo")) \\
        .register_model_provider(ScriptedProvider.demo()).build()
    session = await agent.new_session()
    turn = await session.send_message("hello")
    async for event in turn.events: ...
    outcome = await turn.join()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from youyou.adapters.providers.scripted import ScriptedProvider, ScriptedResponse
    from youyou.api.agent import Agent
    from youyou.api.builder import AgentBuilder
    from youyou.api.catalog import SessionCatalog
    from youyou.api.running_turn import RunningTurn, TurnController
    from youyou.api.session import SessionHandle, UserInput
    from youyou.domain.approvals import ApprovalDecision, ApprovalPolicy, PendingApproval
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
        AskApproval,
        BeforeToolUsePatch,
        Continue,
        ContinueWith,
        HookKind,
        PluginDescriptor,
        SkipApproval,
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
    from youyou.ports.turn import TurnOptions

__version__ = "0.1.0"

__all__ = [
    "Abort",
    "Agent",
    "AgentBuilder",
    "AgentConfig",
    "AgentError",
    "AgentEvent",
    "ApprovalDecision",
    "ApprovalPolicy",
    "AskApproval",
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
    "PendingApproval",
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
    "SkipApproval",
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

# The public names are imported on first use: ``youyou --help`` and other light entry points
# import ``youyou.cli`` through this package and must not pay for the whole kernel (pydantic
# models, SQLAlchemy, jsonschema) up front.
_HOMES: dict[str, tuple[str, ...]] = {
    "youyou.adapters.providers.scripted": ("ScriptedProvider", "ScriptedResponse"),
    "youyou.api.agent": ("Agent",),
    "youyou.api.builder": ("AgentBuilder",),
    "youyou.api.catalog": ("SessionCatalog",),
    "youyou.api.running_turn": ("RunningTurn", "TurnController"),
    "youyou.api.session": ("SessionHandle", "UserInput"),
    "youyou.ports.turn": ("TurnOptions",),
    "youyou.domain.approvals": ("ApprovalDecision", "ApprovalPolicy", "PendingApproval"),
    "youyou.domain.cancel": ("CancellationToken",),
    "youyou.domain.config": (
        "AgentConfig",
        "CompactionPolicy",
        "EnvironmentContext",
        "MemoryMode",
        "SessionConfig",
        "SummaryFailurePolicy",
    ),
    "youyou.domain.content": ("ContentBlock", "FileContentBlock", "ImageBlock", "TextBlock"),
    "youyou.domain.errors": ("AgentError", "ErrorCode", "ErrorSource"),
    "youyou.domain.events": ("AgentEvent", "ContextUsage"),
    "youyou.domain.hooks": (
        "Abort",
        "AskApproval",
        "BeforeToolUsePatch",
        "Continue",
        "ContinueWith",
        "HookKind",
        "PluginDescriptor",
        "SkipApproval",
        "TurnStartPatch",
    ),
    "youyou.domain.ledger": ("LedgerEvent", "ToolOutput"),
    "youyou.domain.memory": ("Memory",),
    "youyou.domain.model": ("ModelInfo", "ProviderCapability"),
    "youyou.domain.session": (
        "SearchMode",
        "SessionListQuery",
        "SessionPage",
        "SessionSearchQuery",
        "SessionSummary",
    ),
    "youyou.domain.skill": ("SkillDefinition",),
    "youyou.domain.tool": ("ToolDescriptor", "ToolInput"),
    "youyou.domain.turn": ("OutcomeStatus", "TurnOutcome"),
    "youyou.ports": (
        "MemoryStorage",
        "ModelProvider",
        "Plugin",
        "PluginRegistrar",
        "SessionStorage",
        "TokenCounter",
        "ToolHandler",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> object:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
