"""``/chat/sessions``: sessions, their history, sending with an SSE answer, re-attaching,
cancelling, and the session's memory mode and compaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.workbench.context import (
    LanguageDep,
    RequestIdDep,
    SenderDep,
    UserDep,
    WorkbenchDep,
)
from youyou.workbench.errors import ApiCode, ApiError, Localized, busy_elsewhere
from youyou.workbench.history import history
from youyou.workbench.intake import large_body
from youyou.workbench.projection import memory_out
from youyou.workbench.routes import SESSION_ERRORS
from youyou.workbench.schemas import (
    ApprovalBody,
    ApprovalOut,
    Envelope,
    ErrorEnvelope,
    ImageBlockIn,
    MemoryModeBody,
    MessageOut,
    NewSessionBody,
    PendingApprovalOut,
    RenameBody,
    SendBody,
    SessionOut,
    SessionPage,
    TextBlockIn,
)
from youyou.workbench.store import ChatSessionRecord, UserRecord
from youyou.workbench.store.approvals import Decision
from youyou.workbench.streams import SSE_EVENT_SCHEMA, FrameSource
from youyou.workbench.usage import usage_out

router = APIRouter(prefix="/chat/sessions", tags=["sessions"], responses=SESSION_ERRORS)

_SSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "text/event-stream. Frames: `id: <turn-scoped sequence>`, `event: <name>`, one "
            "`data:` line of JSON. Events: turn_started {turnId, userMessageSeq}, text_delta "
            "{text}, reasoning_delta {text}, tool_call_start {callId, toolName, arguments}, "
            "tool_call_end {callId, toolName, output, isError, durationMs}, "
            "tool_approval_requested {callId, toolName, arguments, serverId, reason, "
            "requestedAt, expiresAt}, tool_approval_decided {callId, toolName, decision, "
            "decidedBy, decidedAt, reason, remember}, context_compacted "
            "{mode, replacesThroughSeq}, turn_complete {usage, memory}, turn_cancelled {}, "
            "error {code, message}. Lines starting with ':' are keep-alives."
        ),
        "content": {"text/event-stream": {"itemSchema": SSE_EVENT_SCHEMA}},
    }
}


def session_out(
    wb: WorkbenchDep,
    chat: ChatSessionRecord,
    pending: list[PendingApprovalOut] | None = None,
    running: bool | None = None,
) -> SessionOut:
    return SessionOut(
        id=chat.id,
        title=chat.title,
        model_id=chat.model_id,
        created_at=chat.created_at,
        updated_at=chat.updated_at,
        message_count=chat.message_count,
        memory=memory_out(chat),
        # a call that waits for a decision keeps its session running, on any process
        running=bool(pending) or (wb.hub.is_running(chat.id) if running is None else running),
        awaiting_approval=bool(pending),
        pending_approvals=pending or [],
    )


async def sessions_out(wb: WorkbenchDep, chats: list[ChatSessionRecord]) -> list[SessionOut]:
    """Sessions with the tool calls that wait for their owner's decision. Whether each runs
    is read with the records, before any wait: a turn ending meanwhile must not show as an
    idle session with its old projection."""
    running = [wb.hub.is_running(chat.id) for chat in chats]
    pending = await wb.hub.pending_approvals([chat.id for chat in chats])
    return [
        session_out(wb, chat, pending.get(chat.id), busy)
        for chat, busy in zip(chats, running, strict=True)
    ]


async def one_session_out(wb: WorkbenchDep, chat: ChatSessionRecord) -> SessionOut:
    return (await sessions_out(wb, [chat]))[0]


async def owned(wb: WorkbenchDep, user: UserRecord, session_id: str) -> ChatSessionRecord:
    """404 for an unknown id, 403 for another user's session."""
    return owned_row(user, await wb.store.chat_session(session_id))


def owned_row(user: UserRecord, chat: ChatSessionRecord | None) -> ChatSessionRecord:
    """``owned`` for a session row already read."""
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
    page = SessionPage(items=await sessions_out(wb, items), next_cursor=next_cursor)
    return Envelope(data=page, request_id=rid)


@router.get("/{session_id}")
async def get_session(
    session_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[SessionOut]:
    chat = await owned(wb, user, session_id)
    usage = usage_out(await wb.store.session_usage(chat.id))
    out = await one_session_out(wb, chat)
    return Envelope(data=out.model_copy(update={"usage": usage}), request_id=rid)


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
    turns = await wb.store.session_turn_usage(chat.id)
    usage = {seq: usage_out(record) for seq, record in turns.items()}
    durations = await wb.store.tool_durations(chat.id)
    return Envelope(data=history(events, durations, usage=usage), request_id=rid)


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
    session_id: str, body: SendBody, wb: WorkbenchDep, sender: SenderDep, lang: LanguageDep
) -> StreamingResponse:
    """Streams the answer. Leaving the stream does not cancel the turn; only
    ``POST …/cancel`` (or server shutdown) does. At the context hard limit the stream carries
    an ``error`` frame ``CHAT_CONTEXT_LIMIT_REACHED`` and the message is not stored."""
    blocks = _blocks(body)
    _check_length(blocks, wb.settings.server.max_message_chars)
    user = sender.user
    chat = owned_row(user, sender.chat)
    wb.hub.streams.check(user.id)  # before the turn starts: a refusal then stores nothing
    stream = await wb.hub.send(chat, blocks, lang, sender.assets)
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
    """Idempotent: 200 even when no turn is running. A turn that waits for approval while no
    live process runs it (its server stopped) ends here: its calls get the cancelled result,
    and the session answers with nothing pending and not running."""
    chat = await owned(wb, user, session_id)
    await wb.hub.cancel(chat)
    return Envelope(data=await one_session_out(wb, chat), request_id=rid)


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


_APPROVAL_BODY = {
    "required": True,
    "content": {"application/json": {"schema": ApprovalBody.model_json_schema(by_alias=True)}},
}


@router.post(
    "/{session_id}/approvals/{call_id}",
    openapi_extra={"requestBody": _APPROVAL_BODY},
    responses={
        404: {"model": ErrorEnvelope, "description": "NOT_FOUND, APPROVAL_NOT_FOUND"},
        409: {
            "model": ErrorEnvelope,
            "description": "APPROVAL_ALREADY_DECIDED: by someone else, the timeout, or the "
            "turn ended",
        },
        422: {"model": ErrorEnvelope, "description": "VALIDATION_UNPROCESSABLE: bad body"},
    },
)
async def decide_approval(
    session_id: str,
    call_id: str,
    request: Request,
    wb: WorkbenchDep,
    user: UserDep,
    lang: LanguageDep,
    rid: RequestIdDep,
) -> Envelope[ApprovalOut]:
    """Approve or deny a tool call that waits for a decision, from any device and through
    any server process; answered once the turn has the decision (a turn whose process died
    goes on here). ``remember: "session"`` approves the tool for the rest of the session.
    A body that is not a decision is 422 ``VALIDATION_UNPROCESSABLE``."""
    chat = await owned(wb, user, session_id)
    body = _approval_body(await request.body())
    decision = Decision(
        body.decision, user.username, datetime.now(UTC), body.reason or None, body.remember
    )
    out = await wb.hub.decide(chat, call_id, decision, lang)
    return Envelope(data=out, request_id=rid)


def _approval_body(raw: bytes) -> ApprovalBody:
    """422 for a body that is not a decision (this route's contract asks for it)."""
    try:
        return ApprovalBody.model_validate_json(raw)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
            for e in err.errors()
        )
        raise ApiError(ApiCode.VALIDATION_UNPROCESSABLE, problems) from None
