"""Recall of compacted history: search or fetch the raw messages behind a compaction boundary.

See docs/architecture.md, 'Compaction'. A summary keeps the gist but loses exact values (an
error string, a host name); the ledger still holds every message. This module is the pure part
of ``recall_history``: which messages lie behind the boundary, which match a query, and how much
of them fits a token budget. Matching is case-insensitive substring search of each query term,
so it needs no word segmentation: a run of Chinese characters is searched as overlapping pairs
of characters, which also finds a phrase whose words the model recalls in another order.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.tool import ToolDescriptor
from youyou.domain.transcript import message_line

RECALL_TOOL_NAME = "recall_history"

RECALL_WINDOW_SHARE = 0.125
"""The largest share of the context window one recall result may take: half of a tool result's
share (``TOOL_RESULT_WINDOW_SHARE``), so the model always sees the whole result, never a view
clipped in the middle."""

DEFAULT_RECALL_TOKENS = 4000
MIN_RECALL_TOKENS = 100  # room for a message or two besides the header and the footer
MAX_TERMS = 32
SNIPPET_CHARS = 800  # a longer matching message is shown as excerpts around its matches
_CONTEXT_CHARS = 160  # characters kept on each side of a match in an excerpt
_MAX_EXCERPTS = 4
_CUT_MARKER = " […]"
_SEPARATOR = "\n\n"
_HEADER_TERMS_CHARS = 160  # the terms echoed in the header, so a huge query cannot fill it
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_TRIM = "\"'“”‘’「」『』()（）[]【】,，.。;；:：!！?？"

RECALL_DESCRIPTOR = ToolDescriptor.builtin(
    name=RECALL_TOOL_NAME,
    description=(
        "Read the exact messages and tool results of this conversation that were compacted "
        "into the conversation summary. Give `query` to search them (words or phrases in any "
        "language; messages matching more terms come first, then newer ones), or "
        "`from_seq`/`to_seq` to read a range in order; both together search only that range. "
        "Each message comes with its sequence number (#seq). Results stop at a token budget "
        "and say how to get more. "
        "检索或按序号范围读取已被压缩进摘要的原始消息与工具结果。"
    ),
    parameters_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Terms to search for, separated by spaces (an error text, a host "
                "name, 中文关键词).",
            },
            "from_seq": {
                "type": "integer",
                "minimum": 1,
                "description": "First sequence number to read (default 1).",
            },
            "to_seq": {
                "type": "integer",
                "minimum": 1,
                "description": "Last sequence number to read (default: the last compacted one).",
            },
            "max_tokens": {
                "type": "integer",
                "minimum": MIN_RECALL_TOKENS,
                "description": f"Token budget of the result (default {DEFAULT_RECALL_TOKENS}, "
                "capped by the model's context window).",
            },
        },
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class RecallEntry:
    """One message behind the boundary as the model reads it: ``role: text``."""

    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """What the model asked for; ``budget`` is its ``max_tokens`` within ``cap``."""

    query: str | None
    from_seq: int | None
    to_seq: int | None
    budget: int
    cap: int


def recall_cap(context_window: int) -> int:
    return max(1, int(context_window * RECALL_WINDOW_SHARE))


def recall_request(arguments: Mapping[str, Any], context_window: int) -> RecallRequest | str:
    """The request, or what is missing (the schema has already checked the types)."""
    query = arguments.get("query")
    query = query.strip() if isinstance(query, str) and query.strip() else None
    from_seq, to_seq = arguments.get("from_seq"), arguments.get("to_seq")
    if query is None and from_seq is None and to_seq is None:
        return "recall_history needs a query to search, or from_seq/to_seq to read a range."
    cap = recall_cap(context_window)
    wanted = arguments.get("max_tokens")
    budget = min(wanted if isinstance(wanted, int) else DEFAULT_RECALL_TOKENS, cap)
    return RecallRequest(query, from_seq, to_seq, budget, cap)


def recall_entries(events: Iterable[LedgerEvent], through_seq: int) -> list[RecallEntry]:
    """Every message and tool call or result with ``seq <= through_seq``, whole (metadata is
    not part of the conversation)."""
    entries: list[RecallEntry] = []
    for event in events:
        payload = event.payload
        if event.seq > through_seq:
            break
        if isinstance(
            payload, UserMessage | AssistantMessage | ToolCall | ToolResult | SystemMessage
        ):
            line = message_line(payload, tool_result_chars=sys.maxsize)
            entries.append(RecallEntry(event.seq, line))
    return entries


def query_terms(query: str) -> tuple[str, ...]:
    """Lower-cased terms: words split on spaces, Chinese (CJK) runs as overlapping pairs."""
    terms: list[str] = []
    for word in query.split():
        word = word.strip(_TRIM).lower()
        position = 0
        for run in _CJK.finditer(word):
            terms.extend(_latin_parts(word[position : run.start()]))
            text = run.group()
            pairs = [text[i : i + 2] for i in range(len(text) - 1)]
            terms.extend(pairs or [text])
            position = run.end()
        terms.extend(_latin_parts(word[position:]))
    return tuple(dict.fromkeys(terms))[:MAX_TERMS]


def _latin_parts(text: str) -> list[str]:
    text = text.strip(_TRIM)
    return [text] if text else []


def recall(
    entries: Sequence[RecallEntry],
    request: RecallRequest,
    *,
    through_seq: int,
    count: Callable[[str], int],
) -> str:
    """The tool's answer: matches best first, or the range in order, within the budget."""
    first = request.from_seq or 1
    last = min(request.to_seq or through_seq, through_seq)
    if first > through_seq:
        return (
            f"Only messages up to #{through_seq} are compacted; #{first} and later are still in "
            "your context."
        )
    if first > last:
        return f"from_seq (#{first}) is after to_seq (#{last}): nothing to read."
    in_range = [e for e in entries if first <= e.seq <= last]
    where = f"#{first}–#{last}" + (
        f" of the compacted #1–#{through_seq}" if (first, last) != (1, through_seq) else ""
    )
    if request.query is None:
        if not in_range:
            return f"No messages in {where} (only session records)."
        blocks = [(e.seq, f"#{e.seq} {e.text}") for e in in_range]
        return _fit(f"Compacted messages {where}, in order:", blocks, request, count, fetch=last)
    terms = query_terms(request.query)
    if not terms:
        return "The query has no terms to search for: give words, or from_seq/to_seq."
    matches = _ranked(in_range, terms)
    shown_terms = _shorten(" ".join(terms), _HEADER_TERMS_CHARS)
    if not matches:
        return (
            f"No compacted message ({where}) matches the terms {shown_terms}. Try other or fewer "
            "words, or read a range with from_seq/to_seq."
        )
    header = (
        f"{len(matches)} compacted message(s) ({where}) match the terms {shown_terms}, most "
        "terms first, then the newest:"
    )
    blocks = [
        (e.seq, f"#{e.seq} [{hits}/{len(terms)} terms] {_excerpt(e, terms)}") for e, hits in matches
    ]
    return _fit(header, blocks, request, count, fetch=None)


