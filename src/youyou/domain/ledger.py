"""The append-only session ledger: the single source of truth of a session.

Event kinds and metadata keys: docs/architecture.md, 'The ledger'. The payload classes are
final: the code that runs once per stored event (projection, token counts, provider messages)
tells them apart by exact class, ``type(payload) is UserMessage``. An ``isinstance`` that fails
against a pydantic class runs ABCMeta's Python-level check, about 0.2 us, several times per
event on every resume.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, final

from pydantic import BaseModel, ConfigDict, Field

from youyou.domain.content import ContentBlock

LEDGER_SCHEMA_VERSION = 1

# Standard metadata keys.
META_SESSION_PROFILE = "session_profile"
META_SKILL_INVOCATIONS = "skill_invocations"
META_CONTEXT_COMPACTION = "context_compaction"
META_MEMORY_CHECKPOINT = "memory_checkpoint"
META_MEMORY_MODE = "memory_mode"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MessageStatus(StrEnum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"


class ToolOutput(_Frozen):
    content: str
    is_error: bool = False
    metadata: dict[str, Any] | None = None


class ToolCallRecord(_Frozen):
    call_id: str
    tool_name: str
    requested_arguments: dict[str, Any]
    effective_arguments: dict[str, Any]


class ToolResultRecord(_Frozen):
    call_id: str
    tool_name: str
    output: ToolOutput


@final
class UserMessage(_Frozen):
    kind: Literal["user_message"] = "user_message"
    content: tuple[ContentBlock, ...]


@final
class AssistantMessage(_Frozen):
    kind: Literal["assistant_message"] = "assistant_message"
    content: tuple[ContentBlock, ...]
    status: MessageStatus = MessageStatus.COMPLETE


@final
class ToolCall(_Frozen):
    kind: Literal["tool_call"] = "tool_call"
    call: ToolCallRecord


@final
class ToolResult(_Frozen):
    kind: Literal["tool_result"] = "tool_result"
    result: ToolResultRecord


@final
class SystemMessage(_Frozen):
    kind: Literal["system_message"] = "system_message"
    content: str


@final
class Metadata(_Frozen):
    kind: Literal["metadata"] = "metadata"
    key: str
    value: Any


SessionEventPayload = Annotated[
    UserMessage | AssistantMessage | ToolCall | ToolResult | SystemMessage | Metadata,
    Field(discriminator="kind"),
]


class LedgerEvent(_Frozen):
    seq: int
    timestamp: datetime
    payload: SessionEventPayload
    schema_version: int = LEDGER_SCHEMA_VERSION


_MESSAGE_TYPES = frozenset({UserMessage, AssistantMessage, SystemMessage})


def is_message(payload: object) -> bool:
    """Messages counted by the session summary: user, assistant and system."""
    return type(payload) in _MESSAGE_TYPES
