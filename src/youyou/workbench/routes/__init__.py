"""HTTP routes, one module per area; ``COMMON_ERRORS`` documents the error envelope."""

from __future__ import annotations

from typing import Any

from youyou.workbench.schemas import ErrorEnvelope

_ERROR = {"model": ErrorEnvelope}
COMMON_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {**_ERROR, "description": "VALIDATION_INVALID_ARGUMENT: bad body, query or id"},
    401: {**_ERROR, "description": "AUTH_UNAUTHENTICATED: missing, invalid or expired token"},
    408: {**_ERROR, "description": "REQUEST_TIMEOUT: the body did not arrive in time"},
    413: {**_ERROR, "description": "PAYLOAD_TOO_LARGE: body over the server limit"},
    500: {**_ERROR, "description": "INTERNAL_ERROR"},
    503: {**_ERROR, "description": "SERVICE_UNAVAILABLE: database busy or down (Retry-After)"},
}
SESSION_ERRORS: dict[int | str, dict[str, Any]] = {
    **COMMON_ERRORS,
    403: {**_ERROR, "description": "FORBIDDEN: a session of another user"},
    404: {**_ERROR, "description": "NOT_FOUND: unknown session"},
    409: {**_ERROR, "description": "TURN_BUSY: a turn or compaction is running in the session"},
    502: {**_ERROR, "description": "MODEL_ERROR: the summary model failed"},
    503: {**_ERROR, "description": "SERVER_SHUTTING_DOWN, or SERVICE_UNAVAILABLE (database)"},
}
ASSET_ERRORS: dict[int | str, dict[str, Any]] = {
    **COMMON_ERRORS,
    404: {**_ERROR, "description": "NOT_FOUND: unknown id (another user's ids are unknown too)"},
}
