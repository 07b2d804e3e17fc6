"""Approvals survive the process: resume equals the live state, and a turn whose process was
killed while a call waited goes on after the decision (a real SQLite file, and PostgreSQL for
the approval after a kill; a real child process)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from approval_child import CALL_ID, CloseTicket, builder
from crash_child import PassThroughStorage
from kernel_kit import Watch, block_text
from youyou import AgentError, ErrorCode, OutcomeStatus
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.approvals import (
    META_APPROVAL_DECIDED,
    META_APPROVALS_REMEMBERED,
    TIMEOUT_DECIDER,
    TIMEOUT_REASON,
)
from youyou.domain.ledger import AssistantMessage, LedgerEvent, Metadata, ToolResult
from youyou.domain.session import SessionSummary

ROOT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT_S = 60.0


async def kill_while_waiting(url: str, timeout_s: float) -> str:
    """Run the child until its call waits for approval, SIGKILL it; returns the session id."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.approval_child",
        url,
        str(timeout_s),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    session_id = None
    try:
        async with asyncio.timeout(STEP_TIMEOUT_S):
            while line := await proc.stdout.readline():
                word, value = line.decode().split()
                if word == "SESSION":
                    session_id = value
                elif word == "WAITING":
                    assert value == CALL_ID
                    break
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    stderr = (await proc.stderr.read()).decode()
    assert proc.returncode == -9, f"the child did not wait for the decision:\n{stderr}"
    assert session_id is not None
    return session_id


async def test_a_turn_killed_while_waiting_goes_on_after_the_approval(db_url: str) -> None:
    session_id = await kill_while_waiting(db_url, 900)
    storage = await SqlSessionStorage.open(db_url)
    try:
        tool = CloseTicket()
        agent = await builder(storage, tool, 900).build()
        session = await agent.resume_session(session_id)
        # No synthetic "interrupted" result: the call still waits for a person.
        assert not any(isinstance(e.payload, ToolResult) for e in session.events)
        [pending] = session.pending_approvals()
        assert (pending.call_id, pending.tool_name, pending.arguments, pending.server_id) == (
            CALL_ID,
            "tickets__close_ticket",
            {"id": 42},
            "tickets",
        )
        assert not session.can_continue_turn
        for attempt in (session.send_message("something else"), session.continue_turn()):
            with pytest.raises(AgentError) as busy:
                await attempt
            assert busy.value.code is ErrorCode.TURN_BUSY
        decision = await session.decide_approval(CALL_ID, "approve", decided_by="phone")
        assert decision.decided_by == "phone"
        assert session.pending_approvals() == ()
        assert session.can_continue_turn
        assert tool.calls == []  # the decision alone runs nothing
        turn = Watch(await session.continue_turn())
        assert await turn.done() is OutcomeStatus.COMPLETED
        assert tool.calls == [{"id": 42}]
        assert [e.payload.type for e in turn.events] == [
            "turn_started",
            "tool_call_end",
            "text_delta",
            "turn_complete",
        ]
        answer = session.events[-1].payload
        assert isinstance(answer, AssistantMessage)
        assert block_text(answer.content[0]) == "answer after: ticket 42 closed"
        assert not session.can_continue_turn
        with pytest.raises(AgentError) as nothing:
            await session.continue_turn()
        assert nothing.value.code is ErrorCode.APPROVAL_NOT_FOUND
        events = await storage.load_events(session_id)
        assert [e.payload.kind for e in events[-5:]] == [
            "tool_call",
            "metadata",
            "metadata",
            "tool_result",
            "assistant_message",
        ]
        await agent.shutdown()
    finally:
        await storage.close()


@pytest.mark.parametrize("way", ["deny", "expire"])
async def test_a_turn_killed_while_waiting_goes_on_with_a_denial(sqlite_url: str, way: str) -> None:
    timeout_s = 900.0 if way == "deny" else 0.5
    session_id = await kill_while_waiting(sqlite_url, timeout_s)
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        tool = CloseTicket()
        agent = await builder(storage, tool, 900).build()
        if way == "expire":
            await asyncio.sleep(timeout_s + 0.1)  # the request expires while nothing runs
        session = await agent.resume_session(session_id)
        if way == "deny":
            await session.decide_approval(
                CALL_ID, "deny", decided_by="phone", reason="not on a Friday"
            )
        else:
            assert session.pending_approvals() == ()
            with pytest.raises(AgentError) as late:
                await session.decide_approval(CALL_ID, "approve", decided_by="phone")
            assert late.value.code is ErrorCode.APPROVAL_ALREADY_DECIDED
        assert session.can_continue_turn
        turn = Watch(await session.continue_turn())
        assert await turn.done() is OutcomeStatus.COMPLETED
        assert tool.calls == []
        decided = [
            e.payload.value
            for e in session.events
            if isinstance(e.payload, Metadata) and e.payload.key == META_APPROVAL_DECIDED
        ]
        assert len(decided) == 1
        if way == "expire":
            assert (decided[0]["decided_by"], decided[0]["reason"]) == (
                TIMEOUT_DECIDER,
                TIMEOUT_REASON,
            )
            assert turn.of("tool_approval_decided")[0].decided_by == TIMEOUT_DECIDER
        answer = session.events[-1].payload
        assert isinstance(answer, AssistantMessage)
        said = block_text(answer.content[0])
        assert said.startswith("answer after: [tool call not run: the user")
        assert ("not on a Friday" if way == "deny" else TIMEOUT_REASON) in said
        await agent.shutdown()
    finally:
        await storage.close()


