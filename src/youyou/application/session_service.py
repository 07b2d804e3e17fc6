"""Session use cases: create, resume, record, close.

See docs/architecture.md, 'The ledger', and docs/sessions.md.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime

from youyou.application.agent_control import shutting_down
from youyou.application.context_manager import ContextManager
from youyou.application.kernel import Kernel
from youyou.application.session_runtime import ManualCompaction, SessionRuntime, TurnState
from youyou.bulk import built, collector_paused
from youyou.domain.approvals import asked_in_last_turn, open_approvals, remembered_tools
from youyou.domain.cancel import CancellationToken
from youyou.domain.config import (
    ResolvedSessionConfig,
    SessionConfig,
    SessionPinnedConfig,
    resolve_session_pinned_config,
    resolve_session_runtime_policy,
)
from youyou.domain.context import CompactionRecord
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.hooks import SessionEndPayload, SessionTerminationMode
from youyou.domain.ledger import (
    LEDGER_SCHEMA_VERSION,
    META_MEMORY_CHECKPOINT,
    META_SESSION_PROFILE,
    LedgerEvent,
    Metadata,
    SessionEventPayload,
    ToolCall,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.ledger_metadata import (
    MemoryCheckpoint,
    MemoryModeChange,
    metadata_event,
    read_metadata,
)
from youyou.domain.lifecycle import LifecycleState
from youyou.domain.session import SessionHead, next_summary
from youyou.domain.synthetic_results import SyntheticReason, synthetic_output
from youyou.domain.templates import TOOL_INTERRUPTED
from youyou.ports.session_storage import SessionStorage

logger = logging.getLogger(__name__)


def _storage_error(exc: Exception) -> AgentError:
    return AgentError(
        ErrorCode.STORAGE_ERROR,
        f"storage failed: {exc}",
        retryable=True,
        source=ErrorSource.SESSION_SERVICE,
    )


class SessionService:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._opening: set[asyncio.Event] = set()  # creates and resumes not yet settled

    def now(self) -> datetime:
        return self._kernel.clock()

    # -- refusals and exclusive operations -----------------------------------------------

    def refusal(self, runtime: SessionRuntime) -> AgentError | None:
        """Why a handle may do no work: AGENT_SHUTDOWN once shutdown has begun (before any
        other reason), SESSION_NOT_FOUND for a closing or closed session."""
        if self._kernel.control.lifecycle is not LifecycleState.RUNNING:
            return shutting_down()
        if runtime.turn_state in (TurnState.CLOSING, TurnState.CLOSED):
            return AgentError(
                ErrorCode.SESSION_NOT_FOUND,
                f"session {runtime.session_id} is closed",
                source=ErrorSource.SESSION_SERVICE,
            )
        return None

    def require_usable(self, runtime: SessionRuntime) -> None:
        refusal = self.refusal(runtime)
        if refusal is not None:
            raise refusal

    @asynccontextmanager
    async def exclusive(self, runtime: SessionRuntime) -> AsyncIterator[CancellationToken]:
        """Hold the session for a manual compaction or memory-mode change, so that it and a
        turn exclude each other (TURN_BUSY both ways). Close, shutdown and the session's cancel
        fire the yielded token and wait for the block to end."""
        self.require_usable(runtime)
        if runtime.is_running or open_approvals(runtime.events):
            raise AgentError(
                ErrorCode.TURN_BUSY,
                f"session {runtime.session_id} is busy",
                source=ErrorSource.SESSION_SERVICE,
            )
        operation = ManualCompaction()
        runtime.turn_state = TurnState.COMPACTING
        runtime.running_compaction = operation
        try:
            async with self.writing(runtime):
                yield operation.cancel_token
        finally:
            runtime.running_compaction = None
            if runtime.turn_state is TurnState.COMPACTING:
                runtime.turn_state = TurnState.IDLE
            operation.finish()

    def cancelled(self, runtime: SessionRuntime) -> AgentError:
        """The error of an operation a cancel stopped: the shutdown or close behind it, if any."""
        return self.refusal(runtime) or AgentError(
            ErrorCode.REQUEST_CANCELLED,
            f"the operation on session {runtime.session_id} was cancelled",
            source=ErrorSource.SESSION_SERVICE,
        )

    # -- one writer per session across processes -----------------------------------------

    @asynccontextmanager
    async def writing(self, runtime: SessionRuntime, *, reload: bool = True) -> AsyncIterator[None]:
        """The block writes the session: see ``begin_writing``."""
        await self.begin_writing(runtime, reload=reload)
        try:
            yield
        finally:
            await self.end_writing(runtime)

    async def begin_writing(self, runtime: SessionRuntime, *, reload: bool = True) -> None:
        """With session leases registered: hold the session's lease until ``end_writing``
        (SESSION_BUSY while another process holds it), and reload a session that another
        process appended to since this one loaded it (unless ``reload`` is False: a close
        or a delete, which never write what they loaded). Without them: nothing."""
        writers = self._kernel.writers
        if writers is None:
            return

        def stop() -> None:
            for operation in runtime.operations:
                operation.cancel()

        async def reload_if_moved_on(last_seq: int | None) -> None:
            if reload and await self._moved_on(runtime, last_seq):
                await self._reload(runtime)

        await writers.take(
            runtime.session_id,
            stop=stop,
            on_taken=reload_if_moved_on,
            seen=lambda: runtime.last_seq,
        )

    async def _moved_on(self, runtime: SessionRuntime, last_seq: int | None) -> bool:
        """Whether another process appended to the session since this copy loaded it;
        ``last_seq``: the stored one, when taking the lease read it (else it is read here)."""
        if last_seq is None:
            last_seq = (await self._storage().load_head(runtime.session_id)).last_seq
        return last_seq != runtime.last_seq

    async def end_writing(self, runtime: SessionRuntime) -> None:
        if self._kernel.writers is not None:
            await self._kernel.writers.give_back(runtime.session_id)

    async def _reload(self, runtime: SessionRuntime) -> None:
        """Replace the ledger state in memory by the stored one, in place (the handle, the
        agent's slot and the operation about to run share the runtime). A background
        extraction of the old copy ends first; its checkpoint is dropped as out of date, and
        the window is extracted again from the reloaded events."""
        if runtime.background:
            await asyncio.gather(*runtime.background, return_exceptions=True)
        fresh = await self._load(runtime.session_id)
        for name in _LEDGER_STATE:
            setattr(runtime, name, getattr(fresh, name))
        runtime.reloads += 1
        await self._answer(runtime)

    # -- ledger writes -------------------------------------------------------------------

    async def record(
        self, runtime: SessionRuntime, payload: SessionEventPayload, *, last: bool = False
    ) -> LedgerEvent:
        """Persist first, then update memory ("ledger first"); on failure nothing changes.

        A memory checkpoint that background extraction left pending is written first: the
        ledger is only written by the operation (turn, compaction, close) that holds the
        session, never by a background task after that operation has ended.

        ``last``: the operation writes nothing after this event (a turn's answer), so its
        lease may be given back in the same transaction (``WriterLeases.append_last``); a
        write that still comes takes it back first.
        """
        async with runtime.write_lock:
            await self._write_pending_checkpoint(runtime)
            return await self._append(runtime, payload, last=last)

    async def _write_pending_checkpoint(self, runtime: SessionRuntime) -> None:
        pending = runtime.pending_checkpoint
        if pending is not None:
            await self._append(runtime, metadata_event(META_MEMORY_CHECKPOINT, pending))
            runtime.pending_checkpoint = None

    async def _append(
        self, runtime: SessionRuntime, payload: SessionEventPayload, *, last: bool = False
    ) -> LedgerEvent:
        """One event, under the write lock ``record`` holds."""
        event = built(
            LedgerEvent,
            {
                "seq": runtime.last_seq + 1,
                "timestamp": self._kernel.clock(),
                "payload": payload,
                "schema_version": LEDGER_SCHEMA_VERSION,
            },
        )
        summary = next_summary(runtime.summary, runtime.session_id, event)
        writers = self._kernel.writers
        if writers is not None:
            await writers.check_writable(runtime.session_id, runtime.last_seq)
        storage = self._kernel.session_storage
        if storage is not None:
            try:
                stored = (  # with the lease given back in the same transaction
                    last
                    and writers is not None
                    and await writers.append_last(runtime.session_id, event, summary)
                )
                if not stored:
                    await storage.append_event(runtime.session_id, event, summary)
            except AgentError:
                raise
            except Exception as exc:
                raise _storage_error(exc) from exc
        runtime.events.append(event)
        runtime.last_seq = event.seq
        runtime.summary = summary
        runtime.context.append(event)
        return event

    # -- lifecycle -----------------------------------------------------------------------

    def _runtime(self, session_id: str, resolved: ResolvedSessionConfig) -> SessionRuntime:
        model = self._kernel.models.route(resolved.pinned.model_id).info
        return SessionRuntime(
            session_id=session_id,
            resolved=resolved,
            model=model,
            context=ContextManager(
                self._kernel.estimator_for(model),
                model.context_window,
                cancel_marker=self._kernel.phrases.incomplete_assistant_marker,
            ),
            compaction=self._kernel.config.compaction,
        )

    async def create(self, session_config: SessionConfig) -> SessionRuntime:
        kernel = self._kernel
        session_id = str(uuid.uuid4())
        with self._opening_slot(session_id) as reservation:
            pinned = resolve_session_pinned_config(kernel.config, session_config, kernel.models.has)
            policy = resolve_session_runtime_policy(kernel.config, pinned, kernel.models.has)
            runtime = self._runtime(
                session_id, ResolvedSessionConfig(pinned=pinned, runtime_policy=policy)
            )
            await self.record(runtime, metadata_event(META_SESSION_PROFILE, pinned))
            try:
                abort = await kernel.plugins.session_start(session_id, pinned.model_id)
            except AgentError:
                await self._roll_back_storage(session_id)
                raise
            if abort is not None:
                await self._roll_back_storage(session_id)
                raise AgentError(
                    ErrorCode.PLUGIN_ABORTED,
                    f"session start aborted by a plugin: {abort.reason}",
                    source=ErrorSource.SESSION_SERVICE,
                )
            await self._load_bootstrap(runtime)
            kernel.control.commit(reservation, runtime)
            return runtime

    @contextmanager
    def _opening_slot(self, session_id: str) -> Iterator[str]:
        """Claim a slot for a create or resume; a failure rolls back only this reservation.
        Shutdown waits until the block ends (``settle_openings``)."""
        control = self._kernel.control
        reservation = control.claim(session_id)
        settled = asyncio.Event()
        self._opening.add(settled)
        try:
            yield reservation
        except BaseException:
            control.rollback(reservation)
            raise
        finally:
            self._opening.discard(settled)
            settled.set()

    async def settle_openings(self) -> None:
        """Wait until every create or resume in flight has committed or rolled back (no new one
        can start once shutdown has begun)."""
        for settled in list(self._opening):
            await settled.wait()

    async def _roll_back_storage(self, session_id: str) -> None:
        storage = self._kernel.session_storage
        if storage is None:
            return
        try:
            await storage.delete_session(session_id)
        except Exception as exc:
            raise AgentError(
                ErrorCode.STORAGE_ERROR,
                f"could not roll back aborted session {session_id}: {exc}",
                source=ErrorSource.SESSION_SERVICE,
            ) from exc

    async def _load_bootstrap(self, runtime: SessionRuntime) -> None:
        memory = self._kernel.memory
        if memory.enabled:
            runtime.memory_state.bootstrap_memories = await memory.load_bootstrap_memories(
                runtime.resolved.pinned.memory_namespace,
                runtime.resolved.runtime_policy.memory_max_items,
            )

    async def resume(self, session_id: str) -> SessionRuntime:
        """Rebuild from the session profile, the latest compaction and the events after it."""
        self._storage()
        with self._opening_slot(session_id) as reservation:
            runtime = await self._load(session_id)
            await self.answer_interrupted_calls(runtime)
            await self._load_bootstrap(runtime)
            self._kernel.control.commit(reservation, runtime)
            return runtime

    def _storage(self) -> SessionStorage:
        storage = self._kernel.session_storage
        if storage is None:
            raise AgentError(
                ErrorCode.SESSION_NOT_FOUND,
                "resume needs a session storage",
                source=ErrorSource.SESSION_SERVICE,
            )
        return storage

    async def _load(self, session_id: str) -> SessionRuntime:
        """A runtime as the storage has the session now (resume, and a reload)."""
        kernel = self._kernel
        head, events = await self._storage().load_session(session_id, self._first_needed_seq)
        pinned = read_metadata(head.profile, SessionPinnedConfig)
        assert pinned is not None  # a session's first event is its profile
        policy = resolve_session_runtime_policy(kernel.config, pinned, kernel.models.has)
        runtime = self._runtime(
            session_id, ResolvedSessionConfig(pinned=pinned, runtime_policy=policy)
        )
        record = read_metadata(head.latest_compaction, CompactionRecord)
        checkpoint = _checkpoint(head)
        runtime.last_memory_checkpoint_seq = checkpoint.last_seq
        runtime.events = list(events)
        runtime.approved_tools = remembered_tools(runtime.events)
        runtime.last_seq = head.last_seq
        runtime.summary = head.summary
        with collector_paused():
            runtime.context.rebuild(runtime.events, record)
            # Convert the history for the provider now, so the first turn pays only for
            # itself (calls answered below extend the same list and convert later).
            visible = runtime.context.state.visible_messages
            runtime.requests.messages.prefix(visible, len(visible))
        change = read_metadata(head.latest_memory_mode, MemoryModeChange)
        if change is not None:
            runtime.compaction = runtime.compaction.model_copy(update={"mode": change.mode})
        runtime.turn_index = checkpoint.turn_index + sum(
            1
            for e in runtime.events
            if e.seq > runtime.last_memory_checkpoint_seq and type(e.payload) is UserMessage
        )
        return runtime

    def _first_needed_seq(self, head: SessionHead) -> int:
        """Resume reads the events after this seq: those after the latest compaction, and
        with memory on also those since the memory checkpoint (extraction needs them). Without
        memory they are dead weight: resume must not grow with the history behind a compaction.
        """
        record = read_metadata(head.latest_compaction, CompactionRecord)
        boundary = record.replaces_through_seq if record else 0
        if not self._kernel.memory.enabled:
            return boundary
        return min(boundary, _checkpoint(head).last_seq)

    async def answer_interrupted_calls(self, runtime: SessionRuntime) -> None:
        """A process killed inside a tool batch leaves calls without results, which no provider
        accepts: record, as a fact like any other, that each was interrupted."""
        if _unanswered_calls(runtime):
            async with self.writing(runtime):
                await self._answer(runtime)

    async def _answer(self, runtime: SessionRuntime) -> None:
        for orphan in _unanswered_calls(runtime):
            await self.record(
                runtime,
                ToolResult(
                    result=ToolResultRecord(
                        call_id=orphan.call.call_id,
                        tool_name=orphan.call.tool_name,
                        output=_INTERRUPTED_OUTPUT,
                    )
                ),
            )

    async def close_unless_busy(self, runtime: SessionRuntime, *, extract: bool = True) -> bool:
        """``close``, unless an operation runs in the session or another process holds its
        lease: then False, and the session stays open as it was (an idle sweep tries again
        later, instead of leaving memories unextracted)."""
        if runtime.operations:
            return False
        try:
            await self.begin_writing(runtime, reload=False)
        except AgentError as error:
            if error.code is ErrorCode.SESSION_BUSY:
                return False
            raise
        try:
            if runtime.operations:  # one started while the lease was being taken
                return False
            await self.close(runtime, SessionTerminationMode.CLOSE, extract=extract)
        finally:
            await self.end_writing(runtime)
        return True

    async def delete(self, runtime: SessionRuntime) -> None:
        """Close without extracting and delete the stored session, as its writer: TURN_BUSY
        while an operation runs here, SESSION_BUSY while another process writes it."""
        self.require_usable(runtime)
        storage = self._storage()
        if runtime.operations:
            raise AgentError(
                ErrorCode.TURN_BUSY,
                f"session {runtime.session_id} is busy",
                source=ErrorSource.SESSION_SERVICE,
            )
        async with self.writing(runtime, reload=False):
            await self.close(runtime, SessionTerminationMode.CLOSE, extract=False)
            try:
                await storage.delete_session(runtime.session_id)
            except AgentError:
                raise
            except Exception as exc:
                raise _storage_error(exc) from exc

    async def close(
        self, runtime: SessionRuntime, mode: SessionTerminationMode, *, extract: bool = True
    ) -> None:
        """Close: refuse new work, stop what runs, SessionEnd (veto only on plain close),
        extract, release the slot last.

        ``extract=False`` writes nothing: for a copy this process may not write right now.
        With session leases registered, the extraction writes under the session's lease; it
        is skipped while another process holds the lease, and for a copy another process has
        appended to since it was loaded: that process extracts what it wrote."""
        async with runtime.close_lock:
            if runtime.turn_state is TurnState.CLOSED:
                return
            runtime.turn_state = TurnState.CLOSING  # sends, compactions, mode changes refused
            try:
                for operation in runtime.operations:
                    operation.cancel()
                    await operation.join()
                await self._session_end(runtime, mode)
            except BaseException:
                runtime.turn_state = TurnState.IDLE  # a vetoed close leaves the session usable
                raise
            try:
                if runtime.background:
                    await asyncio.gather(*runtime.background, return_exceptions=True)
                if extract and self._kernel.memory.enabled:
                    async with self.writing(runtime, reload=False):
                        if self._kernel.writers is not None and await self._moved_on(runtime, None):
                            logger.info(
                                "closing session %s without its memories: another process "
                                "wrote it since",
                                runtime.session_id,
                            )
                            return
                        await self.extract_memories(runtime)
                        async with runtime.write_lock:  # when the close's window was empty
                            await self._write_pending_checkpoint(runtime)
            except AgentError as error:  # one line: what failed has logged its own details
                # SESSION_BUSY: the process that writes the session extracts it when it closes
                log = logger.info if error.code is ErrorCode.SESSION_BUSY else logger.warning
                log("closing session %s without its memories: %s", runtime.session_id, error)
            except Exception:
                logger.warning("memory extraction on close failed", exc_info=True)
            finally:
                self.mark_closed(runtime)

    async def _session_end(self, runtime: SessionRuntime, mode: SessionTerminationMode) -> None:
        try:
            abort = await self._kernel.plugins.session_end(
                lambda cfg: SessionEndPayload(
                    runtime.session_id,
                    runtime.summary.message_count if runtime.summary else 0,
                    mode,
                    cfg,
                )
            )
        except AgentError:
            if mode is SessionTerminationMode.CLOSE:
                raise
            logger.warning("SessionEnd hook failed during shutdown", exc_info=True)
            abort = None
        if abort is not None:
            if mode is SessionTerminationMode.CLOSE:
                raise AgentError(
                    ErrorCode.PLUGIN_ABORTED,
                    f"close aborted by a plugin: {abort.reason}",
                    source=ErrorSource.SESSION_SERVICE,
                )
            logger.warning("SessionEnd abort ignored during shutdown: %s", abort.reason)

    def mark_closed(self, runtime: SessionRuntime) -> None:
        """The end of every close, even a failed one during shutdown: nothing runs any more."""
        runtime.cancel.cancel()
        runtime.turn_state = TurnState.CLOSED
        self._kernel.control.release(runtime.session_id)

    async def extract_memories(
        self, runtime: SessionRuntime, *, in_background: bool = False
    ) -> None:
        """list_all → model → upsert/delete → Metadata(memory_checkpoint) (write path).

        ``in_background``: the checkpoint event is left pending for the session's next write
        (see ``record``), since the operation that scheduled the extraction has ended and
        another process may hold the session by now; if it does, this copy is dropped as out
        of date and the other process extracts that window again.
        """
        memory = self._kernel.memory
        if not memory.enabled:
            return
        current = runtime.last_seq
        window = [
            e
            for e in runtime.events
            if runtime.last_memory_checkpoint_seq < e.seq <= current
            and not isinstance(e.payload, Metadata)
        ]
        if not window:
            return
        policy = runtime.resolved.runtime_policy
        await memory.run_extraction(
            session_id=runtime.session_id,
            events=window,
            namespace=runtime.resolved.pinned.memory_namespace,
            model_id=policy.memory_model_id,
        )
        checkpoint = MemoryCheckpoint(last_seq=current, turn_index=runtime.turn_index)
        if in_background:
            runtime.pending_checkpoint = checkpoint
        else:
            await self.record(runtime, metadata_event(META_MEMORY_CHECKPOINT, checkpoint))
        runtime.last_memory_checkpoint_seq = current
        self.release_settled_events(runtime)

    def release_settled_events(self, runtime: SessionRuntime) -> None:
        """Drop loaded events no one reads again: behind the compaction boundary and, with
        long-term memory, already extracted. Only when they are safe in a session storage."""
        if self._kernel.session_storage is None:
            return
        compaction = runtime.context.state.latest_compaction
        keep_after = compaction.replaces_through_seq if compaction else 0
        if self._kernel.memory.enabled:
            keep_after = min(keep_after, runtime.last_memory_checkpoint_seq)
        if runtime.events and runtime.events[0].seq <= keep_after:
            runtime.events = [e for e in runtime.events if e.seq > keep_after]


# What a reload replaces; the rest of a runtime (its locks, cancel token, state, what runs, the
# bootstrap memories) belongs to the open session, not to its ledger.
_LEDGER_STATE = (
    "resolved",
    "model",
    "context",
    "compaction",
    "summary",
    "last_seq",
    "events",
    "turn_index",
    "system_prompt",
    "last_memory_checkpoint_seq",
    "pending_checkpoint",
    "requests",
    "approved_tools",
)


def _unanswered_calls(runtime: SessionRuntime) -> list[ToolCall]:
    """The calls of the last turn without a result, oldest first (only it can hold them),
    except those that asked a person for approval: the decision still answers them."""
    answered = asked_in_last_turn(runtime.events)
    pending: list[ToolCall] = []
    for event in reversed(runtime.events):
        payload = event.payload
        if isinstance(payload, UserMessage):
            break
        if isinstance(payload, ToolResult):
            answered.add(payload.result.call_id)
        elif isinstance(payload, ToolCall) and payload.call.call_id not in answered:
            pending.append(payload)
    return pending[::-1]


_INTERRUPTED_OUTPUT = synthetic_output(SyntheticReason.INTERRUPTED_BEFORE_RESULT, TOOL_INTERRUPTED)


def _checkpoint(head: SessionHead) -> MemoryCheckpoint:
    found = read_metadata(head.latest_memory_checkpoint, MemoryCheckpoint)
    return found or MemoryCheckpoint(last_seq=0)
