"""``GET /chat/sessions/{id}/export``: a session as a Markdown or JSON file for the
postmortem (``workbench/export.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from youyou.workbench.context import UserDep, WorkbenchDep
from youyou.workbench.export import (
    content_disposition,
    export_document,
    export_json,
    export_markdown,
)
from youyou.workbench.routes import SESSION_ERRORS
from youyou.workbench.routes.chat import owned

router = APIRouter(prefix="/chat/sessions", tags=["sessions"], responses=SESSION_ERRORS)

_FILE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "The file (not in the JSON envelope), with Content-Disposition: attachment. "
            "JSON: {format, version, exportedAt, exportedBy, session, messages, compactions}."
        ),
        "content": {
            "text/markdown": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


@router.get("/{session_id}/export", response_class=Response, responses=_FILE)
async def export_session(
    session_id: str,
    wb: WorkbenchDep,
    user: UserDep,
    file_format: Annotated[Literal["md", "json"], Query(alias="format")] = "md",
) -> Response:
    """Every message with its time, tool calls with arguments, full results and durations,
    and the compaction summaries; a running turn's messages appear as far as stored."""
    chat = await owned(wb, user, session_id)
    events = await wb.built.session_storage.load_events(chat.ledger_session_id)
    durations = await wb.store.tool_durations(chat.id)
    now = datetime.now(UTC)
    document = export_document(chat, user, events, durations, now)
    if file_format == "json":
        body, media_type = export_json(document), "application/json"
    else:
        body, media_type = export_markdown(document), "text/markdown; charset=utf-8"
    headers = {
        "Content-Disposition": content_disposition(chat, file_format, now),
        "Cache-Control": "no-store",
    }
    return Response(body.encode("utf-8"), media_type=media_type, headers=headers)