async def test_resume_with_a_pending_approval_equals_the_live_session(sqlite_url: str) -> None:
    live_storage = await SqlSessionStorage.open(sqlite_url)
    other_storage = await SqlSessionStorage.open(sqlite_url)
    try:
        live_agent = await builder(live_storage, CloseTicket(), 900).build()
        live = await live_agent.new_session()
        watch = Watch(await live.send_message("close ticket 42"))
        await watch.until("tool_approval_requested")
        other_agent = await builder(other_storage, CloseTicket(), 900).build()
        resumed = await other_agent.resume_session(live.session_id)
        assert resumed.pending_approvals() == live.pending_approvals()
        assert len(resumed.pending_approvals()) == 1
        assert resumed.visible_messages() == live.visible_messages()
        assert resumed.events == live.events
        assert resumed.last_seq == live.last_seq
        await other_agent.shutdown()
        await live.decide_approval(CALL_ID, "approve", decided_by="alice")
        assert await watch.done() is OutcomeStatus.COMPLETED
        await live_agent.shutdown()
    finally:
        await live_storage.close()
        await other_storage.close()


async def test_remembered_tools_survive_resume_and_compaction(sqlite_url: str) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        tool = CloseTicket()
        agent = await builder(storage, tool, 900).build()
        session = await agent.new_session()
        watch = Watch(await session.send_message("close ticket 42"))
        await watch.until("tool_approval_requested")
        await session.decide_approval(CALL_ID, "approve", decided_by="alice", remember="session")
        assert await watch.done() is OutcomeStatus.COMPLETED
        await session.compact()
        assert any(
            isinstance(e.payload, Metadata) and e.payload.key == META_APPROVALS_REMEMBERED
            for e in session.events
        )
        await session.close(extract_memories=False)
        again = await agent.resume_session(session.session_id)
        assert all(
            not (isinstance(e.payload, Metadata) and e.payload.key == META_APPROVAL_DECIDED)
            for e in again.events
        )  # the decision itself is behind the compaction boundary
        second = Watch(await again.send_message("and once more"))
        assert await second.done() is OutcomeStatus.COMPLETED
        assert second.of("tool_approval_requested") == []
        assert tool.calls == [{"id": 42}, {"id": 42}]
        await agent.shutdown()
    finally:
        await storage.close()


@pytest.mark.parametrize("stop", ["shutdown", "close"])
async def test_a_shutdown_or_close_leaves_the_call_waiting(sqlite_url: str, stop: str) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        first_tool, second_tool = CloseTicket(), CloseTicket()
        first = await builder(storage, first_tool, 900).build()
        session = await first.new_session()
        watch = Watch(await session.send_message("close ticket 42"))
        await watch.until("tool_approval_requested")
        if stop == "shutdown":
            await first.shutdown()
        else:
            await session.close(extract_memories=False)
        assert await watch.done() is OutcomeStatus.CANCELLED
        assert not any(isinstance(e.payload, ToolResult) for e in session.events)
        second = await builder(storage, second_tool, 900).build()
        resumed = await second.resume_session(session.session_id)
        assert [p.call_id for p in resumed.pending_approvals()] == [CALL_ID]
        await resumed.decide_approval(CALL_ID, "approve", decided_by="alice")
        turn = Watch(await resumed.continue_turn())
        assert await turn.done() is OutcomeStatus.COMPLETED
        assert (first_tool.calls, second_tool.calls) == ([], [{"id": 42}])
        await second.shutdown()
        await first.shutdown()
    finally:
        await storage.close()


class FailingDecisions(PassThroughStorage):
    """Refuses to store approval decisions (a database that went read-only meanwhile)."""

    async def append_event(
        self, session_id: str, event: LedgerEvent, summary: SessionSummary
    ) -> None:
        payload = event.payload
        if isinstance(payload, Metadata) and payload.key == META_APPROVAL_DECIDED:
            raise OSError("attempt to write a readonly database")
        await super().append_event(session_id, event, summary)


async def test_a_decision_the_storage_refuses_fails_the_decider_and_the_turn(
    sqlite_url: str,
) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        tool = CloseTicket()
        agent = await builder(FailingDecisions(storage), tool, 900).build()
        session = await agent.new_session()
        watch = Watch(await session.send_message("close ticket 42"))
        await watch.until("tool_approval_requested")
        with pytest.raises(AgentError) as failed:
            await session.decide_approval(CALL_ID, "approve", decided_by="alice")
        assert failed.value.code is ErrorCode.STORAGE_ERROR
        assert await watch.done() is OutcomeStatus.FAILED
        assert tool.calls == []
        # Nothing was decided: a resume still asks.
        again = await builder(storage, CloseTicket(), 900).build()
        resumed = await again.resume_session(session.session_id)
        assert [p.call_id for p in resumed.pending_approvals()] == [CALL_ID]
        await again.shutdown()
        await agent.shutdown()
    finally:
        await storage.close()
