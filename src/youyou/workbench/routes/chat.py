"""``/chat/sessions``: sessions, their history, sending with an SSE answer, re-attaching,
cancelling, and the session's memory mode and compaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import StreamingResponse

from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.workbench.context import LanguageDep, RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError, Localized, busy_elsewhere
from youyou.workbench.history import history
from youyou.workbench.intake import large_body
from youyou.workbench.projection import memory_out
from youyou.workbench.routes import SESSION_ERRORS
from youyou.workbench.schemas import (
    Envelope,
    ImageBlockIn,
    MemoryModeBody,
    MessageOut,
    NewSessionBody,
    RenameBody,
    SendBody,
    SessionOut,
    SessionPage,
    TextBlockIn,
)
from youyou.workbench.store import ChatSessionRecord, UserRecord
from youyou.workbench.streams import SSE_EVENT_SCHEMA, FrameSource

router = APIRouter(prefix="/chat/sessions", tags=["sessions"], responses=SESSION_ERRORS)

_SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "text/event-stream. Frames: `id: <turn-scoped sequence>`, `event: <name>`, one "
            "`data:` line of JSON. Events: turn_started {turnId, userMessageSeq}, text_delta "
            "{text}, reasoning_delta {text}, tool_call_start {callId, toolName, arguments}, "
            "tool_call_end {callId, toolName, output, isError, durationMs}, context_compacted "
            "{mode, replacesThroughSeq}, turn_complete {usage, memory}, turn_cancelled {}, "
            "error {code, message}. Lines starting with ':' are keep-alives."
        ),
        "content": {"text/event-stream": {"itemSchema": SSE_EVENT_SCHEMA}},
    }
}


def session_out(wb: WorkbenchDep, chat: ChatSessionRecord) -> SessionOut:
    return SessionOut(
        id=chat.id,
        title=chat.title,
        model_id=chat.model_id,
        created_at=chat.created_at,
        updated_at=chat.updated_at,
        message_count=chat.message_count,
        memory=memory_out(chat),
        running=wb.hub.is_running(chat.id),
    )


async def owned(wb: WorkbenchDep, user: UserRecord, session_id: str) -> ChatSessionRecord:
    """404 for an unknown id, 403 for another user's session."""
    chat = await wb.store.chat_session(session_id)
    if chat is None:
        raise ApiError(ApiCode.NOT_FOUND)
    if chat.owner_id != user.id:
        raise ApiError(ApiCode.FORBIDDEN)
    return chat


def _blocks(body: SendBody) -> list[ContentBlock]:
    if isinstance(body.content, str):
        return [TextBlock(text=body.content)]
    blocks: list[ContentBlock] = []
    for block in body.content:
        if isinstance(block, TextBlockIn):
            blocks.append(TextBlock(text=block.text))
        elif isinstance(block, ImageBlockIn):
            blocks.append(ImageBlock(mime_type=block.mime_type, data_base64=block.data_base64))
        else:
            blocks.append(
                FileContentBlock(
                    file_name=block.file_name, media_type=block.media_type, text=block.text
                )
            )
    return blocks


def _check_length(blocks: list[ContentBlock], limit: int) -> None:
    """413 for a message over ``max_message_chars``, before any work is done on it (counting
    the tokens of a huge text alone would hold up every other request)."""
    chars = sum(
        len(block.text) for block in blocks if isinstance(block, TextBlock | FileContentBlock)
    )
    if chars > limit:
        raise ApiError(
            ApiCode.PAYLOAD_TOO_LARGE,
            Localized(
                f"a message holds at most {limit} characters of text; this one has {chars}",
                f"一条消息最多 {limit} 个字符的文本，这条有 {chars} 个",
            ),
        )


