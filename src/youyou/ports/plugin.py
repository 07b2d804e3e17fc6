"""Plugin port and its typed registrar (see docs/architecture.md, 'Plugin hooks')."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from youyou.domain.hooks import (
    AfterToolUseHandler,
    BeforeCompactHandler,
    BeforeToolUseHandler,
    PluginDescriptor,
    SessionEndHandler,
    SessionStartHandler,
    TurnEndHandler,
    TurnStartHandler,
)


class PluginRegistrar(Protocol):
    def tap_session_start(self, handler: SessionStartHandler) -> None: ...
    def tap_session_end(self, handler: SessionEndHandler) -> None: ...
    def tap_turn_start(self, handler: TurnStartHandler) -> None: ...
    def tap_turn_end(self, handler: TurnEndHandler) -> None: ...
    def tap_before_tool_use(self, handler: BeforeToolUseHandler) -> None: ...
    def tap_after_tool_use(self, handler: AfterToolUseHandler) -> None: ...
    def tap_before_compact(self, handler: BeforeCompactHandler) -> None: ...


@runtime_checkable
class Plugin(Protocol):
    @property
    def descriptor(self) -> PluginDescriptor: ...

    async def initialize(self, config: Any) -> None: ...

    def apply(self, registrar: PluginRegistrar) -> None: ...

    async def shutdown(self) -> None: ...
