"""Plain-text transcript lines of conversation messages, for prompts that quote a conversation
to a model (memory extraction, compaction summaries)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import assert_never

from youyou.domain.content import ContentBlock, ImageBlock, TextBlock
from youyou.domain.context import VisiblePayload
from youyou.domain.ledger import (
    AssistantMessage,
    MessageStatus,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)


def blocks_text(blocks: Sequence[ContentBlock]) -> str:
    """Text and file blocks in full, one line per block; an image is only ``[image]``."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, ImageBlock):
            parts.append("[image]")
        elif isinstance(block, TextBlock):
            parts.append(block.text)
        else:
            parts.append(f"[file {block.file_name or ''}]\n{block.text}")
    return "\n".join(parts)


def message_line(message: VisiblePayload, *, tool_result_chars: int) -> str:
    """``role: text``; a tool result is cut to its first ``tool_result_chars`` characters."""
    if isinstance(message, UserMessage):
        return f"user: {blocks_text(message.content)}"
    if isinstance(message, AssistantMessage):
        cut = " (interrupted)" if message.status is MessageStatus.INCOMPLETE else ""
        return f"assistant{cut}: {blocks_text(message.content)}"
    if isinstance(message, ToolCall):
        args = json.dumps(message.call.effective_arguments, ensure_ascii=False)
        return f"tool_call {message.call.tool_name}: {args}"
    if isinstance(message, ToolResult):
        output = message.result.output
        status = " (error)" if output.is_error else ""
        text = output.content[:tool_result_chars]
        return f"tool_result {message.result.tool_name}{status}: {text}"
    if isinstance(message, SystemMessage):
        return f"system: {message.content}"
    assert_never(message)
