"""Printing stored sessions: the catalog as a table, a ledger as a transcript."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from youyou.cli.render import format_arguments, shorten, tool_result_line
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVAL_REQUESTED,
    ApprovalDecision,
    PendingApproval,
)
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock
from youyou.domain.context import CompactionRecord
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    ToolCall,
    ToolResult,
    UserMessage,
)
from youyou.domain.ledger_metadata import read_metadata
from youyou.domain.memory import Memory
from youyou.domain.session import (
    SearchMode,
    SessionListQuery,
    SessionSearchQuery,
    SessionSummary,
)
from youyou.ports.session_storage import SessionStorage

SHORT_ID = 8


async def recent_or_matching(
    storage: SessionStorage, query: str, limit: int = 20
) -> Sequence[SessionSummary]:
    """The newest sessions, or with ``query`` those whose id starts with or title contains it."""
    if query:
        return await storage.find_sessions(
            SessionSearchQuery(SearchMode.ID_PREFIX_OR_TITLE, query), limit
        )
    return (await storage.list_sessions(SessionListQuery(limit=limit))).items


async def find_by_prefix(storage: SessionStorage, prefix: str) -> Sequence[SessionSummary]:
    """Sessions whose id starts with ``prefix``; an exact id is the only match."""
    found = await storage.find_sessions(
        SessionSearchQuery(SearchMode.ID_PREFIX, prefix.strip()), 20
    )
    exact = [s for s in found if s.session_id == prefix.strip()]
    return exact or found


async def resolve_one(storage: SessionStorage, prefix: str, console: Console) -> str:
    """The one session id for ``prefix``; none or several is SESSION_NOT_FOUND (listed)."""
    if not prefix.strip():
        raise _not_found("give a session id or an id prefix")
    found = await find_by_prefix(storage, prefix)
    if len(found) == 1:
        return found[0].session_id
    if not found:
        raise unknown_prefix(prefix)
    console.print(sessions_table(found, full_ids=True))
    raise _not_found(f"{len(found)} sessions start with {prefix!r}; give more characters")


def _not_found(message: str) -> AgentError:
    return AgentError(ErrorCode.SESSION_NOT_FOUND, message, source=ErrorSource.SESSION_SERVICE)


def unknown_prefix(prefix: str) -> AgentError:
    return _not_found(f"no session id starts with {prefix!r}")


def _local_time(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def sessions_table(
    items: Sequence[SessionSummary], *, full_ids: bool = False, current: str | None = None
) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("id", no_wrap=True)
    table.add_column("updated", style="dim", no_wrap=True)
    table.add_column("msgs", justify="right")
    table.add_column("title", overflow="fold")
    for item in items:
        marker = "*" if item.session_id == current else ""
        shown = item.session_id if full_ids else item.session_id[:SHORT_ID]
        table.add_row(
            shown + marker,
            _local_time(item.updated_at),
            str(item.message_count),
            item.title,
        )
    return table


def memories_table(memories: Sequence[Memory]) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("id", no_wrap=True, style="dim")
    table.add_column("updated", style="dim", no_wrap=True)
    table.add_column("memory", overflow="fold")
    for memory in memories:
        table.add_row(
            memory.id[:SHORT_ID],
            _local_time(memory.updated_at),
            memory.content,
        )
    return table


def _blocks_text(blocks: Sequence[ContentBlock]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, ImageBlock):
            parts.append(f"[image {block.mime_type}]")
        elif isinstance(block, FileContentBlock):
            parts.append(f"[file {block.file_name or 'attachment'}: {len(block.text)} chars]")
        else:
            parts.append(block.text)
    return "\n\n".join(parts)


def _decision_line(decision: ApprovalDecision) -> str:
    """Who allowed or refused a call, and when: the audit trail of an approval."""
    verb = "approved" if decision.decision == "approve" else "denied"
    line = f"  {'✓' if verb == 'approved' else '✗'} {verb} by {decision.decided_by} at "
    line += decision.decided_at.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    if decision.remember == "session":
        line += " (for the rest of the session)"
    return line + (f": {decision.reason}" if decision.reason else "")


def print_transcript(console: Console, events: Sequence[LedgerEvent]) -> None:
    """Messages in ledger order, tool calls under their turn, compaction boundaries marked."""
    from rich.markdown import Markdown  # ~0.04 s: not for a ``youyou chat`` that shows none

    for event in events:
        payload = event.payload
        if isinstance(payload, UserMessage):
            console.print(Text.assemble(("you ", "bold cyan"), (f"#{event.seq}", "dim")))
            console.print(Text(_blocks_text(payload.content)))
        elif isinstance(payload, AssistantMessage):
            console.print(Text.assemble(("assistant ", "bold magenta"), (f"#{event.seq}", "dim")))
            console.print(Markdown(_blocks_text(payload.content)))
            if payload.status is MessageStatus.INCOMPLETE:
                console.print(Text("(incomplete: cancelled)", style="yellow"))
        elif isinstance(payload, ToolCall):
            console.print(
                Text(
                    f"  → {payload.call.tool_name} "
                    f"{format_arguments(payload.call.effective_arguments)}",
                    style="dim",
                )
            )
        elif isinstance(payload, ToolResult):
            console.print(Text(f"  ← {tool_result_line(payload.result.output)}", style="dim"))
        elif isinstance(payload, Metadata) and payload.key == META_APPROVAL_REQUESTED:
            request = read_metadata(event, PendingApproval)
            assert request is not None
            console.print(Text(f"  ⏸ asked for approval: {request.reason}", style="yellow"))
        elif isinstance(payload, Metadata) and payload.key == META_APPROVAL_DECIDED:
            decision = read_metadata(event, ApprovalDecision)
            assert decision is not None
            console.print(Text(_decision_line(decision), style="yellow"))
        elif isinstance(payload, Metadata) and payload.key == META_CONTEXT_COMPACTION:
            record = read_metadata(event, CompactionRecord)
            assert record is not None
            console.print(
                Text(
                    f"⟳ compacted through #{record.replaces_through_seq}: "
                    f"{shorten(record.summary_body or '', 120)}",
                    style="cyan",
                )
            )
