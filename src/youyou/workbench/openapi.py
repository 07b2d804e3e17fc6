"""The OpenAPI document, corrected where FastAPI's defaults differ from what the server does.

* Every error is the JSON envelope, but FastAPI documents a route's extra responses under the
  route's own media type: the errors of the SSE, Markdown and empty-body routes would read as
  ``text/event-stream``, ``text/plain``… They are documented as ``application/json``.
* Invalid input is answered 400 ``VALIDATION_INVALID_ARGUMENT``, never FastAPI's 422: the 422
  responses (and their schemas) are dropped.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

_ERROR_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}
_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


def describe_real_responses(app: FastAPI) -> None:
    """Make ``app.openapi()`` (and so ``/openapi.json``) return the corrected document."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _correct(generate())
        return app.openapi_schema or {}

    app.openapi = openapi  # type: ignore[method-assign]


def _correct(document: dict[str, Any]) -> None:
    for path in document.get("paths", {}).values():
        for operation in path.values():
            responses: dict[str, Any] = operation.get("responses", {})
            responses.pop("422", None)
            for status, response in responses.items():
                media = response.get("content", {}).values()
                if status[0] in "45" and any(m.get("schema") == _ERROR_REF for m in media):
                    response["content"] = {"application/json": {"schema": _ERROR_REF}}
    schemas = document.get("components", {}).get("schemas", {})
    for name in _VALIDATION_SCHEMAS:
        schemas.pop(name, None)
