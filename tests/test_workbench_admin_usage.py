"""``GET /admin/usage`` over real HTTP on SQLite and PostgreSQL: every account's tokens, turns
and cost, in a ``since``/``until`` window, for administrators only; bad bounds are 422."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, update
from sqlalchemy.ext.asyncio import create_async_engine

from fakes.openai_server import text_reply
from server_kit import Api, Workbench
from test_workbench_admin import with_admin
from test_workbench_usage import PRICES, cost, two_turns
from youyou.adapters.storage.engine import create_engine
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.tables import turn_usage
from youyou.workbench.store.usage import TurnUsageRecord

StartWorkbench = Callable[..., Workbench]
JANUARY = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


async def backdate(db_url: str, owner_id: str, when: datetime) -> None:
    """Move every turn of ``owner_id`` to ``when``, as if they had run then."""
    engine = create_async_engine(db_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                update(turn_usage).where(turn_usage.c.owner_id == owner_id).values(created_at=when)
            )
    finally:
        await engine.dispose()


def usage(turns: int, tokens_in: int, tokens_out: int, priced: bool = True) -> dict[str, Any]:
    return {
        "modelId": None,
        "turns": turns,
        "inputTokens": tokens_in,
        "outputTokens": tokens_out,
        "cost": pytest.approx(cost(tokens_in, tokens_out)) if priced and turns else None,
    }


def rows(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(row["username"], row["usage"]) for row in answer["users"]]


def test_usage_is_summed_per_account_in_a_window(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    wb, root = with_admin(start_workbench, model_keys=PRICES)
    alice, bob = wb.user("alice"), wb.user("bob")
    two_turns(wb, alice, alice.new_session()["id"])  # 70 in, 17 out
    wb.model.enqueue(text_reply("ok", prompt=100, completion=50))
    bob.send(bob.new_session()["id"], "hello")

    everything = root.data("GET", "/admin/usage")
    assert (everything["since"], everything["until"]) == (None, None)
    assert rows(everything) == [
        ("bob", usage(1, 100, 50)),
        ("alice", usage(2, 70, 17)),
        ("root", usage(0, 0, 0)),
    ]
    assert everything["total"] == usage(3, 170, 67)

    bob_id = bob.data("GET", "/auth/me")["id"]
    asyncio.run(backdate(workbench_db, bob_id, JANUARY))
    january = root.data(
        "GET",
        "/admin/usage",
        params={"since": "2026-01-01T08:00:00+08:00", "until": "2026-01-02T00:00:00Z"},
    )
    assert january["since"].startswith("2026-01-01T00:00:00")  # read back in UTC
    assert dict(rows(january))["bob"] == usage(1, 100, 50)  # since is included
    assert dict(rows(january))["alice"] == usage(0, 0, 0)
    assert january["total"] == usage(1, 100, 50)
    # until is excluded; a bound without an offset is UTC
    before = root.data("GET", "/admin/usage", params={"until": "2026-01-01T00:00:00"})
    assert before["total"] == usage(0, 0, 0)
    assert [name for name, _ in rows(before)] == ["alice", "bob", "root"]  # then by name
    since_then = root.data("GET", "/admin/usage", params={"since": "2026-01-01T00:00:01Z"})
    assert since_then["total"] == usage(2, 70, 17)


def test_without_prices_the_cost_is_null(start_workbench: StartWorkbench) -> None:
    wb, root = with_admin(start_workbench)
    carol = wb.user("carol")
    two_turns(wb, carol, carol.new_session()["id"])
    answer = root.data("GET", "/admin/usage")
    assert dict(rows(answer))["carol"] == usage(2, 70, 17, priced=False)
    assert answer["total"] == usage(2, 70, 17, priced=False)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01T00:00:00Z"}, "until"),
        ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-31T23:59:59Z"}, "after until"),
    ],
)
def test_bad_windows_are_unprocessable(
    start_workbench: StartWorkbench, params: dict[str, str], named: str
) -> None:
    _, root = with_admin(start_workbench)
    error = root.error("GET", "/admin/usage", 422, params=params)
    assert error["code"] == "VALIDATION_UNPROCESSABLE"
    assert named in error["message"]


def test_members_are_forbidden_and_strangers_unauthenticated(
    start_workbench: StartWorkbench,
) -> None:
    wb, _ = with_admin(start_workbench)
    member = wb.user("mallory")
    assert member.error("GET", "/admin/usage", 403)["code"] == "FORBIDDEN"
    # who asks is decided before the window is read
    assert member.error("GET", "/admin/usage", 403, params={"since": "x"})["code"] == "FORBIDDEN"
    anonymous = Api(wb.url)
    assert anonymous.error("GET", "/admin/usage", 401)["code"] == "AUTH_UNAUTHENTICATED"
    anonymous.close()


async def test_every_account_is_summed_by_one_query(db_url: str) -> None:
    """However many accounts and turns: one statement reaches the database."""
    engine = create_engine(db_url)
    store = await WorkbenchStore.on(engine)
    try:
        for n in range(5):
            user = await store.create_user(f"user{n}", "hash")
            for turn in range(n):
                record = TurnUsageRecord(user.id, f"s{n}", turn, "m", 10 * n, n, None)
                async with engine.begin() as conn:
                    await conn.execute(
                        turn_usage.insert().values(
                            {**asdict(record), "id": f"u{n}-{turn}", "created_at": NOW}
                        )
                    )
        statements: list[str] = []
        event.listen(
            engine.sync_engine,
            "before_cursor_execute",
            lambda _conn, _cursor, statement, *_: statements.append(statement),
        )
        accounts = await store.usage_by_account(since=JANUARY)
    finally:
        await engine.dispose()
    assert [(a.username, a.usage.turns, a.usage.input_tokens) for a in accounts] == [
        ("user4", 4, 160),
        ("user3", 3, 90),
        ("user2", 2, 40),
        ("user1", 1, 10),
        ("user0", 0, 0),
    ]
    assert len(statements) == 1 and "GROUP BY" in statements[0].upper(), statements
