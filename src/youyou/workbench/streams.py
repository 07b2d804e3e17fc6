"""Server-Sent Event frames of one turn, kept until the turn ends so a client can re-attach.

The turn runs independently of any HTTP connection: a client that drops (laptop sleep, VPN)
loses nothing, and ``follow(after)`` replays the frames after its ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic.alias_generators import to_camel

from youyou.adapters.tools.load_skill import DISPLAY_KEY
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.events import (
    AgentEvent,
    ContextCompacted,
    ErrorEvent,
    ModelWaiting,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallEnd,
    ToolCallStart,
    TurnCancelled,
    TurnComplete,
    TurnStarted,
)
from youyou.workbench.errors import ApiCode, ApiError, Language, from_agent_error


def comment(text: str) -> bytes:
    """An SSE comment line: clients that parse events skip it, a UI may show it."""
    return f": {text}\n\n".encode()


KEEPALIVE = comment("keep-alive")


def waiting_note(payload: ModelWaiting) -> str:
    """The note of a model that has not answered yet: ``waiting for the model 20s``."""
    return f"waiting for the model {payload.elapsed_s}s"


@dataclass(frozen=True, slots=True)
class Frame:
    id: int
    event: str
    data: dict[str, Any]

    def text(self) -> str:
        """The frame as it goes over the wire."""
        body = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        return f"id: {self.id}\nevent: {self.event}\ndata: {body}\n\n"

    def encode(self) -> bytes:
        return self.text().encode()


def _object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**required, **optional},
        "required": list(required),
    }


_STRING = {"type": "string"}
_OPTIONAL_STRING = {"type": ["string", "null"]}
_INTEGER = {"type": "integer"}
_USAGE = _object(
    {"inputTokens": _INTEGER, "outputTokens": _INTEGER, "totalTokens": _INTEGER},
    reasoningTokens={"type": ["integer", "null"]},
    cost={"type": ["number", "null"]},  # the turn's cost when its model has prices
)
# The JSON in ``data`` of each event, as ``frame_data`` (and the hub, for ``memory``) builds it.
EVENT_DATA: dict[str, dict[str, Any]] = {
    "turn_started": _object({"turnId": _STRING, "userMessageSeq": _INTEGER}),
    "text_delta": _object({"text": _STRING}),
    "reasoning_delta": _object({"text": _STRING}),
    "tool_call_start": _object(
        {"callId": _STRING, "toolName": _STRING, "arguments": {"type": "object"}}
    ),
    "tool_call_end": _object(
        {
            "callId": _STRING,
            "toolName": _STRING,
            "output": _STRING,
            "isError": {"type": "boolean"},
            "durationMs": _INTEGER,
        }
    ),
    "tool_approval_requested": _object(
        {
            "callId": _STRING,
            "toolName": _STRING,
            "arguments": {"type": "object"},
            "serverId": _OPTIONAL_STRING,
            "reason": _STRING,
            "requestedAt": _STRING,
            "expiresAt": _OPTIONAL_STRING,
        }
    ),
    "tool_approval_decided": _object(
        {
            "callId": _STRING,
            "toolName": _STRING,
            "decision": {"enum": ["approve", "deny"]},
            "decidedBy": _STRING,
            "decidedAt": _STRING,
            "reason": _OPTIONAL_STRING,
            "remember": {"enum": ["session", None]},
        }
    ),
    "context_compacted": _object({"mode": _STRING, "replacesThroughSeq": _INTEGER}),
    "turn_complete": _object(
        {"usage": _USAGE, "memory": {"$ref": "#/components/schemas/MemoryOut"}}
    ),
    "turn_cancelled": _object({}),
    "error": _object({"code": _STRING, "message": _STRING}),
}
# OpenAPI ``itemSchema`` of ``text/event-stream``: one event as a client's parser sees it.
SSE_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {
            "type": "string",
            "pattern": "^[0-9]+$",
            "description": "Sequence within the turn; send the last one seen as Last-Event-ID "
            "to re-attach.",
        },
        "event": {"enum": list(EVENT_DATA)},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
    "oneOf": [
        {
            "properties": {
                "event": {"const": event},
                "data": {"contentMediaType": "application/json", "contentSchema": data},
            }
        }
        for event, data in EVENT_DATA.items()
    ],
}


def camel(data: dict[str, Any]) -> dict[str, Any]:
    return {to_camel(key): value for key, value in data.items()}


def api_error_of(event: ErrorEvent, model_id: str | None = None) -> ApiError:
    """A turn's fatal error in the API's catalog, like any HTTP error: its code and detail,
    never the text of an internal failure (which may hold SQL or paths) or of a provider's."""
    try:
        code = ErrorCode(event.code)
    except ValueError:
        return ApiError(ApiCode.INTERNAL_ERROR)
    return from_agent_error(AgentError(code, event.message), model_id)


