"""Tool batch execution (see docs/architecture.md, 'Tool dispatch', and docs/approvals.md).

A batch runs concurrently only if every call is read-only; one mutating call makes the whole
batch serial. Whatever the completion order, results are committed (AfterToolUse, ledger,
ToolCallEnd) in the model's order. A batch in which a call waits for a person's approval
records every call and request first; its read-only calls that need no approval go ahead
together, the others run one after another in the model's order, each after its decision.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from youyou.application.approval_gate import ApprovalGate
from youyou.application.plugin_manager import PluginManager
from youyou.application.tracing import NOOP_TRACER, end_tool, tool_span
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVAL_REQUESTED,
    ApprovalDecision,
    OpenApproval,
    denied_output,
)
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.events import (
    AgentEventPayload,
    ErrorEvent,
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallEnd,
    ToolCallStart,
)
from youyou.domain.hooks import Abort, AfterToolUsePayload, BeforeToolUsePayload
from youyou.domain.ledger import (
    SessionEventPayload,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
)
from youyou.domain.ledger_metadata import metadata_event
from youyou.domain.synthetic_results import SyntheticReason, synthetic_output
from youyou.domain.templates import TOOL_SKIPPED_CANCELLED
from youyou.domain.tool import (
    RequestedToolCall,
    ResolvedToolCall,
    ToolDescriptor,
    ToolInput,
    truncate_tool_output,
    valid_tool_output,
)
from youyou.domain.tool_schema import argument_problems, compiled_schema
from youyou.ports.tool import ToolHandler
from youyou.ports.tracer import Tracer

CANCELLED_OUTPUT = synthetic_output(
    SyntheticReason.CANCELLED_BEFORE_EXECUTION, TOOL_SKIPPED_CANCELLED
)
STOPPED_OUTPUT = synthetic_output(
    SyntheticReason.AFTER_TOOL_USE_ABORT, "[tool skipped: a plugin stopped the tool loop]"
)


@dataclass(frozen=True, slots=True)
class BatchContext:
    session_id: str
    turn_id: str
    cancel: CancellationToken
    timeout_s: float
    tools: Mapping[str, ToolHandler]
    record: Callable[[SessionEventPayload], Awaitable[object]]
    emit: Callable[[AgentEventPayload], None]
    gate: ApprovalGate | None = None  # None: no call waits for approval
    # True when a cancel comes from the session's close or the agent's shutdown: a call that
    # waits for a person is then left waiting in the ledger (a resume lists it again).
    stopping: Callable[[], bool] = lambda: False


@dataclass(frozen=True, slots=True)
class BatchResult:
    stop_loop: bool  # an AfterToolUse hook aborted: no further request with tools


@dataclass(slots=True)
class _Call:
    resolved: ResolvedToolCall
    preset: ToolOutput | None  # synthetic result decided before execution
    approval: str | None = None  # why this call waits for a person (None: it does not)
    output: ToolOutput | None = None
    duration_ms: int = 0


def _error_output(code: ErrorCode, message: str) -> ToolOutput:
    return ToolOutput(
        content=f"{code.value}: {message}", is_error=True, metadata={"error_code": code.value}
    )


def _refusal(
    tool_name: str, descriptor: ToolDescriptor | None, arguments: dict[str, Any]
) -> ToolOutput | None:
    """The error result of a call that must not reach a handler, or None if it may run."""
    if descriptor is None:
        return _error_output(ErrorCode.TOOL_NOT_FOUND, f"tool {tool_name!r} is not registered")
    if not descriptor.validate_arguments:
        return None
    try:
        validator = compiled_schema(tool_name, descriptor.parameters_schema)
        problems = argument_problems(validator, arguments)
    except Exception as exc:  # e.g. a $ref the validator cannot resolve: the tool's fault
        return _error_output(
            ErrorCode.TOOL_EXECUTION_ERROR,
            f"tool {tool_name!r} arguments could not be checked: {type(exc).__name__}: {exc}",
        )
    if problems:
        return _error_output(
            ErrorCode.INPUT_VALIDATION,
            f"invalid arguments for tool {tool_name!r}: {'; '.join(problems)}",
        )
    return None


class ToolDispatcher:
    def __init__(self, plugins: PluginManager, tracer: Tracer = NOOP_TRACER) -> None:
        self._plugins = plugins
        self._tracer = tracer

    async def run_batch(self, ctx: BatchContext, batch: Sequence[RequestedToolCall]) -> BatchResult:
        calls = [await self._resolve(ctx, requested) for requested in batch]
        if any(c.approval is not None for c in calls):
            return await self._run_gated(ctx, calls)
        if any(c.resolved.mutating for c in calls):
            return await self._run_serial(ctx, calls)
        return await self._run_concurrent(ctx, calls)

    async def refuse_batch(
        self, ctx: BatchContext, batch: Sequence[RequestedToolCall], output: ToolOutput
    ) -> None:
        """Record calls that will not run, each answered with ``output``: the ledger keeps what
        the model asked for and why nothing ran. No hook sees them, no handler is called."""
        calls = [
            _Call(
                ResolvedToolCall(
                    **requested.model_dump(),
                    effective_arguments=requested.requested_arguments,
                    mutating=False,
                ),
                preset=output,
                output=output,
            )
            for requested in batch
        ]
        for call in calls:
            await self._start(ctx, call)
        for call in calls:
            await self._commit(ctx, call, hook=False)

    async def _resolve(self, ctx: BatchContext, requested: RequestedToolCall) -> _Call:
        handler = ctx.tools.get(requested.tool_name)
        arguments = requested.requested_arguments
        preset: ToolOutput | None = None
        verdict = None
        if self._plugins.has_before_tool_use:
            # Hooks get copies: the ledger keeps exactly what the model sent.
            outcome = await self._plugins.before_tool_use(
                lambda cfg, current: BeforeToolUsePayload(
                    ctx.session_id,
                    ctx.turn_id,
                    requested.call_id,
                    requested.tool_name,
                    copy.deepcopy(requested.requested_arguments),
                    current,
                    cfg,
                ),
                arguments,
            )
            arguments, verdict = outcome.arguments, outcome.approval
            if outcome.abort is not None:
                preset = synthetic_output(
                    SyntheticReason.BEFORE_TOOL_USE_ABORT,
                    f"[tool call blocked by a plugin: {outcome.abort.reason}]",
                )
        descriptor = handler.descriptor if handler is not None else None
        if preset is None:
            preset = _refusal(requested.tool_name, descriptor, arguments)
        resolved = ResolvedToolCall(
            call_id=requested.call_id,
            tool_name=requested.tool_name,
            requested_arguments=requested.requested_arguments,
            effective_arguments=arguments,
            mutating=descriptor.mutating if descriptor is not None else False,
        )
        approval = None
        if preset is None and descriptor is not None and ctx.gate is not None:
            approval = ctx.gate.reason(descriptor, verdict)
        return _Call(resolved, preset, approval)

    async def _start(self, ctx: BatchContext, call: _Call) -> None:
        """Ledger first, then the event: a start is never shown unrecorded."""
        r = call.resolved
        await ctx.record(
            ToolCall(
                call=ToolCallRecord(
                    call_id=r.call_id,
                    tool_name=r.tool_name,
                    requested_arguments=r.requested_arguments,
                    effective_arguments=r.effective_arguments,
                )
            )
        )
        ctx.emit(
            ToolCallStart(call_id=r.call_id, tool_name=r.tool_name, arguments=r.effective_arguments)
        )

    async def _execute(self, ctx: BatchContext, call: _Call) -> None:
        if call.preset is not None:
            call.output = call.preset
            return
        if ctx.cancel.is_cancelled:
            call.output = CANCELLED_OUTPUT
            return
        with tool_span(self._tracer, call.resolved) as span:
            await self._run_handler(ctx, call)
            assert call.output is not None
            end_tool(span, self._tracer, call.output)

    async def _run_handler(self, ctx: BatchContext, call: _Call) -> None:
        r = call.resolved
        handler = ctx.tools[r.tool_name]
        started = time.perf_counter()
        tool_input = ToolInput(
            session_id=ctx.session_id,
            turn_id=ctx.turn_id,
            call_id=r.call_id,
            arguments=copy.deepcopy(r.effective_arguments),  # the handler may edit its copy
        )
        output: object
        try:
            # Running tools are never killed by a cancel: they get the token and finish.
            async with asyncio.timeout(ctx.timeout_s):
                output = await handler.call(tool_input, ctx.cancel)
        except TimeoutError:
            output = _error_output(
                ErrorCode.TOOL_TIMEOUT, f"tool {r.tool_name!r} exceeded {ctx.timeout_s:g} s"
            )
        except AgentError as err:
            output = _error_output(err.code, err.message)
        except Exception as exc:
            output = _error_output(ErrorCode.TOOL_EXECUTION_ERROR, f"{type(exc).__name__}: {exc}")
        if not isinstance(output, ToolOutput):
            output = _error_output(
                ErrorCode.TOOL_EXECUTION_ERROR,
                f"tool {r.tool_name!r} returned {type(output).__name__}, expected ToolOutput",
            )
        call.duration_ms = int((time.perf_counter() - started) * 1000)
        call.output = truncate_tool_output(valid_tool_output(output))

    async def _commit(
        self, ctx: BatchContext, call: _Call, *, hook: bool = True
    ) -> Abort | AgentError | None:
        """AfterToolUse → ledger → ToolCallEnd; returns the hook's Abort or its failure.

        A failing hook still lets the result be committed: no call may stay unanswered.
        """
        r = call.resolved
        output = call.output
        assert output is not None
        verdict: Abort | AgentError | None = None
        if hook:
            try:
                verdict = await self._plugins.after_tool_use(
                    lambda cfg: AfterToolUsePayload(
                        ctx.session_id,
                        ctx.turn_id,
                        r.call_id,
                        r.tool_name,
                        copy.deepcopy(r.effective_arguments),
                        output,
                        call.duration_ms,
                        not output.is_error,
                        cfg,
                    )
                )
            except AgentError as err:
                verdict = err
        await ctx.record(
            ToolResult(
                result=ToolResultRecord(call_id=r.call_id, tool_name=r.tool_name, output=output)
            )
        )
        ctx.emit(
            ToolCallEnd(
                call_id=r.call_id,
                tool_name=r.tool_name,
                output=_event_view(output),
                duration_ms=call.duration_ms,
            )
        )
        code = (output.metadata or {}).get("error_code")
        if output.is_error and isinstance(code, str):
            ctx.emit(
                ErrorEvent(
                    code=code,
                    message=output.content,
                    fatal=False,
                    retryable=code == ErrorCode.TOOL_TIMEOUT.value,
                )
            )
        return verdict

    async def _run_concurrent(
        self, ctx: BatchContext, calls: list[_Call], *, started: bool = False
    ) -> BatchResult:
        if not started:
            for call in calls:
                await self._start(ctx, call)
        await asyncio.gather(*(self._execute(ctx, call) for call in calls))
        stop = False
        failure: AgentError | None = None
        for call in calls:
            # Every call was started, so every result is committed even after a hook failure.
            verdict = await self._commit(ctx, call, hook=failure is None)
            stop = stop or isinstance(verdict, Abort)
            failure = verdict if isinstance(verdict, AgentError) else failure
        if failure is not None:
            raise failure
        return BatchResult(stop)

    async def _run_serial(
        self, ctx: BatchContext, calls: list[_Call], *, started: bool = False
    ) -> BatchResult:
        stop = False
        for call in calls:
            if not started:
                await self._start(ctx, call)
            if stop:
                call.output = STOPPED_OUTPUT
            elif call.approval is not None:
                await self._decide_and_execute(ctx, call)
                if call.output is None:
                    continue  # still waits for its person, in the ledger
            else:
                await self._execute(ctx, call)
            verdict = await self._commit(ctx, call)
            if isinstance(verdict, AgentError):
                raise verdict
            stop = stop or isinstance(verdict, Abort)
        return BatchResult(stop)

    async def _run_gated(self, ctx: BatchContext, calls: list[_Call]) -> BatchResult:
        """Record every call, then every request; free read-only calls run beside the ordered
        lane of the others, which waits for each decision in turn."""
        gate = ctx.gate
        assert gate is not None
        for call in calls:
            await self._start(ctx, call)
        free = [c for c in calls if c.approval is None and not c.resolved.mutating]
        lane = [c for c in calls if c.approval is not None or c.resolved.mutating]
        try:
            for call in lane:
                if call.approval is not None:
                    await self._ask(ctx, gate, call, call.approval)
            results = await asyncio.gather(
                self._run_concurrent(ctx, free, started=True),
                self._run_serial(ctx, lane, started=True),
                return_exceptions=True,
            )
        finally:
            for call in lane:
                gate.waits.close(call.resolved.call_id)
        stop = False
        for result in results:
            if isinstance(result, BaseException):
                raise result
            stop = stop or result.stop_loop
        return BatchResult(stop)

    async def _ask(self, ctx: BatchContext, gate: ApprovalGate, call: _Call, reason: str) -> None:
        r = call.resolved
        handler = ctx.tools[r.tool_name]
        request = gate.request(r.call_id, handler.descriptor, r.effective_arguments, reason)
        gate.waits.open(request)  # first: a decision may come as soon as the request is read
        await ctx.record(metadata_event(META_APPROVAL_REQUESTED, request))
        ctx.emit(ToolApprovalRequested(**request.model_dump()))

    async def _decide_and_execute(self, ctx: BatchContext, call: _Call) -> None:
        """Wait for the call's decision, record it, then run the call or answer the denial.
        A cancel while waiting answers it as cancelled (no decision is recorded), unless the
        session is closing or the agent shutting down: then the call is left without output,
        waiting for its decision after a resume."""
        gate = ctx.gate
        assert gate is not None
        wait = gate.waits.get(call.resolved.call_id)
        assert wait is not None
        decision = await gate.wait(wait, ctx.cancel)
        if decision is None:
            wait.recorded.set_result(None)
            call.output = None if ctx.stopping() else CANCELLED_OUTPUT
            return
        try:
            await self._record_decision(ctx, decision)
        except BaseException as exc:
            wait.recorded.set_exception(exc)
            raise
        wait.recorded.set_result(None)
        await self._apply(ctx, call, decision)

    async def _record_decision(self, ctx: BatchContext, decision: ApprovalDecision) -> None:
        """Ledger first, then the event; a remembered approval covers the tool from now on."""
        await ctx.record(metadata_event(META_APPROVAL_DECIDED, decision))
        if ctx.gate is not None and decision.decision == "approve" and decision.remember:
            ctx.gate.approved_tools.add(decision.tool_name)
        ctx.emit(ToolApprovalDecided(**decision.model_dump()))

    async def _apply(self, ctx: BatchContext, call: _Call, decision: ApprovalDecision) -> None:
        if decision.decision == "approve":
            await self._execute(ctx, call)
        else:
            call.output = denied_output(decision)

    async def finish_open(self, ctx: BatchContext, opened: Sequence[OpenApproval]) -> None:
        """Answer the calls a stopped process left waiting for approval, in their order: an
        expired request is denied by the timeout now, an approved call runs, a denied one gets
        the denial. Used when a turn is continued after its decisions."""
        gate = ctx.gate
        for item in opened:
            record = item.call.call
            decision = item.decision
            if decision is None:
                assert gate is not None
                decision = gate.timed_out(item.request)
                await self._record_decision(ctx, decision)
            handler = ctx.tools.get(record.tool_name)
            descriptor = handler.descriptor if handler is not None else None
            call = _Call(
                ResolvedToolCall(
                    **record.model_dump(),
                    mutating=descriptor.mutating if descriptor is not None else False,
                ),
                # The tool may be gone since (an MCP server no longer offered): an error result.
                preset=_refusal(record.tool_name, descriptor, record.effective_arguments),
            )
            await self._apply(ctx, call, decision)
            verdict = await self._commit(ctx, call)
            if isinstance(verdict, AgentError):
                raise verdict


def _event_view(output: ToolOutput) -> ToolOutput:
    """Events show ``metadata["display"]`` when a tool provides one (e.g. load_skill)."""
    display: Any = (output.metadata or {}).get("display")
    if isinstance(display, str):
        return output.model_copy(update={"content": display})
    return output
