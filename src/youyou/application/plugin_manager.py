"""Plugin lifecycle and typed hook chains (see docs/architecture.md, 'Plugin hooks')."""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.hooks import (
    Abort,
    AfterToolUseHandler,
    AfterToolUsePayload,
    AskApproval,
    BeforeCompactHandler,
    BeforeCompactPayload,
    BeforeToolUseHandler,
    BeforeToolUsePatch,
    BeforeToolUsePayload,
    Continue,
    ContinueWith,
    HookKind,
    PluginDescriptor,
    SessionEndHandler,
    SessionEndPayload,
    SessionStartHandler,
    SessionStartPayload,
    SkipApproval,
    TurnEndHandler,
    TurnEndPayload,
    TurnStartHandler,
    TurnStartPatch,
    TurnStartPayload,
)
from youyou.ports.plugin import Plugin

logger = logging.getLogger(__name__)

Payload = TypeVar("Payload")
Handler = TypeVar("Handler")


@dataclass(slots=True)
class _Hooks:
    session_start: list[tuple[str, Any, SessionStartHandler]] = field(default_factory=list)
    session_end: list[tuple[str, Any, SessionEndHandler]] = field(default_factory=list)
    turn_start: list[tuple[str, Any, TurnStartHandler]] = field(default_factory=list)
    turn_end: list[tuple[str, Any, TurnEndHandler]] = field(default_factory=list)
    before_tool_use: list[tuple[str, Any, BeforeToolUseHandler]] = field(default_factory=list)
    after_tool_use: list[tuple[str, Any, AfterToolUseHandler]] = field(default_factory=list)
    before_compact: list[tuple[str, Any, BeforeCompactHandler]] = field(default_factory=list)


class _Registrar:
    """Restricted to one plugin; records which hooks it actually tapped."""

    def __init__(self, plugin_id: str, config: Any, hooks: _Hooks) -> None:
        self._id = plugin_id
        self._config = config
        self._hooks = hooks
        self.tapped: set[HookKind] = set()

    def _tap(self, kind: HookKind, chain: list[tuple[str, Any, Handler]], handler: Handler) -> None:
        self.tapped.add(kind)
        chain.append((self._id, self._config, handler))

    def tap_session_start(self, handler: SessionStartHandler) -> None:
        self._tap(HookKind.SESSION_START, self._hooks.session_start, handler)

    def tap_session_end(self, handler: SessionEndHandler) -> None:
        self._tap(HookKind.SESSION_END, self._hooks.session_end, handler)

    def tap_turn_start(self, handler: TurnStartHandler) -> None:
        self._tap(HookKind.TURN_START, self._hooks.turn_start, handler)

    def tap_turn_end(self, handler: TurnEndHandler) -> None:
        self._tap(HookKind.TURN_END, self._hooks.turn_end, handler)

    def tap_before_tool_use(self, handler: BeforeToolUseHandler) -> None:
        self._tap(HookKind.BEFORE_TOOL_USE, self._hooks.before_tool_use, handler)

    def tap_after_tool_use(self, handler: AfterToolUseHandler) -> None:
        self._tap(HookKind.AFTER_TOOL_USE, self._hooks.after_tool_use, handler)

    def tap_before_compact(self, handler: BeforeCompactHandler) -> None:
        self._tap(HookKind.BEFORE_COMPACT, self._hooks.before_compact, handler)


@dataclass(frozen=True, slots=True)
class TurnStartOutcome:
    dynamic_sections: tuple[str, ...]
    abort: Abort | None


@dataclass(frozen=True, slots=True)
class BeforeToolUseOutcome:
    arguments: dict[str, Any]
    abort: Abort | None
    approval: AskApproval | SkipApproval | None = None  # what the handlers said about asking


def _stronger(
    current: AskApproval | SkipApproval | None, new: AskApproval | SkipApproval
) -> AskApproval | SkipApproval:
    """Asking wins over skipping; among asks, the first reason is kept."""
    if isinstance(current, AskApproval):
        return current
    if isinstance(new, AskApproval) or current is None:
        return new
    return current


def _hook_failed(plugin_id: str, kind: HookKind, problem: str) -> AgentError:
    return AgentError(
        ErrorCode.PLUGIN_ABORTED,
        f"plugin {plugin_id!r} {kind.value} hook {problem}",
        source=ErrorSource.PLUGIN_MANAGER,
    )


async def _call(
    plugin_id: str,
    kind: HookKind,
    handler: Callable[[Payload], Awaitable[object]],
    payload: Payload,
    patch_type: type | None = None,
) -> Continue | ContinueWith[Any] | Abort | AskApproval | SkipApproval:
    """Run one handler; raising or returning anything but a valid result is PLUGIN_ABORTED."""
    try:
        result = await handler(payload)
    except Exception as exc:
        raise _hook_failed(plugin_id, kind, f"raised {type(exc).__name__}: {exc}") from exc
    if isinstance(result, Continue | Abort):
        return result
    if kind is HookKind.BEFORE_TOOL_USE and isinstance(result, AskApproval | SkipApproval):
        return result
    if (
        patch_type is not None
        and isinstance(result, ContinueWith)
        and isinstance(result.patch, patch_type)
    ):
        return result
    expected = "Continue or Abort"
    if patch_type is not None:
        expected = f"Continue, ContinueWith({patch_type.__name__}) or Abort"
    if kind is HookKind.BEFORE_TOOL_USE:
        expected = "Continue, ContinueWith(BeforeToolUsePatch), Abort, AskApproval or SkipApproval"
    raise _hook_failed(plugin_id, kind, f"returned {result!r}; expected {expected}")


