"""Tool descriptors and the three-layer call protocol: requested → resolved → recorded.

See docs/architecture.md, 'Tool dispatch'.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from youyou.domain.ledger import ToolOutput
from youyou.domain.templates import TOOL_OUTPUT_LIMIT_BYTES, TOOL_OUTPUT_TRUNCATED_SUFFIX


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolDescriptor(_Frozen):
    name: str
    description: str
    parameters_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    mutating: bool = False


class ToolInput(_Frozen):
    session_id: str
    turn_id: str
    call_id: str
    arguments: dict[str, Any]


class RequestedToolCall(_Frozen):
    call_id: str
    tool_name: str
    requested_arguments: dict[str, Any]


class ResolvedToolCall(_Frozen):
    call_id: str
    tool_name: str
    requested_arguments: dict[str, Any]
    effective_arguments: dict[str, Any]
    mutating: bool


def truncate_tool_output(output: ToolOutput) -> ToolOutput:
    """Cap content at 1 MiB of UTF-8 including the fixed suffix; metadata is untouched."""
    encoded = output.content.encode("utf-8")
    if len(encoded) <= TOOL_OUTPUT_LIMIT_BYTES:
        return output
    budget = TOOL_OUTPUT_LIMIT_BYTES - len(TOOL_OUTPUT_TRUNCATED_SUFFIX.encode("utf-8"))
    # errors="ignore" drops a multibyte character cut in half at the boundary.
    head = encoded[:budget].decode("utf-8", errors="ignore")
    return output.model_copy(update={"content": head + TOOL_OUTPUT_TRUNCATED_SUFFIX})
