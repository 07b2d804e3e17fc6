"""Map database failures to the kernel's one error type."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, OperationalError

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

# PostgreSQL serialization failure and deadlock: the transaction can simply be run again.
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def _is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, OperationalError | OSError | TimeoutError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        return getattr(exc.orig, "sqlstate", None) in _RETRYABLE_SQLSTATES
    return False


def storage_error(action: str, exc: BaseException | None = None) -> AgentError:
    """STORAGE_ERROR; retryable when the database was busy or the connection dropped."""
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    return AgentError(
        ErrorCode.STORAGE_ERROR,
        f"{action} failed{detail}",
        retryable=exc is not None and _is_retryable(exc),
        source=ErrorSource.STORAGE,
    )


def session_not_found(session_id: str) -> AgentError:
    return AgentError(
        ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found", source=ErrorSource.STORAGE
    )


def invalid_query(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.STORAGE)
