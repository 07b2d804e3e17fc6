"""Typed hook payloads and results (see docs/architecture.md, 'Plugin hooks').

Only TurnStart and BeforeToolUse handlers may return ``ContinueWith``, and only BeforeToolUse
handlers ``AskApproval`` / ``SkipApproval``; the handler type aliases below make any other hook
returning them a type error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from youyou.domain.content import ContentBlock
from youyou.domain.ledger import ToolOutput

P = TypeVar("P")


class HookKind(StrEnum):
    SESSION_START = "session_start"
    SESSION_END = "session_end"
    TURN_START = "turn_start"
    TURN_END = "turn_end"
    BEFORE_TOOL_USE = "before_tool_use"
    AFTER_TOOL_USE = "after_tool_use"
    BEFORE_COMPACT = "before_compact"


class SessionTerminationMode(StrEnum):
    CLOSE = "close"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True, slots=True)
class Continue:
    pass


@dataclass(frozen=True, slots=True)
class ContinueWith(Generic[P]):
    patch: P


@dataclass(frozen=True, slots=True)
class Abort:
    reason: str


@dataclass(frozen=True, slots=True)
class AskApproval:
    """BeforeToolUse only: this call waits for a person's approval, whatever the tool's policy
    (and even for a tool approved for the rest of the session)."""

    reason: str


@dataclass(frozen=True, slots=True)
class SkipApproval:
    """BeforeToolUse only: this call runs without asking, whatever the tool's policy (unless
    another handler returns ``AskApproval``: asking wins)."""


@dataclass(frozen=True, slots=True)
class TurnStartPatch:
    append_dynamic_sections: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BeforeToolUsePatch:
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SessionStartPayload:
    session_id: str
    model_id: str
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class SessionEndPayload:
    session_id: str
    message_count: int
    termination_mode: SessionTerminationMode
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class TurnStartPayload:
    session_id: str
    turn_id: str
    user_input: tuple[ContentBlock, ...]
    resolved_skills: tuple[str, ...]
    dynamic_sections: tuple[str, ...]
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class TurnEndPayload:
    session_id: str
    turn_id: str
    assistant_output: tuple[ContentBlock, ...]
    tool_calls_count: int
    cancelled: bool
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class BeforeToolUsePayload:
    """``requested_arguments`` (what the model sent) and ``current_arguments`` (after earlier
    handlers' patches) are copies: editing them in place changes nothing. Return
    ``ContinueWith(BeforeToolUsePatch(...))`` to change what the tool receives.
    """

    session_id: str
    turn_id: str
    call_id: str
    tool_name: str
    requested_arguments: dict[str, Any]
    current_arguments: dict[str, Any]
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class AfterToolUsePayload:
    """``effective_arguments`` is a copy: the ledger's record of the call cannot be edited."""

    session_id: str
    turn_id: str
    call_id: str
    tool_name: str
    effective_arguments: dict[str, Any]
    output: ToolOutput
    duration_ms: int
    success: bool
    plugin_config: Any


@dataclass(frozen=True, slots=True)
class BeforeCompactPayload:
    session_id: str
    message_count: int
    history_estimated_tokens: int
    request_estimated_tokens: int
    plugin_config: Any


ObserveResult = Continue | Abort
TurnStartResult = Continue | ContinueWith[TurnStartPatch] | Abort
BeforeToolUseResult = (
    Continue | ContinueWith[BeforeToolUsePatch] | Abort | AskApproval | SkipApproval
)

SessionStartHandler = Callable[[SessionStartPayload], Awaitable[ObserveResult]]
SessionEndHandler = Callable[[SessionEndPayload], Awaitable[ObserveResult]]
TurnStartHandler = Callable[[TurnStartPayload], Awaitable[TurnStartResult]]
TurnEndHandler = Callable[[TurnEndPayload], Awaitable[ObserveResult]]
BeforeToolUseHandler = Callable[[BeforeToolUsePayload], Awaitable[BeforeToolUseResult]]
AfterToolUseHandler = Callable[[AfterToolUsePayload], Awaitable[ObserveResult]]
BeforeCompactHandler = Callable[[BeforeCompactPayload], Awaitable[ObserveResult]]


@dataclass(frozen=True, slots=True)
class PluginDescriptor:
    id: str
    display_name: str
    description: str
    tapped_hooks: frozenset[HookKind]
