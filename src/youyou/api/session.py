"""Handle of an active session: turns, compaction, memory mode, close."""

from __future__ import annotations

from collections.abc import Sequence

from youyou.api.running_turn import RunningTurn
from youyou.application import approvals
from youyou.application.compaction import Compactor
from youyou.application.session_runtime import SessionRuntime, TurnState
from youyou.application.session_service import SessionService
from youyou.application.turn_engine import TurnEngine, context_usage
from youyou.domain.approvals import (
    ApprovalDecision,
    Decision,
    PendingApproval,
    Remember,
    turn_origin,
)
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import MemoryMode, ResolvedSessionConfig
from youyou.domain.content import ContentBlock, TextBlock
from youyou.domain.context import CompactionRecord, VisibleMessage
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import ContextUsage
from youyou.domain.hooks import SessionTerminationMode
from youyou.domain.ledger import META_MEMORY_MODE, LedgerEvent, UserMessage
from youyou.domain.ledger_metadata import MemoryModeChange, metadata_event
from youyou.domain.model import ModelInfo
from youyou.domain.session import SessionSummary
from youyou.ports.turn import TurnOptions

UserInput = str | Sequence[ContentBlock]


def to_blocks(user_input: UserInput) -> tuple[ContentBlock, ...]:
    if isinstance(user_input, str):
        return (TextBlock(text=user_input),)
    return tuple(user_input)


