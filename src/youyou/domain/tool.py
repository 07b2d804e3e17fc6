"""Tool descriptors and the three-layer call protocol: requested → resolved → recorded.

See docs/architecture.md, 'Tool dispatch'.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from youyou.domain.approvals import ApprovalPolicy
from youyou.domain.content import valid_unicode, valid_unicode_value
from youyou.domain.ledger import ToolOutput
from youyou.domain.templates import TOOL_OUTPUT_LIMIT_BYTES, TOOL_OUTPUT_TRUNCATED_SUFFIX
from youyou.domain.tool_schema import compiled_schema


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolDescriptor(_Frozen):
    """``validate_arguments=False`` hands calls to the handler unchecked: only for a tool whose
    own answer to bad arguments serves the model better than the schema's messages.

    ``approval``: ``never`` runs every call at once, ``always`` asks a person first,
    ``mutating`` asks unless the tool is read-only (``mutating=False``). ``server_id`` names
    the MCP server a tool comes from (shown with an approval request).
    """

    name: str
    description: str
    parameters_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    mutating: bool = False
    validate_arguments: bool = True
    approval: ApprovalPolicy = "never"
    server_id: str | None = None

    @model_validator(mode="after")
    def _schema_is_valid(self) -> ToolDescriptor:
        """An invalid schema fails where the tool is defined (INVALID_CONFIG), not per call."""
        compiled_schema(self.name, self.parameters_schema)
        return self

    @classmethod
    def builtin(
        cls,
        *,
        name: str,
        description: str,
        parameters_schema: dict[str, Any],
        validate_arguments: bool = True,
    ) -> ToolDescriptor:
        """A read-only tool the kernel defines itself, built without checking its schema:
        the check loads jsonschema (~0.1 s, a quarter of ``youyou chat``'s start-up), which a
        session that calls no tool never needs. tests/test_domain_tool.py checks every one."""
        return cls.model_construct(
            name=name,
            description=description,
            parameters_schema=parameters_schema,
            mutating=False,
            validate_arguments=validate_arguments,
            approval="never",
            server_id=None,
        )


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


def valid_tool_output(output: ToolOutput) -> ToolOutput:
    """A tool's text made encodable (``valid_unicode``) before it is streamed or stored."""
    content = valid_unicode(output.content)
    metadata = valid_unicode_value(output.metadata)
    if content is output.content and metadata == output.metadata:
        return output
    return output.model_copy(update={"content": content, "metadata": metadata})


def truncate_tool_output(output: ToolOutput) -> ToolOutput:
    """Cap content at 1 MiB of UTF-8 including the fixed suffix; metadata is untouched."""
    encoded = output.content.encode("utf-8")
    if len(encoded) <= TOOL_OUTPUT_LIMIT_BYTES:
        return output
    budget = TOOL_OUTPUT_LIMIT_BYTES - len(TOOL_OUTPUT_TRUNCATED_SUFFIX.encode("utf-8"))
    # errors="ignore" drops a multibyte character cut in half at the boundary.
    head = encoded[:budget].decode("utf-8", errors="ignore")
    return output.model_copy(update={"content": head + TOOL_OUTPUT_TRUNCATED_SUFFIX})
