"""When and how history is compacted (see docs/architecture.md, 'Compaction').

Only ledger messages before the current turn's anchor are ever compacted; the raw events stay
in the ledger and a ``context_compaction`` metadata event records the new boundary.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from youyou.application.kernel import Kernel
from youyou.application.model_router import complete_text
from youyou.application.prompt_builder import PromptInputs
from youyou.application.session_runtime import SessionRuntime
from youyou.application.session_service import SessionService
from youyou.application.tracing import compaction_span, end_compaction
from youyou.domain.approvals import META_APPROVALS_REMEMBERED, RememberedTools
from youyou.domain.cancel import CancellationToken, unless_cancelled
from youyou.domain.config import MemoryMode, SummaryFailurePolicy
from youyou.domain.content import ContentBlock, TextBlock
from youyou.domain.context import CompactionMode, CompactionRecord, VisibleMessage, first_safe_cut
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import AgentEventPayload, ContextCompacted
from youyou.domain.hooks import BeforeCompactPayload
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    UserMessage,
    is_message,
)
from youyou.domain.ledger_metadata import metadata_event
from youyou.domain.model import ChatRequest, ModelMessage, ModelMessageRole
from youyou.domain.templates import Phrases
from youyou.domain.transcript import message_line
from youyou.domain.turn import ResolvedSkillInjection

TOOL_RESULT_TRANSCRIPT_CHARS = 4000


@dataclass(frozen=True, slots=True)
class RequestEstimate:
    """Tokens of a request: history + rendered prompt + augmentation (+ candidate message)."""

    history: int
    prompt: int
    augmentation: int
    candidate: int = 0

    @property
    def total(self) -> int:
        return self.history + self.prompt + self.augmentation + self.candidate


def request_estimate(
    runtime: SessionRuntime,
    system_prompt: str,
    injections: Sequence[ResolvedSkillInjection] = (),
    candidate: Sequence[ContentBlock] = (),
) -> RequestEstimate:
    """The one estimate of a request, for automatic and manual compaction alike: the visible
    history, the system prompt, the turn's skill injections and the candidate user message."""
    estimator = runtime.context.estimator
    message = VisibleMessage(None, UserMessage(content=tuple(candidate))) if candidate else None
    return RequestEstimate(
        candidate=estimator.message_tokens(message) if message is not None else 0,
        augmentation=sum(estimator.text_tokens(i.rendered_xml) for i in injections),
        prompt=estimator.text_tokens(system_prompt),
        history=runtime.context.history_tokens,  # last: recounted if counting turned exact
    )


def exceeds_threshold(runtime: SessionRuntime, estimate: RequestEstimate) -> bool:
    """The size trigger (``compact_threshold``); ``manual`` turns it off."""
    threshold = runtime.model.context_window * runtime.resolved.runtime_policy.compact_threshold
    return runtime.compaction.mode is not MemoryMode.MANUAL and estimate.total >= threshold


def should_compact(runtime: SessionRuntime, estimate: RequestEstimate) -> bool:
    """Every automatic trigger before a new message; ``manual`` turns them all off."""
    policy = runtime.compaction
    if exceeds_threshold(runtime, estimate):
        return True
    if policy.mode is MemoryMode.EVERY_N_TURNS:
        return runtime.context.turns.completed >= policy.every_n_turns
    if policy.mode is MemoryMode.CONTEXT_PERCENT:
        return estimate.total >= runtime.model.context_window * policy.context_percent
    return False


def target_tokens(runtime: SessionRuntime) -> int:
    """The largest request that triggers no size-based compaction."""
    ratio = runtime.resolved.runtime_policy.compact_threshold
    if runtime.compaction.mode is MemoryMode.CONTEXT_PERCENT:
        ratio = min(ratio, runtime.compaction.context_percent)
    return math.ceil(runtime.model.context_window * ratio) - 1


def render_transcript(messages: Sequence[VisibleMessage]) -> str:
    return "\n".join(
        message_line(vm.message, tool_result_chars=TOOL_RESULT_TRANSCRIPT_CHARS) for vm in messages
    )


def summary_input(
    previous_summary: str | None, messages: Sequence[VisibleMessage], phrases: Phrases
) -> str:
    return (
        f"{phrases.previous_summary_label}\n{previous_summary or phrases.no_previous_summary}\n\n"
        f"{phrases.new_conversation_label}\n{render_transcript(messages)}"
    )


def truncation_boundary(
    messages: Sequence[VisibleMessage], tokens: Callable[[VisibleMessage], int], budget: int
) -> int | None:
    """Seq of the last dropped message so the kept suffix is the longest that fits ``budget``.

    The suffix starts at a safe cut: never inside a tool batch, never without a result's call.
    """
    kept = 0
    cut = len(messages)
    for index in range(len(messages) - 1, -1, -1):
        kept += tokens(messages[index])
        if kept > budget:
            break
        cut = index
    cut = first_safe_cut(messages, cut)
    return messages[cut - 1].source_seq if cut > 0 else None


