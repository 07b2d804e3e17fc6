"""The approvals index of the workbench store (``wb_tool_approvals``) on a real SQLite file and
a real PostgreSQL database: the first decision wins, a late or unknown one is refused, and the
process running the turn finds the decisions it must hand to its kernel."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from workbench_kit import T0, chat_record
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.approvals import ApprovalRequest, Claim, Decision


@pytest.fixture
async def chat_id(store: WorkbenchStore) -> str:
    owner = await store.create_user("alice", "hash")
    chat = chat_record(owner.id)
    await store.create_chat_session(chat)
    return chat.id


def request(call_id: str = "c1", expires_in_s: float | None = 900) -> ApprovalRequest:
    expires = None if expires_in_s is None else T0 + timedelta(seconds=expires_in_s)
    arguments = {"timezone": "UTC"}
    return ApprovalRequest(call_id, "time__get_current_time", arguments, "time", T0, expires)


def decision(what: str = "approve", by: str = "alice", after_s: float = 5) -> Decision:
    return Decision(what, by, T0 + timedelta(seconds=after_s), reason="ok", remember=None)


async def test_a_request_is_pending_until_decided(store: WorkbenchStore, chat_id: str) -> None:
    await store.record_request(chat_id, request())
    (pending,) = (await store.pending_approvals([chat_id]))[chat_id]
    assert (pending.call_id, pending.argument_values, pending.server_id) == (
        "c1",
        {"timezone": "UTC"},
        "time",
    )
    assert await store.unsettled_sessions() == {chat_id}

    assert await store.claim_decision(chat_id, "c1", decision()) is Claim.CLAIMED
    assert await store.pending_approvals([chat_id]) == {}
    (claimed,) = await store.decisions_to_apply([chat_id])
    assert (claimed.decision, claimed.decided_by, claimed.applied) == ("approve", "alice", False)

    await store.record_decision(chat_id, "c1", decision())
    assert await store.decisions_to_apply([chat_id]) == []
    await store.settle_approvals(chat_id, "c1")
    assert await store.unsettled_sessions() == set()


async def test_the_first_of_two_decisions_wins(store: WorkbenchStore, chat_id: str) -> None:
    await store.record_request(chat_id, request())
    claims = await asyncio.gather(
        store.claim_decision(chat_id, "c1", decision("approve")),
        store.claim_decision(chat_id, "c1", decision("deny", by="alice-phone")),
    )
    assert sorted(c.value for c in claims) == ["claimed", "decided"]
    assert await store.claim_decision(chat_id, "nope", decision()) is Claim.NOT_FOUND


async def test_a_decision_after_the_deadline_or_the_turn_is_refused(
    store: WorkbenchStore, chat_id: str
) -> None:
    await store.record_request(chat_id, request("late", expires_in_s=1))
    assert await store.claim_decision(chat_id, "late", decision(after_s=2)) is Claim.DECIDED
    await store.record_request(chat_id, request("forever", expires_in_s=None))
    assert await store.claim_decision(chat_id, "forever", decision(after_s=10**6)) is Claim.CLAIMED

    await store.record_request(chat_id, request("gone"))
    await store.settle_approvals(chat_id)  # the turn ended (cancelled)
    assert await store.claim_decision(chat_id, "gone", decision()) is Claim.DECIDED
    assert await store.pending_approvals([chat_id]) == {}


async def test_a_call_id_of_a_new_turn_replaces_the_old_row(
    store: WorkbenchStore, chat_id: str
) -> None:
    await store.record_request(chat_id, request())
    await store.record_decision(chat_id, "c1", decision("deny"))
    await store.settle_approvals(chat_id)
    await store.record_request(chat_id, request())
    found = await store.approval(chat_id, "c1")
    assert found is not None and found.decision is None and not found.settled
