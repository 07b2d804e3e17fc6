"""Tool handler port (see docs/architecture.md, 'Tool dispatch')."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from youyou.domain.cancel import CancellationToken
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolDescriptor, ToolInput


@runtime_checkable
class ToolHandler(Protocol):
    """Raise ``AgentError`` (or any exception) to report failure; it becomes an error output."""

    @property
    def descriptor(self) -> ToolDescriptor: ...

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput: ...