class Compactor:
    def __init__(self, kernel: Kernel, sessions: SessionService) -> None:
        self._kernel = kernel
        self._sessions = sessions

    def standing_estimate(self, runtime: SessionRuntime) -> RequestEstimate:
        """The estimate outside a turn: the latest turn's system prompt (before the first turn,
        the session's static sections) and no augmentation, which belongs to a turn."""
        prompt = runtime.system_prompt
        if prompt is None:
            inputs = PromptInputs()
            prompt = self._kernel.prompt_builder.render(runtime.resolved, inputs).system_prompt
        return request_estimate(runtime, prompt)

    async def compact(
        self,
        runtime: SessionRuntime,
        *,
        before_seq: int | None,
        estimate: RequestEstimate,
        cancel: CancellationToken,
        emit: Callable[[AgentEventPayload], None] | None = None,
        force: bool = False,
    ) -> CompactionRecord | None:
        """Compact messages before ``before_seq`` (all if None); None if nothing to compact.

        ``force`` (manual compaction, provider context-length error): a truncation fallback
        drops every compactable message instead of trusting the estimate's budget.
        ``cancel`` (the turn's or the manual compaction's) stops the summary request at once;
        a cancelled compaction writes nothing and returns None.
        """
        context = runtime.context
        messages = context.compactable(before_seq)
        if not messages or cancel.is_cancelled:
            return None
        tracer = self._kernel.tracer
        with compaction_span(tracer, runtime.session_id, len(messages), forced=force) as span:
            record = await self._compact(runtime, messages, estimate, cancel, emit, force=force)
            end_compaction(span, record)
        return record

    async def _compact(
        self,
        runtime: SessionRuntime,
        messages: Sequence[VisibleMessage],
        estimate: RequestEstimate,
        cancel: CancellationToken,
        emit: Callable[[AgentEventPayload], None] | None,
        *,
        force: bool,
    ) -> CompactionRecord | None:
        context = runtime.context
        abort = await self._kernel.plugins.before_compact(
            lambda cfg: BeforeCompactPayload(
                runtime.session_id, len(messages), estimate.history, estimate.total, cfg
            )
        )
        body = await self._summarize(runtime, messages, cancel) if abort is None else None
        if cancel.is_cancelled:
            return None
        mode = CompactionMode.SUMMARY if body is not None else CompactionMode.TRUNCATION_FALLBACK
        boundary = messages[-1].source_seq
        if body is None and not force:
            pinned = estimate.total - sum(context.estimator.message_tokens(m) for m in messages)
            budget = target_tokens(runtime) - pinned
            boundary = truncation_boundary(messages, context.estimator.message_tokens, budget)
        if boundary is None:
            return None
        previous = context.state.latest_compaction
        behind = sum(
            1 for m in messages if (m.source_seq or 0) <= boundary and is_message(m.message)
        )
        record = CompactionRecord(
            mode=mode,
            replaces_through_seq=boundary,
            summary_body=body,
            compacted_message_count=behind + (previous.compacted_message_count if previous else 0),
        )
        await self._sessions.record(runtime, metadata_event(META_CONTEXT_COMPACTION, record))
        if runtime.approved_tools:  # a resume starts after the boundary: keep them in view
            remembered = RememberedTools(tools=tuple(sorted(runtime.approved_tools)))
            await self._sessions.record(
                runtime, metadata_event(META_APPROVALS_REMEMBERED, remembered)
            )
        context.rebuild(runtime.events, record)
        self._sessions.release_settled_events(runtime)
        if emit is not None:
            emit(
                ContextCompacted(mode=record.mode, replaces_through_seq=record.replaces_through_seq)
            )
        return record

    async def _summarize(
        self, runtime: SessionRuntime, messages: Sequence[VisibleMessage], cancel: CancellationToken
    ) -> str | None:
        """The merged summary; None if cancelled or on failure under the truncate policy."""
        policy = runtime.resolved.runtime_policy
        previous = runtime.context.state.latest_compaction
        request = ChatRequest(
            model_id=policy.compact_model_id,
            system_prompt=policy.compact_prompt,
            messages=(
                ModelMessage(
                    role=ModelMessageRole.USER,
                    content=(
                        TextBlock(
                            text=summary_input(
                                previous.summary_body if previous else None,
                                messages,
                                self._kernel.phrases,
                            )
                        ),
                    ),
                ),
            ),
        )
        failure: str
        try:
            text = await unless_cancelled(
                complete_text(self._kernel.models, request, cancel, self._kernel.tracer), cancel
            )
            failure = "the model returned an empty summary"
        except AgentError as err:
            text, failure = None, err.message
        body = (text or "").strip()
        if body or cancel.is_cancelled:
            return body or None
        if runtime.compaction.on_summary_failure is SummaryFailurePolicy.FAIL:
            raise AgentError(
                ErrorCode.COMPACT_ERROR,
                f"summary failed: {failure}",
                retryable=True,
                source=ErrorSource.CONTEXT_MANAGER,
            )
        return None
