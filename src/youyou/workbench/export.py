"""A chat session as a file for the postmortem: a JSON document (structured, versioned) and
Markdown rendered from it (readable). Both hold every message with its time, each tool call
with its arguments, full result and duration, and every compaction summary where it
happened in the conversation."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from youyou.domain.context import CompactionRecord
from youyou.domain.ledger import META_CONTEXT_COMPACTION, LedgerEvent, Metadata
from youyou.domain.ledger_metadata import read_metadata
from youyou.workbench.history import history
from youyou.workbench.store import ChatSessionRecord, UserRecord

EXPORT_FORMAT = "youyou.chat-session"
EXPORT_VERSION = 1


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def _block(block: Mapping[str, Any]) -> dict[str, Any]:
    """Images are named by type and size, not embedded: an export is read, not replayed."""
    if block.get("type") == "image":
        size = len(block.get("dataBase64", "")) * 3 // 4
        return {"type": "image", "mimeType": block.get("mimeType"), "sizeBytes": size}
    return dict(block)


def _compactions(events: Sequence[LedgerEvent]) -> list[dict[str, Any]]:
    found = []
    for event in events:
        payload = event.payload
        if isinstance(payload, Metadata) and payload.key == META_CONTEXT_COMPACTION:
            record = read_metadata(event, CompactionRecord)
            if record is not None:
                found.append(
                    {
                        "seq": event.seq,
                        "createdAt": _time(event.timestamp),
                        "mode": record.mode.value,
                        "replacesThroughSeq": record.replaces_through_seq,
                        "compactedMessageCount": record.compacted_message_count,
                        "summary": record.summary_body,
                    }
                )
    return found


def export_document(
    chat: ChatSessionRecord,
    owner: UserRecord,
    events: Sequence[LedgerEvent],
    durations: Mapping[tuple[int, str], int],
    exported_at: datetime,
) -> dict[str, Any]:
    """The JSON export; its keys are stable within ``EXPORT_VERSION``."""
    messages = []
    for message in history(events, durations, full_output=True):
        out = message.model_dump(mode="json", by_alias=True)
        out["content"] = [_block(b) for b in message.content]
        out["author"] = owner.username if message.role == "user" else message.role
        messages.append(out)
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exportedAt": _time(exported_at),
        "exportedBy": {"id": owner.id, "username": owner.username},
        "session": {
            "id": chat.id,
            "title": chat.title,
            "modelId": chat.model_id,
            "owner": {"id": owner.id, "username": owner.username},
            "createdAt": _time(chat.created_at),
            "updatedAt": _time(chat.updated_at),
            "messageCount": chat.message_count,
            "memoryMode": chat.memory_mode,
            "compactedMessageCount": chat.compacted_message_count,
            "lastCompactedAt": _time(chat.last_compacted_at),
        },
        "messages": messages,
        "compactions": _compactions(events),
    }


def export_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


# -- Markdown ---------------------------------------------------------------------------------


def _fenced(text: str, language: str = "") -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _when(value: str | None) -> str:
    return "—" if value is None else value.replace("T", " ").replace("Z", " UTC")


def _message_markdown(message: Mapping[str, Any]) -> list[str]:
    flags = ["incomplete"] if message["status"] == "incomplete" else []
    flags += ["compacted"] if message["compacted"] else []
    heading = f"### {message['author']} · {_when(message['createdAt'])} · seq {message['seq']}"
    lines = [heading + (f" ({', '.join(flags)})" if flags else ""), ""]
    for block in message["content"]:
        if block["type"] == "text":
            lines += [block["text"], ""]
        elif block["type"] == "file":
            lines += [f"Attached file `{block.get('fileName') or 'file'}`:", ""]
            lines += [_fenced(block["text"]), ""]
        else:
            lines += [f"[image {block.get('mimeType')}, {block.get('sizeBytes')} bytes]", ""]
    for call in message["toolCalls"]:
        duration = call["durationMs"]
        took = "duration unknown" if duration is None else f"{duration} ms"
        failed = " · **error**" if call["isError"] else ""
        lines += [f"#### Tool `{call['toolName']}` · {took}{failed}", ""]
        arguments = json.dumps(call["arguments"], ensure_ascii=False, indent=2)
        lines += ["Arguments:", "", _fenced(arguments, "json"), ""]
        output = call["output"]
        result = "(no result: the turn ended first)" if output is None else output
        lines += ["Result:", "", _fenced(result), ""]
    return lines


def _compaction_markdown(compaction: Mapping[str, Any]) -> list[str]:
    heading = (
        f"### Compaction · {_when(compaction['createdAt'])} · seq {compaction['seq']} "
        f"({compaction['mode']}, replaces messages through seq "
        f"{compaction['replacesThroughSeq']})"
    )
    summary = compaction["summary"] or "(no summary: the older messages were dropped)"
    return [heading, "", *(f"> {line}" if line else ">" for line in summary.splitlines()), ""]


def export_markdown(document: Mapping[str, Any]) -> str:
    session = document["session"]
    lines = [
        f"# {session['title']}",
        "",
        f"- Session: `{session['id']}`",
        f"- Model: `{session['modelId']}`",
        f"- Owner: {session['owner']['username']}",
        f"- Created: {_when(session['createdAt'])}",
        f"- Last activity: {_when(session['updatedAt'])}",
        f"- Memory mode: {session['memoryMode']}",
        f"- Messages: {session['messageCount']}",
        f"- Exported: {_when(document['exportedAt'])} by {document['exportedBy']['username']}",
        "",
        "## Conversation",
        "",
    ]
    timeline: list[tuple[int, list[str]]] = [
        (m["seq"], _message_markdown(m)) for m in document["messages"]
    ]
    timeline += [(c["seq"], _compaction_markdown(c)) for c in document["compactions"]]
    for _, block in sorted(timeline, key=lambda entry: entry[0]):
        lines += block
    return "\n".join(lines).rstrip() + "\n"


def content_disposition(chat: ChatSessionRecord, extension: str, exported_at: datetime) -> str:
    """An ASCII file name from the id and time, and the title in ``filename*`` (RFC 6266)."""
    stamp = exported_at.strftime("%Y%m%d-%H%M")
    ascii_name = f"youyou-{chat.id[:8]}-{stamp}.{extension}"
    title = re.sub(r'[\x00-\x1f\x7f/\\:*?"<>|]+', " ", chat.title).strip()[:80] or "session"
    readable = quote(f"{title} {stamp}.{extension}", safe="")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{readable}"