def _ranked(entries: Sequence[RecallEntry], terms: Sequence[str]) -> list[tuple[RecallEntry, int]]:
    """Entries matching at least one term: most terms first, then the newest."""
    patterns = [re.compile(re.escape(term), re.IGNORECASE) for term in terms]
    scored = [(e, sum(1 for p in patterns if p.search(e.text))) for e in entries]
    return sorted(((e, n) for e, n in scored if n), key=lambda item: (-item[1], -item[0].seq))


def _excerpt(entry: RecallEntry, terms: Sequence[str]) -> str:
    """The whole text if short; otherwise windows around the first match of each term."""
    text = entry.text
    if len(text) <= SNIPPET_CHARS:
        return text
    spans: list[tuple[int, int]] = []
    for term in terms:
        found = re.search(re.escape(term), text, re.IGNORECASE)
        if found is not None:
            spans.append(
                (
                    max(0, found.start() - _CONTEXT_CHARS),
                    min(len(text), found.end() + _CONTEXT_CHARS),
                )
            )
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    parts = [text[start:end] for start, end in merged[:_MAX_EXCERPTS]]
    return (
        f"[excerpts of {len(text):,} characters; read #{entry.seq} alone with from_seq/to_seq "
        f"for all of it] … {' … '.join(parts)} …"
    )


def _fit(
    header: str,
    blocks: Sequence[tuple[int, str]],
    request: RecallRequest,
    count: Callable[[str], int],
    *,
    fetch: int | None,
) -> str:
    """Header and as many whole blocks as fit the budget, then how to get the rest.

    ``fetch`` is the last seq of a range read (None for a search). When not even the first
    block fits, its head is shown rather than nothing.
    """
    total = len(blocks)
    # The longest footer this answer can get: its numbers at their widest.
    worst = _footer(request, (fetch or 1) - 1, total, total, fetch=fetch, cut_seq=blocks[-1][0])
    separator = count(_SEPARATOR)
    room = request.budget - count(header) - separator - count(worst)
    shown: list[str] = []
    cut_seq: int | None = None
    for seq, block in blocks:
        cost = count(block) + separator
        if cost <= room:
            shown.append(block)
            room -= cost
            continue
        if not shown:
            shown.append(_cut_to(block, room - separator, count))
            cut_seq = seq
        break
    parts = [header, *shown]
    if len(shown) < total or cut_seq is not None:
        last_seq = blocks[len(shown) - 1][0]
        parts.append(_footer(request, last_seq, len(shown), total, fetch=fetch, cut_seq=cut_seq))
    return _SEPARATOR.join(parts)


def _footer(
    request: RecallRequest,
    last_seq: int,
    shown: int,
    total: int,
    *,
    fetch: int | None,
    cut_seq: int | None,
) -> str:
    """Says the result was cut and how to get the rest."""
    unit = "messages" if fetch is not None else "matches"
    parts = [f"[Cut at the budget of {request.budget} tokens: {shown} of {total} {unit} shown"]
    if cut_seq is not None:
        parts.append(f", #{cut_seq} only in part")
    if fetch is not None and last_seq < fetch:
        parts.append(f". Next: from_seq={last_seq + 1}, to_seq={fetch}")
    elif fetch is None:
        parts.append(". More specific terms or from_seq/to_seq narrow the search")
    if request.budget < request.cap:
        parts.append(f"; a larger max_tokens (at most {request.cap}) shows more")
    return "".join(parts) + ".]"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut_to(block: str, room: int, count: Callable[[str], int]) -> str:
    """The head of ``block`` that fits ``room`` tokens with the cut marker."""
    keep = len(block)
    while keep > 0:
        candidate = block[:keep] + _CUT_MARKER
        tokens = count(candidate)
        if tokens <= room:
            return candidate
        keep = min(keep * room // tokens, keep - 1) if room > 0 else 0
    return _CUT_MARKER.strip()
