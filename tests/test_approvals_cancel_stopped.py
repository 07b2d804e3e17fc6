"""Cancelling a turn that stopped while a call waited for approval (its process was killed,
or its session closed): no running turn is left to cancel, so ``cancel_stopped_turn`` answers
the calls durably as cancelled and the session takes new messages (a real SQLite file, a real
child process for the kill)."""

from __future__ import annotations

import pytest

from approval_child import CALL_ID, CloseTicket, builder
from kernel_kit import Watch
from test_approvals_durable import kill_while_waiting
from youyou import AgentError, ErrorCode, OutcomeStatus
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.api.session import SessionHandle
from youyou.domain.approvals import META_APPROVAL_DECIDED
from youyou.domain.ledger import Metadata, ToolResult
from youyou.domain.synthetic_results import SyntheticReason


async def stopped_session(url: str, storage: SqlSessionStorage, stop: str) -> str:
    """A session whose turn stopped while its call waited: ``kill`` (SIGKILL of a child
    process) or ``close`` (this process closed the session)."""
    if stop == "kill":
        return await kill_while_waiting(url, 900)
    agent = await builder(storage, CloseTicket(), 900).build()
    try:
        session = await agent.new_session()
        watch = Watch(await session.send_message("close ticket 42"))
        await watch.until("tool_approval_requested")
        await session.close(extract_memories=False)
        assert await watch.done() is OutcomeStatus.CANCELLED
        return session.session_id
    finally:
        await agent.shutdown()


def decisions(session: SessionHandle) -> list[object]:
    return [
        e.payload.value
        for e in session.events
        if isinstance(e.payload, Metadata) and e.payload.key == META_APPROVAL_DECIDED
    ]


@pytest.mark.parametrize(("stop", "decided"), [("kill", False), ("close", True)])
async def test_a_stopped_waiting_turn_is_cancelled_durably(
    sqlite_url: str, stop: str, decided: bool
) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        session_id = await stopped_session(sqlite_url, storage, stop)
        tool = CloseTicket()
        agent = await builder(storage, tool, 900).build()
        session = await agent.resume_session(session_id)
        assert [p.call_id for p in session.pending_approvals()] == [CALL_ID]
        session.cancel()  # nothing runs here: a plain cancel cannot reach the stopped turn
        assert [p.call_id for p in session.pending_approvals()] == [CALL_ID]
        if decided:  # approved, but the turn was not continued yet: the cancel still wins
            await session.decide_approval(CALL_ID, "approve", decided_by="alice")
            assert session.can_continue_turn
        before = len(decisions(session))

        assert await session.cancel_stopped_turn() == (CALL_ID,)

        assert session.pending_approvals() == ()
        assert not session.can_continue_turn
        result = session.events[-1].payload
        assert isinstance(result, ToolResult) and result.result.call_id == CALL_ID
        assert result.result.output.is_error
        assert result.result.output.metadata is not None
        assert result.result.output.metadata["reason"] == SyntheticReason.CANCELLED_BEFORE_EXECUTION
        assert len(decisions(session)) == before  # a cancel records no decision
        assert tool.calls == []
        assert await session.cancel_stopped_turn() == ()  # idempotent
        with pytest.raises(AgentError) as late:
            await session.decide_approval(CALL_ID, "approve", decided_by="phone")
        assert late.value.code is ErrorCode.APPROVAL_ALREADY_DECIDED
        with pytest.raises(AgentError) as nothing:
            await session.continue_turn()
        assert nothing.value.code is ErrorCode.APPROVAL_NOT_FOUND

        # Durable: another agent resuming the session sees the same, and nothing waits.
        other = await builder(storage, CloseTicket(), 900).build()
        resumed = await other.resume_session(session_id)
        assert resumed.events == session.events
        assert resumed.pending_approvals() == () and not resumed.can_continue_turn
        await other.shutdown()

        # The session takes a new message; a call of it that waits is cancelled as usual.
        turn = Watch(await session.send_message("close ticket 42 again"))
        await turn.until("tool_approval_requested")
        with pytest.raises(AgentError) as busy:
            await session.cancel_stopped_turn()
        assert busy.value.code is ErrorCode.TURN_BUSY
        session.cancel()
        assert await turn.done() is OutcomeStatus.CANCELLED
        await agent.shutdown()
    finally:
        await storage.close()
