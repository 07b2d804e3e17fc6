"""Searching message text on SQLite and PostgreSQL, over real HTTP and on the store:
owner-scoped, every word in one message or the title, the newest matching message as a marked
snippet, paged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete

from fakes.openai_server import text_reply
from server_kit import Api, Workbench, wait_until
from workbench_kit import T0, chat_record
from youyou.adapters.storage.engine import create_engine
from youyou.workbench.message_index import snippet
from youyou.workbench.store import WorkbenchStore
from youyou.workbench.store.message_texts import MessageText
from youyou.workbench.store.tables import message_texts

StartWorkbench = Callable[..., Workbench]


def _chat(wb: Workbench, api: Api, title: str | None, question: str, answer: str) -> str:
    sid: str = api.new_session(**({"title": title} if title else {}))["id"]
    wb.model.enqueue(text_reply(answer))
    api.send(sid, question)
    return sid


def _search(api: Api, q: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.data(
        "GET", "/chat/sessions/search", params={"q": q, **params}
    )["items"]
    return items


def _marked(hit: dict[str, Any]) -> list[str]:
    return [part["text"] for part in hit["match"]["parts"] if part["match"]]


def test_search_finds_words_of_questions_and_answers_of_the_owner_only(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    alice, bob = wb.user("alice"), wb.user("bob")
    pods = _chat(
        wb, alice, "deploy", "the payments-api pod is OOMKilled again", "Raise the memory limit."
    )
    pool = _chat(wb, alice, None, "数据库连接池耗尽了怎么办", "先检查连接泄漏，再调大连接池。")
    kafka = alice.new_session(title="Kafka lag on orders")["id"]
    _chat(wb, bob, None, "bob's pod is OOMKilled too", "Same fix.")

    [hit] = _search(alice, "oomkilled")
    assert hit["session"]["id"] == pods and hit["session"]["title"] == "deploy"
    assert hit["match"]["role"] == "user" and _marked(hit) == ["OOMKilled"]
    assert hit["match"]["snippet"] == "the payments-api pod is OOMKilled again"
    assert hit["match"]["seq"] >= 1 and hit["match"]["createdAt"]

    [answer] = _search(alice, "Memory  LIMIT")
    assert answer["match"]["role"] == "assistant" and _marked(answer) == ["memory", "limit"]

    [chinese] = _search(alice, "连接池")
    assert chinese["session"]["id"] == pool
    assert chinese["match"]["role"] == "assistant"  # the newest matching message
    assert _marked(chinese) == ["连接池"]

    [title_only] = _search(alice, "kafka")
    assert title_only["session"]["id"] == kafka and title_only["match"] is None
    assert _search(alice, "payments memory") == []  # the words are in two messages
    assert [h["session"]["id"] for h in _search(alice, "pod")] == [pods]
    assert [h["session"]["id"] for h in _search(bob, "pod")] != [pods]
    assert _search(bob, "连接池") == [] and _search(bob, "kafka") == []


def test_search_treats_wildcards_literally_and_pages_newest_first(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("carol")
    literal = _chat(wb, api, None, "cpu at 100% on node_7", "Throttle it.")
    _chat(wb, api, None, "cpu at 1000 on node-7", "Fine.")
    assert [h["session"]["id"] for h in _search(api, "100%")] == [literal]
    assert [h["session"]["id"] for h in _search(api, "node_7")] == [literal]
    sessions = [_chat(wb, api, None, f"disk alert {n}", "Clean up.") for n in range(3)]
    seen, cursor = [], None
    while True:
        params = {"q": "disk", "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.data("GET", "/chat/sessions/search", params=params)
        seen += [h["session"]["id"] for h in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == sessions[::-1]


def test_a_long_message_is_cut_around_its_match_and_bad_queries_are_refused(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("dave")
    filler = "lorem ipsum " * 100
    _chat(wb, api, None, f"{filler}NEEDLE-42 found\n\nin   the {filler}", "ok")
    [hit] = _search(api, "needle-42")
    text = hit["match"]["snippet"]
    assert text.startswith("…") and text.endswith("…") and len(text) < 260
    assert "NEEDLE-42 found in the lorem" in text  # whitespace collapsed
    english = {"Accept-Language": "en"}
    for params in ({"q": "   "}, {}, {"q": "x", "cursor": "garbage"}, {"q": "x", "limit": 0}):
        error = api.error("GET", "/chat/sessions/search", 400, params=params, headers=english)
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT", params
    assert Api(wb.url).error("GET", "/chat/sessions/search", 401, params={"q": "x"})["code"] == (
        "AUTH_UNAUTHENTICATED"
    )


async def _forget_index(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(delete(message_texts))
    finally:
        await engine.dispose()


def test_sessions_from_before_the_index_are_indexed_at_start(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    first = start_workbench()
    api = first.user("erin")
    sid = _chat(first, api, None, "legacy incident about zookeeper", "Restart it.")
    first.close()
    assert first.server.stop() == 0
    asyncio.run(_forget_index(workbench_db))  # as before the index existed
    second = start_workbench()
    again = second.signed_in("erin")
    assert wait_until(lambda: bool(_search(again, "zookeeper")), timeout_s=30)
    assert [h["session"]["id"] for h in _search(again, "zookeeper")] == [sid]


async def test_a_long_session_is_indexed_in_batches_once_and_deleted_with_it(
    store: WorkbenchStore,
) -> None:
    owner = await store.create_user("fay", "hash")
    other = await store.create_user("gil", "hash")
    chat = chat_record(owner.id, title="long")
    await store.create_chat_session(chat)
    texts = [
        MessageText(seq, "user", f"message {seq}" + (" needle" if seq == 1234 else ""), T0)
        for seq in range(1, 6001)  # more rows than SQLite binds in one statement
    ]
    await store.index_messages(chat.id, texts)
    await store.index_messages(chat.id, texts[-10:])  # again: no duplicates, no error
    assert await store.indexed_through(chat.id) == 6000
    [hit] = (await store.search_chat_sessions(owner.id, "NEEDLE", limit=5, cursor=None))[0]
    assert hit.message == texts[1233]
    assert await store.search_chat_sessions(other.id, "needle", limit=5, cursor=None) == ([], None)
    assert await store.unindexed_chat_sessions(10) == []
    await store.save_tool_durations(chat.id, 1, {"call_1": 12})
    assert await store.tool_durations(chat.id) == {(1, "call_1"): 12}
    assert await store.delete_chat_session(chat.id)  # its rows go with it
    assert await store.indexed_through(chat.id) == 0
    assert await store.tool_durations(chat.id) == {}


async def test_a_turn_is_indexed_from_memory_only_where_the_index_reaches_it(
    store: WorkbenchStore,
) -> None:
    """The turn's own messages are indexed without reading the ledger when the index holds
    everything before them; a gap (an earlier turn's indexing failed) is left to the ledger."""
    owner = await store.create_user("hal", "hash")
    chat = chat_record(owner.id, title="turns")
    await store.create_chat_session(chat)
    first = [MessageText(1, "user", "disk full", T0), MessageText(2, "assistant", "ok", T0)]
    assert await store.index_messages_after(chat.id, 0, first)
    assert await store.indexed_through(chat.id) == 2
    later = [MessageText(5, "user", "and now?", T0)]
    assert not await store.index_messages_after(chat.id, 4, later)  # seq 3 and 4 are missing
    assert await store.indexed_through(chat.id) == 2, "nothing written past a gap"
    again = [*first, MessageText(3, "user", "more", T0)]
    assert await store.index_messages_after(chat.id, 0, again)  # the indexed ones left out
    assert await store.indexed_through(chat.id) == 3
    [hit] = (await store.search_chat_sessions(owner.id, "more", limit=5, cursor=None))[0]
    assert hit.message == again[2]


def test_a_snippet_marks_every_occurrence_even_where_folding_changes_lengths() -> None:
    parts = snippet("İstanbul: Disk full on disk-2; DISK again", ["disk"])
    assert [(p.text, p.match) for p in parts] == [
        ("İstanbul: ", False),
        ("Disk", True),
        (" full on ", False),
        ("disk", True),
        ("-2; ", False),
        ("DISK", True),
        (" again", False),
    ]