class SessionHandle:
    def __init__(
        self,
        runtime: SessionRuntime,
        engine: TurnEngine,
        sessions: SessionService,
        compactor: Compactor,
    ) -> None:
        self._runtime = runtime
        self._engine = engine
        self._sessions = sessions
        self._compactor = compactor

    @property
    def session_id(self) -> str:
        return self._runtime.session_id

    @property
    def config(self) -> ResolvedSessionConfig:
        return self._runtime.resolved

    @property
    def summary(self) -> SessionSummary | None:
        return self._runtime.summary

    @property
    def events(self) -> tuple[LedgerEvent, ...]:
        """The ledger events still in memory. With a session storage, events behind the
        compaction boundary (and, with long-term memory, already extracted) are released: read
        the full history from the storage."""
        return tuple(self._runtime.events)

    @property
    def model(self) -> ModelInfo:
        """The session's pinned model: its window and what it can do (tool use, vision)."""
        return self._runtime.model

    @property
    def last_seq(self) -> int:
        """Seq of the newest ledger event this handle knows; a larger one in the storage means
        another process appended to the session."""
        return self._runtime.last_seq

    @property
    def reloads(self) -> int:
        """How often this handle reloaded its ledger before writing, because another process
        had appended to it (only with session leases registered)."""
        return self._runtime.reloads

    def visible_messages(self) -> tuple[VisibleMessage, ...]:
        """What the model sees of the history now; a resume rebuilds exactly this."""
        return tuple(self._runtime.context.state.visible_messages)

    @property
    def memory_mode(self) -> MemoryMode:
        return self._runtime.compaction.mode

    @property
    def latest_compaction(self) -> CompactionRecord | None:
        return self._runtime.context.state.latest_compaction

    @property
    def is_closed(self) -> bool:
        return self._runtime.turn_state is TurnState.CLOSED

    async def send_message(
        self, user_input: UserInput, *, options: TurnOptions | None = None
    ) -> RunningTurn:
        """Start a turn; refusals (AGENT_SHUTDOWN, SESSION_NOT_FOUND, INPUT_VALIDATION,
        TURN_BUSY, SKILL_NOT_FOUND, and SESSION_BUSY while another process writes the
        session) write nothing. With session leases, the turn holds the session's lease until
        it ends, and a session another process appended to is reloaded first."""
        runtime = self._runtime
        self._sessions.require_usable(runtime)
        await self._sessions.begin_writing(runtime)
        return await self._start(to_blocks(user_input), options, continuation=False)

    async def _start(
        self, blocks: tuple[ContentBlock, ...], options: TurnOptions | None, *, continuation: bool
    ) -> RunningTurn:
        runtime = self._runtime
        try:
            if continuation:
                blocks = self._continued_blocks()
            channel = self._engine.start(
                runtime,
                blocks,
                options or TurnOptions(),
                on_end=lambda: self._sessions.end_writing(runtime),
                continuation=continuation,
            )
        except BaseException:
            await self._sessions.end_writing(runtime)
            raise
        return RunningTurn(channel)

    # -- tool approvals (docs/approvals.md) ---------------------------------------------

    def pending_approvals(self) -> tuple[PendingApproval, ...]:
        """Tool calls waiting for a person's decision, in call order: those of the running
        turn, or of a turn whose process stopped while they waited (then see
        ``continue_turn``). Expired requests are not listed: they count as denied."""
        return approvals.pending_approvals(self._runtime, self._sessions.now())

    async def decide_approval(
        self,
        call_id: str,
        decision: Decision,
        *,
        decided_by: str,
        reason: str | None = None,
        remember: Remember | None = None,
    ) -> ApprovalDecision:
        """Approve or deny a waiting call; returns once the decision is in the ledger.

        While the turn runs, it goes on at once (a denied call gives the model a result saying
        so). With no turn running, the decision is recorded and ``continue_turn`` goes on.
        ``remember="session"`` (with an approval) approves the tool for the rest of the
        session. APPROVAL_NOT_FOUND for a call that never asked, APPROVAL_ALREADY_DECIDED for
        one decided (by someone else or the timeout), cancelled or answered; SESSION_BUSY
        while another process writes the session."""
        return await approvals.decide(
            self._runtime,
            self._sessions,
            self._sessions.now(),
            call_id,
            decision,
            decided_by=decided_by,
            reason=reason,
            remember=remember,
        )

    @property
    def can_continue_turn(self) -> bool:
        """A turn stopped (its process died, or the session was closed) while calls waited for
        approval, and every one is decided or expired: ``continue_turn`` answers them and goes
        on."""
        return approvals.can_continue(self._runtime, self._sessions.now())

    async def continue_turn(self, *, options: TurnOptions | None = None) -> RunningTurn:
        """Go on with a stopped turn whose calls are decided: approved calls run, denied and
        expired ones get the denial, and the model answers, as in the turn that stopped.
        TURN_BUSY while a turn runs or a call still waits for a decision; APPROVAL_NOT_FOUND
        when no turn waits to go on."""
        runtime = self._runtime
        self._sessions.require_usable(runtime)
        await self._sessions.begin_writing(runtime)  # may reload: decide on the fresh ledger
        return await self._start((), options, continuation=True)

    async def cancel_stopped_turn(self) -> tuple[str, ...]:
        """Cancel a turn that stopped while calls waited for approval (its process died, or
        the session was closed), which ``cancel`` cannot reach: its calls without a result,
        decided or not, get the cancelled result (no decision is recorded, as with a cancel
        while waiting), so nothing waits any more and the session takes new messages. Returns
        the call ids answered; () when no stopped turn waits. TURN_BUSY while a turn runs
        (``cancel`` stops it), SESSION_BUSY while another process writes the session."""
        return await approvals.cancel_stopped(self._runtime, self._sessions)

    def _continued_blocks(self) -> tuple[ContentBlock, ...]:
        runtime = self._runtime
        if runtime.is_running:
            raise AgentError(
                ErrorCode.TURN_BUSY,
                f"session {runtime.session_id} is running a turn",
                source=ErrorSource.SESSION_SERVICE,
            )
        if not self.can_continue_turn:
            if self.pending_approvals():
                raise AgentError(
                    ErrorCode.TURN_BUSY,
                    f"session {runtime.session_id} has tool calls waiting for a decision",
                    source=ErrorSource.SESSION_SERVICE,
                )
            raise AgentError(
                ErrorCode.APPROVAL_NOT_FOUND,
                f"session {runtime.session_id} has no turn waiting to go on",
                source=ErrorSource.SESSION_SERVICE,
            )
        origin = turn_origin(runtime.events)
        assert origin is not None and type(origin.payload) is UserMessage
        return tuple(origin.payload.content)

    def cancel(self) -> None:
        """Cancel what runs in this session, a turn or a compaction; idempotent, nothing when
        idle. A cancelled compaction writes nothing."""
        for operation in self._runtime.operations:
            operation.cancel()

    def usage(self) -> ContextUsage:
        return context_usage(self._runtime, None)

    async def compact(self) -> ContextUsage:
        """Compact every uncompacted message now (any mode); only refreshes usage if none.
        TURN_BUSY while a turn runs; a cancel raises REQUEST_CANCELLED (or the close or
        shutdown behind it) and leaves the boundary where it was."""
        async with self._sessions.exclusive(self._runtime) as cancel:
            await self._compact(cancel)
        return self.usage()

    async def set_memory_mode(self, mode: MemoryMode) -> ContextUsage:
        """Persisted in the ledger; switching to manual compacts at once."""
        runtime = self._runtime
        async with self._sessions.exclusive(runtime) as cancel:
            if mode is not runtime.compaction.mode:
                await self._sessions.record(
                    runtime, metadata_event(META_MEMORY_MODE, MemoryModeChange(mode=mode))
                )
            runtime.compaction = runtime.compaction.model_copy(update={"mode": mode})
            if mode is MemoryMode.MANUAL:
                await self._compact(cancel)
        return self.usage()

    async def close(self, *, extract_memories: bool = True, unless_busy: bool = False) -> bool:
        """``extract_memories=False`` closes without writing to the ledger. With session
        leases, a copy that another process has appended to since, or holds right now, is
        closed without extracting: that process extracts what it wrote. ``unless_busy``: while
        a turn or compaction runs here, or another process holds the session's lease, the
        session stays open and False is returned (an idle sweep tries again later). Closing a
        closed session does nothing. True once closed."""
        if unless_busy:
            return await self._sessions.close_unless_busy(self._runtime, extract=extract_memories)
        await self._sessions.close(
            self._runtime, SessionTerminationMode.CLOSE, extract=extract_memories
        )
        return True

    async def delete(self) -> None:
        """Close without extracting memories and delete the session from the storage, as its
        writer: TURN_BUSY while a turn or compaction runs, SESSION_BUSY while another process
        writes the session. Needs a session storage."""
        await self._sessions.delete(self._runtime)

    async def _compact(self, cancel: CancellationToken) -> None:
        runtime = self._runtime
        record = await self._compactor.compact(
            runtime,
            before_seq=None,
            estimate=self._compactor.standing_estimate(runtime),
            cancel=cancel,
            force=True,
        )
        if record is None and cancel.is_cancelled:
            raise self._sessions.cancelled(runtime)