def _sse(wb: WorkbenchDep, user: UserRecord, stream: FrameSource, after: int) -> StreamingResponse:
    return StreamingResponse(
        wb.hub.streams.followed(user.id, stream.follow(after, wb.settings.server.keepalive_s)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("", status_code=201)
async def create_session(
    body: NewSessionBody, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    chat = await wb.hub.create(user.id, body.title or None, body.model_id)
    return Envelope(data=session_out(wb, chat), request_id=rid)


@router.get("")
async def list_sessions(
    wb: WorkbenchDep,
    user: UserDep,
    rid: RequestIdDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
    since: Annotated[datetime | None, Query()] = None,
) -> Envelope[SessionPage]:
    """Newest first; ``q`` matches an id prefix or a title containing it; ``since`` (ISO 8601,
    UTC when it names no zone) keeps the sessions created or active at or after it: a client
    passes the newest ``updatedAt`` it has to pick up sessions created or used elsewhere."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    try:
        items, next_cursor = await wb.store.list_chat_sessions(
            user.id,
            limit=limit,
            cursor=cursor or None,
            query=(q or "").strip() or None,
            since=since,
        )
    except ValueError:
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, "cursor") from None
    page = SessionPage(items=[session_out(wb, c) for c in items], next_cursor=next_cursor)
    return Envelope(data=page, request_id=rid)


@router.get("/{session_id}")
async def get_session(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    return Envelope(data=session_out(wb, await owned(wb, user, session_id)), request_id=rid)


@router.patch("/{session_id}")
async def rename_session(
    session_id: str, body: RenameBody, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    """The title the user chose, kept from then on (a turn never replaces it); the session
    keeps its place in the list."""
    chat = await owned(wb, user, session_id)
    if not await wb.store.rename_chat_session(chat.id, body.title):
        raise ApiError(ApiCode.NOT_FOUND)
    return Envelope(data=session_out(wb, replace(chat, title=body.title)), request_id=rid)


@router.delete("/{session_id}", status_code=204, response_class=Response)
async def delete_session(session_id: str, wb: WorkbenchDep, user: UserDep) -> Response:
    await wb.hub.delete(await owned(wb, user, session_id))
    return Response(status_code=204)


@router.get("/{session_id}/messages")
async def get_messages(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[list[MessageOut]]:
    """The full history: compacted messages too (marked ``compacted``), each with its time
    (``createdAt``) and its tool calls' ``durationMs``."""
    chat = await owned(wb, user, session_id)
    events = await wb.built.session_storage.load_events(chat.ledger_session_id)
    durations = await wb.store.tool_durations(chat.id)
    return Envelope(data=history(events, durations), request_id=rid)


@router.delete("/{session_id}/messages")
async def clear_messages(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    """Clears the history and resets summary, boundary and token usage."""
    chat = await wb.hub.clear(await owned(wb, user, session_id))
    return Envelope(data=session_out(wb, chat), request_id=rid)


@router.post("/{session_id}/messages", response_class=StreamingResponse, responses=_SSE)
@large_body
async def send_message(
    session_id: str, body: SendBody, wb: WorkbenchDep, user: UserDep, lang: LanguageDep
) -> StreamingResponse:
    """Streams the answer. Leaving the stream does not cancel the turn; only
    ``POST …/cancel`` (or server shutdown) does. At the context hard limit the stream carries
    an ``error`` frame ``CHAT_CONTEXT_LIMIT_REACHED`` and the message is not stored."""
    blocks = _blocks(body)
    _check_length(blocks, wb.settings.server.max_message_chars)
    chat = await owned(wb, user, session_id)
    wb.hub.streams.check(user.id)  # before the turn starts: a refusal then stores nothing
    stream = await wb.hub.send(chat, blocks, lang, user.username)
    return _sse(wb, user, stream, 0)


@router.get(
    "/{session_id}/stream",
    response_class=StreamingResponse,
    responses={**_SSE, 204: {"description": "No turn is running: read the history."}},
)
async def reattach(
    session_id: str,
    wb: WorkbenchDep,
    user: UserDep,
    last_event_id: Annotated[int, Header(ge=0)] = 0,
) -> Response:
    """Re-attach to the running turn: the frames after ``Last-Event-ID``, also when another
    server process on the same database runs it (409 there only on SQLite)."""
    chat = await owned(wb, user, session_id)
    stream = wb.hub.stream_of(chat.id)
    if stream is not None:
        return _sse(wb, user, stream, last_event_id)
    holder = await wb.hub.running_elsewhere(chat)
    if holder is None:
        return Response(status_code=204)
    relayed = wb.hub.relayed(chat)
    if relayed is None:
        raise busy_elsewhere(chat.ledger_session_id, holder)
    return _sse(wb, user, relayed, last_event_id)


@router.post("/{session_id}/cancel")
async def cancel(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    """Idempotent: 200 even when no turn is running."""
    chat = await owned(wb, user, session_id)
    await wb.hub.cancel(chat)
    return Envelope(data=session_out(wb, chat), request_id=rid)


@router.put("/{session_id}/memory")
async def set_memory_mode(
    session_id: str, body: MemoryModeBody, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    """Switching to ``manual`` compacts the uncompacted history at once."""
    chat = await wb.hub.set_mode(await owned(wb, user, session_id), body.mode)
    return Envelope(data=session_out(wb, chat), request_id=rid)


@router.post("/{session_id}/memory:compact")
async def compact(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    """Compacts every uncompacted message now, in any mode."""
    chat = await wb.hub.compact(await owned(wb, user, session_id))
    return Envelope(data=session_out(wb, chat), request_id=rid)
