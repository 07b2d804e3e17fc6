"""Transcript lines quoted to the memory and summary models."""

from __future__ import annotations

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import VisiblePayload
from youyou.domain.ledger import (
    AssistantMessage,
    MessageStatus,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.transcript import blocks_text, message_line


def line(message: VisiblePayload) -> str:
    return message_line(message, tool_result_chars=5)


def test_blocks_are_one_line_each_and_images_only_a_marker() -> None:
    blocks = (
        TextBlock(text="see"),
        ImageBlock(mime_type="image/png", data_base64="AA=="),
        FileContentBlock(file_name="a.md", text="body"),
    )
    assert blocks_text(blocks) == "see\n[image]\n[file a.md]\nbody"


def test_each_message_kind_has_its_role_and_markers() -> None:
    call = ToolCallRecord(
        call_id="c", tool_name="t", requested_arguments={}, effective_arguments={"k": "值"}
    )
    failed = ToolOutput(content="0123456789", is_error=True)
    assert line(UserMessage(content=(TextBlock(text="hi"),))) == "user: hi"
    cut = AssistantMessage(content=(TextBlock(text="ok"),), status=MessageStatus.INCOMPLETE)
    assert line(cut) == "assistant (interrupted): ok"
    assert line(ToolCall(call=call)) == 'tool_call t: {"k": "值"}'
    result = ToolResult(result=ToolResultRecord(call_id="c", tool_name="t", output=failed))
    assert line(result) == "tool_result t (error): 01234"
    assert line(SystemMessage(content="note")) == "system: note"
