"""A configurable plugin for kernel tests: taps chosen hooks, replays scripted results.

Every payload a handler receives is recorded (``payloads``), and every lifecycle step and hook
call is appended to a journal that several plugins may share, so tests can assert the order
across plugins.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from youyou.api.session import SessionHandle, UserInput
from youyou.domain.events import AgentEvent
from youyou.domain.hooks import (
    Abort,
    AskApproval,
    BeforeToolUsePatch,
    Continue,
    ContinueWith,
    HookKind,
    PluginDescriptor,
    SkipApproval,
    TurnStartPatch,
)
from youyou.domain.turn import TurnOutcome
from youyou.ports.plugin import PluginRegistrar
from youyou.ports.turn import TurnOptions

HookResult = Continue | ContinueWith[Any] | Abort | AskApproval | SkipApproval
Reply = HookResult | Exception | Callable[[Any], "HookResult | Awaitable[HookResult]"]
"""What a handler does: return a result, raise an exception, or compute from the payload."""

_TAP_METHODS: dict[HookKind, str] = {
    HookKind.SESSION_START: "tap_session_start",
    HookKind.SESSION_END: "tap_session_end",
    HookKind.TURN_START: "tap_turn_start",
    HookKind.TURN_END: "tap_turn_end",
    HookKind.BEFORE_TOOL_USE: "tap_before_tool_use",
    HookKind.AFTER_TOOL_USE: "tap_after_tool_use",
    HookKind.BEFORE_COMPACT: "tap_before_compact",
}


async def run_turn(
    session: SessionHandle, user_input: UserInput, options: TurnOptions | None = None
) -> tuple[list[AgentEvent], TurnOutcome]:
    """Send one message and wait for the turn: every event and the outcome."""
    turn = await session.send_message(user_input, options=options)
    events = await turn.collect()
    return events, await turn.join()


def sections(*texts: str) -> ContinueWith[TurnStartPatch]:
    return ContinueWith(TurnStartPatch(append_dynamic_sections=texts))


def patch_arguments(arguments: dict[str, Any]) -> ContinueWith[BeforeToolUsePatch]:
    return ContinueWith(BeforeToolUsePatch(arguments=arguments))


@dataclass
class ScriptedPlugin:
    """Taps ``replies``' hooks (or ``tapped`` if given); ``declared`` defaults to the tapped set."""

    plugin_id: str
    replies: Mapping[HookKind, Reply] = field(default_factory=dict)
    tapped: Iterable[HookKind] | None = None
    declared: Iterable[HookKind] | None = None
    journal: list[str] = field(default_factory=list)
    init_error: Exception | None = None
    apply_error: Exception | None = None
    shutdown_error: Exception | None = None
    description: str = "a test plugin"
    payloads: list[tuple[HookKind, Any]] = field(default_factory=list)
    configs: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._tapped = frozenset(self.tapped if self.tapped is not None else self.replies)
        self._declared = frozenset(self.declared if self.declared is not None else self._tapped)

    @property
    def descriptor(self) -> PluginDescriptor:
        return PluginDescriptor(
            id=self.plugin_id,
            display_name=f"Plugin {self.plugin_id}",
            description=self.description,
            tapped_hooks=self._declared,
        )

    def received(self, kind: HookKind) -> list[Any]:
        return [payload for k, payload in self.payloads if k is kind]

    async def initialize(self, config: Any) -> None:
        self.journal.append(f"init:{self.plugin_id}")
        self.configs.append(config)
        if self.init_error is not None:
            raise self.init_error

    def apply(self, registrar: PluginRegistrar) -> None:
        self.journal.append(f"apply:{self.plugin_id}")
        if self.apply_error is not None:
            raise self.apply_error
        for kind in sorted(self._tapped):
            getattr(registrar, _TAP_METHODS[kind])(self._handler(kind))

    async def shutdown(self) -> None:
        self.journal.append(f"shutdown:{self.plugin_id}")
        if self.shutdown_error is not None:
            raise self.shutdown_error

    def _handler(self, kind: HookKind) -> Callable[[Any], Awaitable[Any]]:
        async def handle(payload: Any) -> Any:
            self.payloads.append((kind, payload))
            self.journal.append(f"{self.plugin_id}:{kind.value}")
            reply = self.replies.get(kind, Continue())
            if isinstance(reply, Exception):
                raise reply
            if callable(reply):
                result = reply(payload)
                return await result if inspect.isawaitable(result) else result
            return reply

        return handle
