"""The one turn orchestrator (see docs/architecture.md, 'A turn').

Order of a turn: validate → TURN_BUSY → skills → TurnStart → memories → prompt →
compaction / hard limit → UserMessage → skill audit → request/stream/tool loop →
AssistantMessage → TurnEnd → checkpoint → outcome.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from youyou.application.approval_gate import ApprovalGate
from youyou.application.compaction import (
    Compactor,
    RequestEstimate,
    exceeds_threshold,
    request_estimate,
    should_compact,
)
from youyou.application.kernel import Kernel
from youyou.application.memory_manager import render_memory_section
from youyou.application.model_stream import ModelResponse, stream_response
from youyou.application.prompt_builder import PromptInputs, RenderedPrompt
from youyou.application.recall_tool import with_recall
from youyou.application.request_builder import RequestBuildOptions
from youyou.application.session_runtime import SessionRuntime, TurnState
from youyou.application.session_service import SessionService
from youyou.application.skill_resolver import SkillResolver
from youyou.application.tool_dispatcher import BatchContext, ToolDispatcher
from youyou.application.tracing import end_turn, turn_span
from youyou.application.turn_stream import TurnChannel
from youyou.domain.approvals import open_approvals, turn_origin
from youyou.domain.content import ContentBlock, TextBlock, validate_user_input
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import (
    ContextUsage,
    ErrorEvent,
    TurnCancelled,
    TurnComplete,
    TurnStarted,
)
from youyou.domain.hooks import TurnEndPayload, TurnStartPayload
from youyou.domain.ledger import (
    META_SKILL_INVOCATIONS,
    AssistantMessage,
    MessageStatus,
    SystemMessage,
    ToolCall,
    ToolOutput,
    UserMessage,
)
from youyou.domain.ledger_metadata import SkillInvocation, SkillInvocations, metadata_event
from youyou.domain.model import FinishReason, ProviderError, ProviderErrorKind, Usage
from youyou.domain.synthetic_results import SyntheticReason, synthetic_output
from youyou.domain.templates import TURN_ABORTED_MESSAGE
from youyou.domain.turn import (
    ResolvedSkillInjection,
    TurnAugmentation,
    TurnOutcome,
)
from youyou.ports.tool import ToolHandler
from youyou.ports.turn import TurnOptions

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Turn:
    runtime: SessionRuntime
    channel: TurnChannel
    blocks: tuple[ContentBlock, ...]
    injections: tuple[ResolvedSkillInjection, ...]
    options: TurnOptions
    tools: Mapping[str, ToolHandler]
    continuation: bool = False  # goes on with a turn whose calls waited for approval
    usage: Usage = field(default_factory=Usage)
    tool_calls: int = 0
    final_output: tuple[ContentBlock, ...] = ()


def _error(
    code: ErrorCode,
    message: str,
    *,
    retryable: bool = False,
    source: ErrorSource = ErrorSource.TURN_ENGINE,
) -> AgentError:
    return AgentError(code, message, retryable=retryable, source=source)


class TurnEngine:
    def __init__(self, kernel: Kernel, sessions: SessionService) -> None:
        self._kernel = kernel
        self._sessions = sessions
        self._resolver = SkillResolver(kernel.skills)
        self._dispatcher = ToolDispatcher(kernel.plugins, kernel.tracer)
        self._compactor = Compactor(kernel, sessions)
        self._tasks: set[asyncio.Task[None]] = set()

    def start(
        self,
        runtime: SessionRuntime,
        blocks: Sequence[ContentBlock],
        options: TurnOptions,
        on_end: Callable[[], Awaitable[None]] | None = None,
        *,
        continuation: bool = False,
    ) -> TurnChannel:
        """Synchronous refusals (nothing written): closed, INPUT_VALIDATION, TURN_BUSY (also
        while calls of a stopped turn wait for approval), skills. ``on_end`` runs when the turn
        has ended, before its outcome is told. ``continuation``: ``blocks`` are the stopped
        turn's user message, and the turn answers its decided calls instead of writing one."""
        if runtime.turn_state in (TurnState.CLOSING, TurnState.CLOSED):
            raise _error(ErrorCode.SESSION_NOT_FOUND, f"session {runtime.session_id} is closed")
        validate_user_input(blocks)
        if runtime.is_running:
            raise _error(ErrorCode.TURN_BUSY, f"session {runtime.session_id} is running a turn")
        if not continuation and open_approvals(runtime.events):
            raise _error(
                ErrorCode.TURN_BUSY,
                f"session {runtime.session_id} has tool calls waiting for approval: "
                "decide them, then continue the turn",
            )
        injections = self._resolver.resolve(blocks, options.skills)
        tools = dict(self._kernel.tools)
        for tool in options.extra_tools:
            tools[tool.descriptor.name] = tool
        channel = TurnChannel(runtime.session_id, uuid.uuid4().hex, self._kernel.clock)
        unsubscribe = runtime.cancel.on_cancel(channel.cancel)
        runtime.turn_state = TurnState.RUNNING
        runtime.running_turn = channel
        turn = _Turn(runtime, channel, tuple(blocks), injections, options, tools, continuation)
        task = asyncio.get_running_loop().create_task(self._run(turn, on_end))
        self._tasks.add(task)  # the loop keeps only weak references to tasks

        def done(finished: asyncio.Task[None]) -> None:
            self._tasks.discard(finished)
            unsubscribe()

        task.add_done_callback(done)
        return channel

    async def _run(self, turn: _Turn, on_end: Callable[[], Awaitable[None]] | None) -> None:
        """The turn inside its span: the model, tool and compaction spans are its children."""
        runtime, channel = turn.runtime, turn.channel
        with turn_span(
            self._kernel.tracer, runtime.session_id, channel.turn_id, runtime.model.model_id
        ) as span:
            outcome = await self._run_to_outcome(turn, on_end)
            end_turn(span, outcome, turn.usage, turn.tool_calls)

    async def _run_to_outcome(
        self, turn: _Turn, on_end: Callable[[], Awaitable[None]] | None
    ) -> TurnOutcome:
        channel = turn.channel
        outcome: TurnOutcome | None = None
        try:
            outcome = await self._execute(turn)
        except AgentError as err:
            channel.emit(
                ErrorEvent(code=err.code.value, message=err.message, retryable=err.retryable)
            )
            outcome = TurnOutcome.failed(err)
        except Exception as exc:
            logger.exception("turn %s panicked", channel.turn_id)
            panic = _error(ErrorCode.INTERNAL_PANIC, f"{type(exc).__name__}: {exc}")
            channel.emit(ErrorEvent(code=panic.code.value, message=panic.message))
            outcome = TurnOutcome.panicked(panic)
        finally:
            runtime = turn.runtime
            if runtime.turn_state is TurnState.RUNNING:
                runtime.turn_state = TurnState.IDLE
            runtime.running_turn = None
            if outcome is None:  # the task itself was cancelled (e.g. the loop is closing)
                channel.emit(TurnCancelled())
                outcome = TurnOutcome.cancelled()
            if on_end is not None:
                try:
                    await on_end()
                except Exception:
                    logger.warning("ending turn %s", channel.turn_id, exc_info=True)
            channel.finish(outcome)
        return outcome

    # -- the turn ------------------------------------------------------------------------

    async def _execute(self, turn: _Turn) -> TurnOutcome:
        runtime, channel = turn.runtime, turn.channel
        start = await self._kernel.plugins.turn_start(
            lambda cfg, sections: TurnStartPayload(
                runtime.session_id,
                channel.turn_id,
                turn.blocks,
                tuple(i.skill_name for i in turn.injections),
                sections,
                cfg,
            )
        )
        if start.abort is not None:
            raise _error(
                ErrorCode.PLUGIN_ABORTED,
                f"turn aborted by a plugin: {start.abort.reason}",
                source=ErrorSource.PLUGIN_MANAGER,
            )
        if turn.continuation:
            return await self._continue(turn, start.dynamic_sections)
        # A failed turn may have left tool calls without results; no provider accepts that.
        await self._sessions.answer_interrupted_calls(runtime)
        prompt = await self._render_prompt(turn, start.dynamic_sections)
        estimate = await self._admit(turn, prompt)
        if channel.cancel_token.is_cancelled:
            channel.emit(TurnCancelled())
            return TurnOutcome.cancelled()
        user = await self._sessions.record(runtime, UserMessage(content=turn.blocks))
        runtime.turn_index += 1
        if turn.injections:
            await self._sessions.record(
                runtime,
                metadata_event(
                    META_SKILL_INVOCATIONS,
                    SkillInvocations(
                        tuple(SkillInvocation(skill_name=i.skill_name) for i in turn.injections)
                    ),
                ),
            )
        channel.emit(TurnStarted(user_message_seq=user.seq))
        augmentation = TurnAugmentation(user.seq, turn.injections)
        cancelled = await self._loop(turn, prompt, augmentation, estimate)
        return await self._finish(turn, prompt, cancelled=cancelled)

    async def _continue(self, turn: _Turn, sections: tuple[str, ...]) -> TurnOutcome:
        """Answer the calls a stopped turn left to a person's decision, then go on as the turn
        would have: the model reads the results and answers."""
        runtime, channel = turn.runtime, turn.channel
        prompt = await self._render_prompt(turn, sections)
        estimate = request_estimate(runtime, prompt.system_prompt, turn.injections)
        origin = turn_origin(runtime.events)
        assert origin is not None  # calls waiting for approval belong to a turn
        turn.tool_calls = sum(
            1 for e in runtime.events if e.seq > origin.seq and type(e.payload) is ToolCall
        )
        channel.emit(TurnStarted(user_message_seq=origin.seq))
        await self._dispatcher.finish_open(self._batch(turn), open_approvals(runtime.events))
        cancelled = channel.cancel_token.is_cancelled or await self._loop(
            turn, prompt, TurnAugmentation(origin.seq, turn.injections), estimate
        )
        return await self._finish(turn, prompt, cancelled=cancelled)

    def _batch(self, turn: _Turn) -> BatchContext:
        runtime = turn.runtime
        return BatchContext(
            session_id=runtime.session_id,
            turn_id=turn.channel.turn_id,
            cancel=turn.channel.cancel_token,
            timeout_s=runtime.resolved.runtime_policy.tool_timeout_ms / 1000,
            tools=turn.tools,
            record=lambda payload: self._sessions.record(runtime, payload),
            emit=turn.channel.emit,
            gate=ApprovalGate(
                runtime.approval_waits,
                self._kernel.config.approval_timeout_s,
                self._kernel.clock,
                runtime.approved_tools,
            ),
            stopping=lambda: self._sessions.refusal(runtime) is not None,
        )

    async def _render_prompt(self, turn: _Turn, sections: tuple[str, ...]) -> RenderedPrompt:
        runtime = turn.runtime
        memory_section = None
        memory = self._kernel.memory
        if memory.enabled:
            memories = await memory.prepare_turn_memories(
                turn.blocks,
                runtime.memory_state,
                runtime.resolved.pinned.memory_namespace,
                runtime.resolved.runtime_policy.memory_max_items,
            )
            memory_section = render_memory_section(memories)
        prompt = self._kernel.prompt_builder.render(
            runtime.resolved,
            PromptInputs(
                memory_section=memory_section,
                user_prompt=turn.options.user_prompt,
                skill_catalog=turn.options.skill_catalog,
                dynamic_sections=sections,
            ),
        )
        runtime.system_prompt = prompt.system_prompt
        return prompt

    async def _admit(self, turn: _Turn, prompt: RenderedPrompt) -> RequestEstimate:
        """At most one automatic compaction, then the hard limit — before the user message."""
        runtime = turn.runtime
        estimate = request_estimate(runtime, prompt.system_prompt, turn.injections, turn.blocks)
        cancel = turn.channel.cancel_token
        if should_compact(runtime, estimate):
            await self._compactor.compact(
                runtime, before_seq=None, estimate=estimate, cancel=cancel, emit=turn.channel.emit
            )
            if cancel.is_cancelled:  # nothing was written; the turn ends before its message
                return estimate
            estimate = replace(estimate, history=runtime.context.history_tokens)
        limit = runtime.model.context_window * runtime.compaction.hard_limit
        if estimate.total >= limit:
            raise _error(
                ErrorCode.CHAT_CONTEXT_LIMIT_REACHED,
                f"the request would use {estimate.total} of {runtime.model.context_window} tokens "
                f"(limit {runtime.compaction.hard_limit:.0%}); compact or shorten the message",
                source=ErrorSource.CONTEXT_MANAGER,
            )
        return replace(estimate, history=estimate.history + estimate.candidate, candidate=0)

    async def _loop(
        self,
        turn: _Turn,
        prompt: RenderedPrompt,
        augmentation: TurnAugmentation,
        estimate: RequestEstimate,
    ) -> bool:
        """Request → stream → tools until a final answer; returns True if cancelled."""
        runtime, channel = turn.runtime, turn.channel
        policy = runtime.resolved.runtime_policy
        allow_tools = turn.options.offer_tools
        tools_disabled_by: ErrorCode | None = None if allow_tools else ErrorCode.MODEL_NOT_SUPPORTED
        retried_context = False
        while True:
            # Per request: a compaction inside this turn makes the compacted history recallable.
            turn.tools = with_recall(turn.tools, runtime, self._kernel.session_storage)
            request = runtime.requests.build(
                model=runtime.model,
                system_prompt=prompt.system_prompt,
                context=runtime.context.build_request_context(augmentation),
                tools=[t.descriptor for t in turn.tools.values()],
                options=RequestBuildOptions(allow_tools=allow_tools),
            )
            response = await stream_response(
                self._kernel.models,
                request,
                channel,
                wait_notice_s=self._kernel.config.model_wait_notice_ms / 1000,
                tracer=self._kernel.tracer,
            )
            turn.usage = turn.usage + response.usage
            if response.cancelled:
                await self._save_partial(turn, response)
                return True
            if response.error is not None:
                error = response.error
                if response.full_text:
                    # The client has shown this attempt: it is stored as shown, never retried.
                    await self._save_partial(turn, response)
                elif error.kind is ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED:
                    if retried_context or not await self._compact_in_turn(
                        turn, augmentation, estimate, force=True
                    ):
                        raise _error(
                            ErrorCode.COMPACT_ERROR,
                            "the context is still too long for the model after compaction",
                            source=ErrorSource.CONTEXT_MANAGER,
                        )
                    retried_context = True
                    continue
                raise _provider_error(error)
            if not response.tool_calls:
                turn.final_output = _text_blocks(response.full_text)
                # the turn's last write: it gives the session's lease back with it
                answer = AssistantMessage(content=turn.final_output)
                await self._sessions.record(runtime, answer, last=True)
                return False
            if response.finish_reason is not FinishReason.TOOL_CALLS:
                raise _error(
                    ErrorCode.PROVIDER_ERROR,
                    "the provider sent tool calls without finish_reason=tool_calls",
                    source=ErrorSource.PROVIDER,
                )
            if not allow_tools:
                code = tools_disabled_by or ErrorCode.MAX_TOOL_CALLS_EXCEEDED
                raise _error(code, "the model kept calling tools after tools were disabled")
            if response.full_text:
                await self._sessions.record(
                    runtime, AssistantMessage(content=_text_blocks(response.full_text))
                )
            batch = self._batch(turn)
            limit = policy.max_tool_calls_per_turn
            if turn.tool_calls + len(response.tool_calls) > limit:
                # The calls stay in the ledger, each answered with why it did not run.
                await self._dispatcher.refuse_batch(
                    batch, response.tool_calls, _over_limit_output(limit)
                )
                await self._sessions.record(runtime, SystemMessage(content=TURN_ABORTED_MESSAGE))
                allow_tools, tools_disabled_by = False, ErrorCode.MAX_TOOL_CALLS_EXCEEDED
                continue
            result = await self._dispatcher.run_batch(batch, response.tool_calls)
            turn.tool_calls += len(response.tool_calls)
            if channel.cancel_token.is_cancelled:
                return True
            if result.stop_loop:
                allow_tools, tools_disabled_by = False, ErrorCode.PLUGIN_ABORTED
            await self._compact_in_turn(turn, augmentation, estimate, force=False)

    async def _compact_in_turn(
        self, turn: _Turn, augmentation: TurnAugmentation, estimate: RequestEstimate, *, force: bool
    ) -> bool:
        """Compact only before the anchor; if the pinned turn alone overflows → COMPACT_ERROR."""
        runtime = turn.runtime
        current = replace(estimate, history=runtime.context.history_tokens)
        if not force and not exceeds_threshold(runtime, current):
            return False
        record = await self._compactor.compact(
            runtime,
            before_seq=augmentation.origin_user_seq,
            estimate=current,
            cancel=turn.channel.cancel_token,
            emit=turn.channel.emit,
            force=force,
        )
        if turn.channel.cancel_token.is_cancelled:
            return True  # nothing was written; the next request ends the turn as cancelled
        after = replace(estimate, history=runtime.context.history_tokens).total
        window = runtime.model.context_window
        if after >= window:
            raise _error(
                ErrorCode.COMPACT_ERROR,
                f"the current turn alone needs {after} of {window} tokens",
                source=ErrorSource.CONTEXT_MANAGER,
            )
        return record is not None

    async def _save_partial(self, turn: _Turn, response: ModelResponse) -> None:
        """The answer shown so far, as the turn's last write (it ends cancelled or failed)."""
        if response.full_text:
            turn.final_output = _text_blocks(response.full_text)
            await self._sessions.record(
                turn.runtime,
                AssistantMessage(content=turn.final_output, status=MessageStatus.INCOMPLETE),
                last=True,
            )

    async def _finish(self, turn: _Turn, prompt: RenderedPrompt, *, cancelled: bool) -> TurnOutcome:
        runtime, channel = turn.runtime, turn.channel
        abort = await self._kernel.plugins.turn_end(
            lambda cfg: TurnEndPayload(
                runtime.session_id,
                channel.turn_id,
                turn.final_output,
                turn.tool_calls,
                cancelled,
                cfg,
            )
        )
        if abort is not None:
            raise _error(
                ErrorCode.PLUGIN_ABORTED,
                f"turn end aborted by a plugin: {abort.reason}",
                source=ErrorSource.PLUGIN_MANAGER,
            )
        if cancelled:
            channel.emit(TurnCancelled())
            return TurnOutcome.cancelled()
        self._schedule_checkpoint(runtime)
        channel.emit(TurnComplete(usage=turn.usage, context=context_usage(runtime, prompt)))
        return TurnOutcome.completed()

    def _schedule_checkpoint(self, runtime: SessionRuntime) -> None:
        """Extraction runs off the critical path; close/shutdown awaits it."""
        interval = runtime.resolved.runtime_policy.memory_checkpoint_interval
        if not self._kernel.memory.enabled or runtime.turn_index % interval != 0:
            return

        async def extract() -> None:
            try:
                await self._sessions.extract_memories(runtime, in_background=True)
            except Exception:
                logger.warning("memory checkpoint failed", exc_info=True)

        task = asyncio.get_running_loop().create_task(extract())
        runtime.background.add(task)
        task.add_done_callback(runtime.background.discard)


def _provider_error(error: ProviderError) -> AgentError:
    code = (
        ErrorCode.MODEL_NOT_SUPPORTED
        if error.kind is ProviderErrorKind.UNSUPPORTED_CAPABILITY
        else ErrorCode.PROVIDER_ERROR
    )
    return _error(code, error.message, retryable=error.retryable, source=ErrorSource.PROVIDER)


def _over_limit_output(limit: int) -> ToolOutput:
    return synthetic_output(
        SyntheticReason.MAX_TOOL_CALLS_PER_TURN,
        f"[tool skipped: the limit of {limit} tool calls per turn was reached]",
    )


def _text_blocks(text: str) -> tuple[ContentBlock, ...]:
    return (TextBlock(text=text),) if text else ()


def context_usage(runtime: SessionRuntime, prompt: RenderedPrompt | None) -> ContextUsage:
    estimator = runtime.context.estimator
    prompt_tokens = estimator.text_tokens(prompt.system_prompt) if prompt else 0
    return ContextUsage.of(
        prompt_tokens + runtime.context.history_tokens,
        runtime.model.context_window,
        runtime.context.can_compact,
    )