class PluginManager:
    def __init__(self) -> None:
        self._plugins: list[Plugin] = []
        self._hooks = _Hooks()

    @property
    def descriptors(self) -> list[PluginDescriptor]:
        return [p.descriptor for p in self._plugins]

    async def initialize(self, plugins: Sequence[tuple[Plugin, Any]]) -> None:
        """Initialize in registration order, then apply; any failure is PLUGIN_INIT_FAILED.

        On failure the plugins already initialized are shut down again, in reverse.
        """
        try:
            for plugin, config in plugins:
                await self._initialize_one(plugin, config)
        except AgentError:
            await self.shutdown()
            self._plugins.clear()
            raise

    async def _initialize_one(self, plugin: Plugin, config: Any) -> None:
        descriptor = plugin.descriptor
        registrar = _Registrar(descriptor.id, config, self._hooks)
        try:
            await plugin.initialize(config)
            self._plugins.append(plugin)  # initialized: it must be shut down from now on
            plugin.apply(registrar)
        except Exception as exc:
            raise AgentError(
                ErrorCode.PLUGIN_INIT_FAILED,
                f"plugin {descriptor.id!r} failed to initialize: {exc}",
                source=ErrorSource.PLUGIN_MANAGER,
            ) from exc
        if registrar.tapped != set(descriptor.tapped_hooks):
            raise AgentError(
                ErrorCode.PLUGIN_INIT_FAILED,
                f"plugin {descriptor.id!r} declared hooks "
                f"{sorted(descriptor.tapped_hooks)} but tapped {sorted(registrar.tapped)}",
                source=ErrorSource.PLUGIN_MANAGER,
            )

    async def shutdown(self) -> None:
        """Shut plugins down in reverse order; a failure is logged, never blocks the rest."""
        for plugin in reversed(self._plugins):
            try:
                await plugin.shutdown()
            except Exception:
                logger.exception("plugin %s failed to shut down", plugin.descriptor.id)

    async def _observe(
        self,
        kind: HookKind,
        chain: Sequence[tuple[str, Any, Callable[[Payload], Awaitable[Continue | Abort]]]],
        build: Callable[[Any], Payload],
    ) -> Abort | None:
        for plugin_id, config, handler in chain:
            result = await _call(plugin_id, kind, handler, build(config))
            if isinstance(result, Abort):
                return result
        return None

    async def session_start(self, session_id: str, model_id: str) -> Abort | None:
        return await self._observe(
            HookKind.SESSION_START,
            self._hooks.session_start,
            lambda cfg: SessionStartPayload(session_id, model_id, cfg),
        )

    async def session_end(self, build: Callable[[Any], SessionEndPayload]) -> Abort | None:
        return await self._observe(HookKind.SESSION_END, self._hooks.session_end, build)

    async def turn_end(self, build: Callable[[Any], TurnEndPayload]) -> Abort | None:
        return await self._observe(HookKind.TURN_END, self._hooks.turn_end, build)

    async def after_tool_use(self, build: Callable[[Any], AfterToolUsePayload]) -> Abort | None:
        return await self._observe(HookKind.AFTER_TOOL_USE, self._hooks.after_tool_use, build)

    async def before_compact(self, build: Callable[[Any], BeforeCompactPayload]) -> Abort | None:
        return await self._observe(HookKind.BEFORE_COMPACT, self._hooks.before_compact, build)

    @property
    def has_before_tool_use(self) -> bool:
        return bool(self._hooks.before_tool_use)

    async def turn_start(
        self, build: Callable[[Any, tuple[str, ...]], TurnStartPayload]
    ) -> TurnStartOutcome:
        sections: tuple[str, ...] = ()
        for plugin_id, config, handler in self._hooks.turn_start:
            result = await _call(
                plugin_id, HookKind.TURN_START, handler, build(config, sections), TurnStartPatch
            )
            if isinstance(result, Abort):
                return TurnStartOutcome(sections, result)
            if isinstance(result, ContinueWith):
                sections = sections + tuple(result.patch.append_dynamic_sections)
        return TurnStartOutcome(sections, None)

    async def before_tool_use(
        self,
        build: Callable[[Any, dict[str, Any]], BeforeToolUsePayload],
        arguments: dict[str, Any],
    ) -> BeforeToolUseOutcome:
        """Handlers patch the arguments in registration order, only through ``ContinueWith``.

        Each handler gets its own deep copy, and a patch is copied as it is taken: editing a
        payload in place, or a patch after returning it, changes nothing the kernel holds.
        ``AskApproval`` / ``SkipApproval`` leave the arguments as they are; the first
        ``AskApproval`` wins over any ``SkipApproval``.
        """
        approval: AskApproval | SkipApproval | None = None
        for plugin_id, config, handler in self._hooks.before_tool_use:
            result = await _call(
                plugin_id,
                HookKind.BEFORE_TOOL_USE,
                handler,
                build(config, copy.deepcopy(arguments)),
                BeforeToolUsePatch,
            )
            if isinstance(result, Abort):
                return BeforeToolUseOutcome(arguments, result, approval)
            if isinstance(result, ContinueWith):
                arguments = copy.deepcopy(result.patch.arguments)
            elif isinstance(result, AskApproval | SkipApproval):
                approval = _stronger(approval, result)
        return BeforeToolUseOutcome(arguments, None, approval)
