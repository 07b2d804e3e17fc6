"""The one error type of the kernel boundary.

Exception tree (all errors leaving the kernel are ``AgentError``)::

    Exception
     └── AgentError(code: ErrorCode, message, retryable, source)

The code tells *what* failed; ``source`` tells which component raised it. When each code is
raised: docs/architecture.md, 'Errors'.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # build time
    NO_MODEL_PROVIDER = "NO_MODEL_PROVIDER"
    NAME_CONFLICT = "NAME_CONFLICT"
    INVALID_CONFIG = "INVALID_CONFIG"
    SKILL_DEPENDENCY_NOT_MET = "SKILL_DEPENDENCY_NOT_MET"
    PLUGIN_INIT_FAILED = "PLUGIN_INIT_FAILED"
    STORAGE_DUPLICATE = "STORAGE_DUPLICATE"
    INVALID_DEFAULT_MODEL = "INVALID_DEFAULT_MODEL"
    # run time
    SESSION_BUSY = "SESSION_BUSY"
    TURN_BUSY = "TURN_BUSY"
    INPUT_VALIDATION = "INPUT_VALIDATION"
    MODEL_NOT_SUPPORTED = "MODEL_NOT_SUPPORTED"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    TOOL_EXECUTION_ERROR = "TOOL_EXECUTION_ERROR"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    SKILL_NOT_FOUND = "SKILL_NOT_FOUND"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    STORAGE_ERROR = "STORAGE_ERROR"
    MAX_TOOL_CALLS_EXCEEDED = "MAX_TOOL_CALLS_EXCEEDED"
    COMPACT_ERROR = "COMPACT_ERROR"
    CHAT_CONTEXT_LIMIT_REACHED = "CHAT_CONTEXT_LIMIT_REACHED"
    REQUEST_CANCELLED = "REQUEST_CANCELLED"
    PLUGIN_ABORTED = "PLUGIN_ABORTED"
    INTERNAL_PANIC = "INTERNAL_PANIC"
    AGENT_SHUTDOWN = "AGENT_SHUTDOWN"
    APPROVAL_NOT_FOUND = "APPROVAL_NOT_FOUND"
    APPROVAL_ALREADY_DECIDED = "APPROVAL_ALREADY_DECIDED"


class ErrorSource(StrEnum):
    AGENT_BUILDER = "agent_builder"
    AGENT = "agent"
    SESSION_SERVICE = "session_service"
    TURN_ENGINE = "turn_engine"
    TOOL_DISPATCHER = "tool_dispatcher"
    SKILL_RESOLVER = "skill_resolver"
    CONTEXT_MANAGER = "context_manager"
    MEMORY_MANAGER = "memory_manager"
    PLUGIN_MANAGER = "plugin_manager"
    PROVIDER = "provider"
    STORAGE = "storage"
    TOOL = "tool"


class AgentError(Exception):
    """A kernel failure with a stable machine-readable code."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retryable: bool = False,
        source: ErrorSource = ErrorSource.AGENT,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.source = source

    def __repr__(self) -> str:
        return f"AgentError(code={self.code.value!r}, message={self.message!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentError):
            return NotImplemented
        return (self.code, self.message, self.retryable, self.source) == (
            other.code,
            other.message,
            other.retryable,
            other.source,
        )

    def __hash__(self) -> int:
        return hash((self.code, self.message))
