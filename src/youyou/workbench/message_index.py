"""What the workbench records of each turn beside the ledger, and searching message text.

After a turn, the text of its new user and assistant messages is copied into the search
index and the durations its ``tool_call_end`` frames reported are stored (the ledger has the
calls and results, not the time between). The ledger stays the truth: indexing reads it from
the last indexed seq, so a turn whose recording failed is caught up by the next one, and at
start the sessions from before the index existed are indexed in the background.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.content import TextBlock
from youyou.domain.errors import AgentError
from youyou.domain.ledger import AssistantMessage, LedgerEvent, UserMessage
from youyou.workbench.store import ChatSessionRecord, WorkbenchStore
from youyou.workbench.store.message_texts import MessageText

logger = logging.getLogger(__name__)

MAX_INDEXED_CHARS = 200_000  # of one message; a pasted log beyond it is not searched
SNIPPET_BEFORE = 60
SNIPPET_CHARS = 200
BACKLOG_BATCH = 50


def message_texts(events: Sequence[LedgerEvent]) -> list[MessageText]:
    """The text blocks of each user and assistant message (attached files and images are
    not searched)."""
    texts = []
    for event in events:
        payload = event.payload
        if not isinstance(payload, UserMessage | AssistantMessage):
            continue
        body = "\n".join(b.text for b in payload.content if isinstance(b, TextBlock)).strip()
        if body:
            role = "user" if isinstance(payload, UserMessage) else "assistant"
            texts.append(MessageText(event.seq, role, body[:MAX_INDEXED_CHARS], event.timestamp))
    return texts


def turn_texts(turn_seq: int, events: Sequence[LedgerEvent]) -> list[MessageText] | None:
    """The text of a turn's messages, from ``turn_seq`` (its user message), out of the
    session's events in memory; None when the turn never started or a compaction during it
    released its first events from memory (the ledger has them)."""
    if not turn_seq or not events or events[0].seq > turn_seq:
        return None
    # the turn is at the end of a long session: found by bisection, not a scan of it all
    return message_texts(events[bisect_left(events, turn_seq, key=_seq) :])


def _seq(event: LedgerEvent) -> int:
    return event.seq


@dataclass(frozen=True, slots=True)
class SnippetPart:
    text: str
    match: bool


def snippet(body: str, terms: Sequence[str]) -> list[SnippetPart]:
    """About ``SNIPPET_CHARS`` of ``body`` (whitespace collapsed) around its first match, the
    occurrences of ``terms`` (folded words) marked; ``…`` where text was left out."""
    flat = " ".join(body.split())
    # one folded character per character, so positions in ``folded`` are positions in ``flat``
    folded = "".join(c.lower() if len(c.lower()) == 1 else c for c in flat)
    first = min((i for i in (folded.find(t) for t in terms) if i >= 0), default=0)
    start = max(0, first - SNIPPET_BEFORE)
    end = min(len(flat), start + SNIPPET_CHARS)
    marked = [False] * (end - start)
    for term in terms:
        at = folded.find(term, start)
        while 0 <= at < end:
            for i in range(at, min(at + len(term), end)):
                marked[i - start] = True
            at = folded.find(term, at + 1)
    parts: list[SnippetPart] = []
    for offset, is_match in enumerate(marked):
        char = flat[start + offset]
        if parts and parts[-1].match == is_match:
            parts[-1] = SnippetPart(parts[-1].text + char, is_match)
        else:
            parts.append(SnippetPart(char, is_match))
    if start > 0:
        parts.insert(0, SnippetPart("…", False))
    if end < len(flat):
        parts.append(SnippetPart("…", False))
    return parts


class TurnRecorder:
    """Writes the index and the durations; a failure is logged and never reaches a turn."""

    def __init__(self, store: WorkbenchStore, storage: SqlSessionStorage) -> None:
        self._store = store
        self._storage = storage

    async def record(
        self,
        chat: ChatSessionRecord,
        turn_seq: int,
        durations: Mapping[str, int],
        events: Sequence[LedgerEvent],
    ) -> None:
        """``events``: the session's ledger events in memory, the turn's among them (from
        ``turn_seq``, its user message; 0: the turn ended before it started, no durations to
        keep). They are indexed without reading the ledger again when the index already
        reaches the turn; otherwise the ledger fills what is missing."""
        try:
            if turn_seq:
                await self._store.save_tool_durations(chat.id, turn_seq, durations)
            texts = turn_texts(turn_seq, events)
            if texts is not None and await self._store.index_messages_after(
                chat.id, turn_seq - 1, texts
            ):
                return
            await self.catch_up(chat)
        except AgentError:
            logger.warning("recording the turn of session %s failed", chat.id, exc_info=True)

    async def caught_up(self, chat: ChatSessionRecord) -> None:
        """``catch_up`` for a turn whose end was stored without its message text indexed
        (``TurnEnd``); a failure is logged."""
        try:
            await self.catch_up(chat)
        except AgentError:
            logger.warning("indexing the turn of session %s failed", chat.id, exc_info=True)

    async def catch_up(self, chat: ChatSessionRecord) -> int:
        """Indexes the session's messages after the last indexed one; how many."""
        after = await self._store.indexed_through(chat.id)
        events = await self._storage.load_events(chat.ledger_session_id, after_seq=after)
        texts = message_texts(events)
        await self._store.index_messages(chat.id, texts)
        return len(texts)

    async def index_backlog(self) -> None:
        """Sessions with messages but nothing indexed, newest first, until none is left that
        has any text (an image-only session stays unindexed and is not read twice)."""
        seen: set[str] = set()
        while True:
            try:
                unindexed = await self._store.unindexed_chat_sessions(len(seen) + BACKLOG_BATCH)
            except AgentError:
                logger.warning("finding sessions to index failed", exc_info=True)
                return
            batch = [chat for chat in unindexed if chat.id not in seen]
            if not batch:
                return
            for chat in batch:
                seen.add(chat.id)
                try:
                    await self.catch_up(chat)
                except AgentError:
                    logger.warning("indexing session %s failed", chat.id, exc_info=True)
