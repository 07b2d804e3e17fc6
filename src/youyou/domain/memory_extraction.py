"""Memory extraction templates, memory merging and the mutation parser.

Pure functions only: the caller injects the clock and the id generator, so the parser can turn
untrusted model output into ``MemoryMutation`` values without any I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from youyou.domain.ledger import LedgerEvent, Metadata
from youyou.domain.memory import (
    CreateMemory,
    DeleteMemory,
    Memory,
    MemoryMutation,
    SkipMemory,
    UpdateMemory,
)
from youyou.domain.transcript import message_line

# System prompt of the memory model.
MEMORY_EXTRACTION_PROMPT = """\
You maintain the long-term memory of an assistant about one user. You receive a window of a \
conversation and the complete list of memories saved so far. Decide, in one pass, how the \
memory must change.

Save only durable facts that will help in later, unrelated conversations: the user's stable \
preferences, identity and role, long-running projects and their key facts, environment \
details, decisions, and explicit requests to remember something. Do not save greetings, \
one-off task details, content of tool outputs that is only useful now, secrets (passwords, \
tokens, keys) or guesses.

Operations:
- "create": a new fact not covered by any existing memory. Give "content".
- "update": an existing memory is outdated, incomplete or contradicted. Give its "id" and the \
full new "content" (it replaces the old text).
- "delete": an existing memory is wrong or the user asked to forget it. Give its "id".
- "skip": nothing worth remembering changed. Give only "reason".

Rules:
- Prefer "update" over "create" when a memory about the same subject exists; never create \
duplicates.
- Use only ids that appear in the existing memories.
- Each memory is one short, self-contained statement in the language the user wrote in.
- Every operation has a short "reason".

Answer with strict JSON only, no prose and no code fence, exactly of this shape:
{"mutations": [{"op": "create" | "update" | "delete" | "skip", "id": "...", \
"content": "...", "reason": "..."}]}
Leave out "id" for "create" and "skip", and "content" for "delete" and "skip". If nothing \
changes, answer {"mutations": [{"op": "skip", "reason": "..."}]}."""

# User message of the memory model.
MEMORY_EXTRACTION_INPUT = """\
<conversation_window session_id="{session_id}" from_seq="{seq_start}" to_seq="{seq_end}">
{events}
</conversation_window>

<existing_memories count="{count}">
{memories}
</existing_memories>

Return the JSON object of mutations now."""

TOOL_RESULT_EXCERPT_CHARS = 2000
_FENCE = re.compile(r"```[A-Za-z]*\s*(.*?)```", re.DOTALL)


def merge_memories(
    first: Sequence[Memory], second: Sequence[Memory], max_items: int
) -> list[Memory]:
    """Order-preserving union by id, ``first`` winning, capped at ``max_items``."""
    merged: dict[str, Memory] = {}
    for memory in (*first, *second):
        merged.setdefault(memory.id, memory)
    return list(merged.values())[: max(max_items, 0)]


def _event_line(event: LedgerEvent) -> str | None:
    if isinstance(event.payload, Metadata):
        return None  # metadata carries no conversation content
    line = message_line(event.payload, tool_result_chars=TOOL_RESULT_EXCERPT_CHARS)
    return f"[{event.seq}] {line}"


def has_conversation(events: Sequence[LedgerEvent]) -> bool:
    return any(_event_line(e) is not None for e in events)


def render_extraction_input(
    session_id: str, events: Sequence[LedgerEvent], memories: Sequence[Memory]
) -> str:
    """The extraction input: the ledger window plus every existing memory of the namespace."""
    lines = [line for e in events if (line := _event_line(e)) is not None]
    existing = [
        json.dumps(
            {"id": m.id, "content": m.content, "updated_at": m.updated_at.isoformat()},
            ensure_ascii=False,
        )
        for m in memories
    ]
    return MEMORY_EXTRACTION_INPUT.format(
        session_id=session_id,
        seq_start=events[0].seq if events else 0,
        seq_end=events[-1].seq if events else 0,
        events="\n".join(lines),
        count=len(existing),
        memories="\n".join(existing) or "(none)",
    )


@dataclass(frozen=True, slots=True)
class MutationContext:
    """What a new or updated memory gets besides its content: namespace, time, provenance."""

    namespace: str
    now: datetime
    session_id: str
    seq_start: int
    seq_end: int
    new_id: Callable[[], str]

    def memory(self, id: str, content: str, created_at: datetime) -> Memory:
        return Memory(
            id=id,
            namespace=self.namespace,
            content=content,
            created_at=created_at,
            updated_at=self.now,
            source_session_id=self.session_id,
            source_seq_start=self.seq_start,
            source_seq_end=self.seq_end,
        )


@dataclass(frozen=True, slots=True)
class ParsedMutations:
    mutations: tuple[MemoryMutation, ...]
    warnings: tuple[str, ...]


def _decode_object(text: str) -> object | None:
    """Find the JSON payload: whole text, then fenced blocks, then the first decodable value."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for candidate in candidates:
        try:
            decoded: object = json.loads(candidate)
            return decoded
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value: object = decoder.raw_decode(text, match.start())[0]
        except ValueError:
            continue
        if isinstance(value, list) or (isinstance(value, dict) and "mutations" in value):
            return value
    return None


def _text_field(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _parse_item(
    index: int,
    item: object,
    existing: dict[str, Memory],
    context: MutationContext,
) -> MemoryMutation | str:
    """One mutation, or a warning explaining why the item was rejected."""
    if not isinstance(item, dict):
        return f"mutation {index}: not an object"
    op = item.get("op")
    reason = _text_field(item, "reason")
    content = _text_field(item, "content")
    memory_id = item.get("id")
    if op == "skip":
        return SkipMemory(reason=reason)
    if op == "create":
        if content is None:
            return f"mutation {index}: create without content"
        return CreateMemory(context.memory(context.new_id(), content, context.now))
    if op not in ("update", "delete"):
        return f"mutation {index}: unknown op {op!r}"
    if not isinstance(memory_id, str) or memory_id not in existing:
        return f"mutation {index}: {op} of unknown memory id {memory_id!r}"
    if op == "delete":
        del existing[memory_id]
        return DeleteMemory(id=memory_id)
    if content is None:
        return f"mutation {index}: update without content"
    updated = context.memory(memory_id, content, existing[memory_id].created_at)
    existing[memory_id] = updated
    return UpdateMemory(updated)


def parse_mutations(
    text: str, existing: Sequence[Memory], context: MutationContext
) -> ParsedMutations:
    """Turn model output into mutations; never raises, every rejection becomes a warning."""
    if not text.strip():
        return ParsedMutations((), ("memory model returned no output",))
    decoded = _decode_object(text)
    items = decoded.get("mutations") if isinstance(decoded, dict) else decoded
    if not isinstance(items, list):
        return ParsedMutations((), ("memory model output has no JSON mutations list",))
    known = {m.id: m for m in existing}
    mutations: list[MemoryMutation] = []
    warnings: list[str] = []
    for index, item in enumerate(items):
        result = _parse_item(index, item, known, context)
        if isinstance(result, str):
            warnings.append(result)
        else:
            mutations.append(result)
    return ParsedMutations(tuple(mutations), tuple(warnings))
