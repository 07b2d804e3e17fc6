"""An MCP ``CallToolResult`` as the kernel's ``ToolOutput``.

The model reads text only: text blocks and text resources are passed through, other blocks
become one bracketed line saying what they were. Images are also kept in
``metadata["images"]`` (MIME type + base64) for clients that can show them, and structured
content in ``metadata["structured_content"]``; neither is sent to the model.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from youyou.domain.ledger import ToolOutput
from youyou.domain.templates import TOOL_OUTPUT_LIMIT_BYTES


def _size(base64_data: str) -> int:
    """Decoded bytes of valid base64, without decoding it."""
    return len(base64_data.rstrip("=")) * 3 // 4


def _block_text(block: types.ContentBlock, images: list[dict[str, str]]) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        kept = len(block.data) <= TOOL_OUTPUT_LIMIT_BYTES
        if kept:
            images.append({"mime_type": block.mime_type, "data": block.data})
        note = "" if kept else ", too large to keep"
        return f"[image: {block.mime_type}, {_size(block.data)} bytes{note}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)} bytes]"
    if isinstance(block, types.ResourceLink):
        described = f": {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{described}]"
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return f"[resource: {resource.uri}]\n{resource.text}"
    mime = resource.mime_type or "application/octet-stream"
    return f"[resource: {resource.uri}, {mime}, {_size(resource.blob)} bytes]"


def tool_output(result: types.CallToolResult, server_id: str, tool: str) -> ToolOutput:
    images: list[dict[str, str]] = []
    parts = [_block_text(block, images) for block in result.content]
    metadata: dict[str, Any] = {"mcp_server": server_id, "mcp_tool": tool}
    if images:
        metadata["images"] = images
    if result.structured_content is not None:
        metadata["structured_content"] = result.structured_content
        if not parts:  # a server may answer with structured content alone
            parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return ToolOutput(content="\n".join(parts), is_error=result.is_error, metadata=metadata)