def frame_data(
    event: AgentEvent, language: Language = "zh-CN", model_id: str | None = None
) -> dict[str, Any] | None:
    """The SSE payload of a kernel event; None for events clients do not see (non-fatal
    errors the model already got back as a tool result). ``turn_complete``'s ``memory`` is
    added by the caller, who knows the session. An ``error`` speaks the sender's language and
    names the session's model (``model_id``) when the model failed."""
    payload = event.payload
    match payload:
        case TurnStarted():
            return {"turnId": event.turn_id, "userMessageSeq": payload.user_message_seq}
        case TextDeltaEvent() | ReasoningDeltaEvent():
            return {"text": payload.text}
        case ToolCallStart():
            return {
                "callId": payload.call_id,
                "toolName": payload.tool_name,
                "arguments": payload.arguments,
            }
        case ToolCallEnd():
            metadata = payload.output.metadata or {}
            shown = metadata.get(DISPLAY_KEY)
            return {
                "callId": payload.call_id,
                "toolName": payload.tool_name,
                "output": shown if isinstance(shown, str) else payload.output.content,
                "isError": payload.output.is_error,
                "durationMs": payload.duration_ms,
            }
        case ToolApprovalRequested() | ToolApprovalDecided():
            return camel(payload.model_dump(mode="json", exclude={"type"}))
        case ContextCompacted():
            return {"mode": payload.mode.value, "replacesThroughSeq": payload.replaces_through_seq}
        case TurnComplete():
            return {"usage": camel(payload.usage.model_dump())}
        case TurnCancelled():
            return {}
        case ErrorEvent():
            if not payload.fatal:
                return None
            error = api_error_of(payload, model_id)
            return {
                "code": error.code.value,
                "message": error.message(language),
            }
    return None


class FrameSource(Protocol):
    """What a client's SSE response reads: a turn of this process or one relayed from another."""

    def follow(self, after: int, keepalive_s: float) -> AsyncIterator[bytes]: ...


class TurnStream:
    """Frames of one turn, fanned out to any number of followers."""

    def __init__(self, chat_session_id: str, turn_id: str) -> None:
        self.chat_session_id = chat_session_id
        self.turn_id = turn_id
        self._frames: list[Frame] = []
        self._changed = asyncio.Event()
        self._note: str | None = None
        self._notes = 0  # notes so far: each one is sent, even when its text repeats
        self.done = False

    def publish(self, frame: Frame) -> None:
        self._frames.append(frame)
        self._note = None  # the turn has moved on: a re-attaching client does not get it
        self._wake()

    def note(self, text: str) -> None:
        """The turn's current progress (``waiting_note``): sent to followers as an SSE comment
        until the next frame; not a frame, so never replayed or copied."""
        self._note = text
        self._notes += 1
        self._wake()

    def close(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def batches(
        self, after: int = 0, idle_s: float | None = None
    ) -> AsyncIterator[list[Frame]]:
        """Frames with ``id > after`` in order, as lists of those published since the previous
        list; an empty list after ``idle_s`` without one, or when a note came instead."""
        index = next((i for i, f in enumerate(self._frames) if f.id > after), len(self._frames))
        while True:
            if index < len(self._frames):
                batch = self._frames[index:]
                index += len(batch)
                yield batch
            elif self.done:
                return
            else:
                try:
                    async with asyncio.timeout(idle_s):
                        await self._changed.wait()
                except TimeoutError:
                    yield []
                else:
                    if index == len(self._frames) and not self.done:
                        yield []

    async def follow(self, after: int, keepalive_s: float) -> AsyncIterator[bytes]:
        """Frames with ``id > after`` as they come; the turn's note as a comment line when it
        changes, a keep-alive comment when idle for a while. The frames published together
        go out as one chunk: one write to the connection, not one per frame."""
        shown = self._notes - 1 if self._note is not None else self._notes
        async for batch in self.batches(after, keepalive_s):
            if self._note is not None and self._notes != shown:
                yield comment(self._note)
            elif not batch:
                yield KEEPALIVE
            shown = self._notes
            if batch:
                yield b"".join(frame.encode() for frame in batch)
