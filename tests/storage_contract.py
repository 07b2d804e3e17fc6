"""Behaviour every ``SessionStorage`` adapter must show (docs/sessions.md, docs/storage.md).

Not collected by itself: ``test_storage_sql.py`` and ``test_storage_memory.py`` subclass
``SessionStorageContract`` and provide the ``storage`` fixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

import pytest

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.ledger import (
    META_CONTEXT_COMPACTION,
    META_MEMORY_CHECKPOINT,
    META_SESSION_PROFILE,
    META_SKILL_INVOCATIONS,
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    SessionEventPayload,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.session import (
    SearchMode,
    SessionHead,
    SessionListQuery,
    SessionSearchQuery,
    SessionSummary,
    next_summary,
)
from youyou.ports.session_storage import SessionStorage

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def profile(model_id: str = "gpt-4o-mini") -> Metadata:
    value = {"model_id": model_id, "system_prompt_override": None, "memory_namespace": "default"}
    return Metadata(key=META_SESSION_PROFILE, value=value)


def user(text: str) -> UserMessage:
    return UserMessage(content=(TextBlock(text=text),))


def every_payload() -> list[SessionEventPayload]:
    """One of each payload variant, with the awkward parts: images, unicode, nested args."""
    return [
        profile(),
        UserMessage(
            content=(
                TextBlock(text="/triage 订单服务 p99 飙升 🚨\nsecond line"),
                ImageBlock(mime_type="image/png", data_base64=PNG_1PX),
                FileContentBlock(file_name="alert.log", media_type="text/plain", text="E 500\n"),
            )
        ),
        Metadata(key=META_SKILL_INVOCATIONS, value=[{"skill_name": "triage"}]),
        AssistantMessage(content=(TextBlock(text="Checking the dashboards."),)),
        ToolCall(
            call=ToolCallRecord(
                call_id="call_1",
                tool_name="query_metrics",
                requested_arguments={"query": "p99", "window": "1h"},
                effective_arguments={"query": "p99", "window": "15m", "labels": {"svc": "订单"}},
            )
        ),
        ToolResult(
            result=ToolResultRecord(
                call_id="call_1",
                tool_name="query_metrics",
                output=ToolOutput(
                    content='{"p99_ms": 1250.5}', is_error=True, metadata={"rows": 3, "x": None}
                ),
            )
        ),
        SystemMessage(content="Tool output truncated."),
        AssistantMessage(content=(TextBlock(text="Partial"),), status=MessageStatus.INCOMPLETE),
        Metadata(
            key=META_CONTEXT_COMPACTION,
            value={"mode": "summary", "replaces_through_seq": 5, "summary_body": "so far…"},
        ),
        Metadata(key=META_MEMORY_CHECKPOINT, value={"last_seq": 9, "turn_index": 2}),
        Metadata(key="custom", value=[1, 2.5, "three", True, None, {"nested": {"deep": []}}]),
    ]


async def append_all(
    storage: SessionStorage,
    session_id: str,
    payloads: Sequence[SessionEventPayload],
    *,
    start: datetime = T0,
    first_seq: int = 1,
    previous: SessionSummary | None = None,
) -> tuple[list[LedgerEvent], SessionSummary]:
    """Append like the kernel does: the summary comes from the domain projection."""
    events = []
    summary = previous
    for offset, payload in enumerate(payloads):
        event = LedgerEvent(
            seq=first_seq + offset, timestamp=start + timedelta(seconds=offset), payload=payload
        )
        summary = next_summary(summary, session_id, event)
        await storage.append_event(session_id, event, summary)
        events.append(event)
    assert summary is not None
    return events, summary


async def make_session(
    storage: SessionStorage, session_id: str, title: str, updated_at: datetime
) -> SessionSummary:
    """A two-event session whose last event (and so updated_at) is at ``updated_at``."""
    start = updated_at - timedelta(seconds=1)
    _, summary = await append_all(storage, session_id, [profile(), user(title)], start=start)
    return summary


def assert_error(exc: pytest.ExceptionInfo[AgentError], code: ErrorCode) -> None:
    assert exc.value.code is code, exc.value
    assert exc.value.source is ErrorSource.STORAGE


async def all_pages(storage: SessionStorage, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await storage.list_sessions(SessionListQuery(limit=limit, cursor=cursor))
        pages.append([s.session_id for s in page.items])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def ids(summaries: Sequence[SessionSummary]) -> list[str]:
    return [s.session_id for s in summaries]


class SessionStorageContract:
    async def test_every_payload_variant_round_trips_exactly(self, storage: SessionStorage) -> None:
        tz = timezone(timedelta(hours=8))
        events, _ = await append_all(storage, "s-1", every_payload(), start=T0.astimezone(tz))
        loaded = await storage.load_events("s-1")
        assert list(loaded) == events
        assert [e.model_dump_json() for e in loaded] == [e.model_dump_json() for e in events]

    async def test_load_events_after_seq_returns_the_tail_in_order(
        self, storage: SessionStorage
    ) -> None:
        events, _ = await append_all(storage, "s-1", every_payload())
        assert list(await storage.load_events("s-1", after_seq=7)) == events[7:]
        assert list(await storage.load_events("s-1", after_seq=len(events))) == []

    async def test_summary_is_stored_as_given(self, storage: SessionStorage) -> None:
        _, summary = await append_all(storage, "s-1", [profile(), user("/triage disk full")])
        page = await storage.list_sessions(SessionListQuery())
        assert page.items == (summary,)
        assert summary.title == "disk full" and summary.message_count == 1
        custom = SessionSummary(
            session_id="s-1",
            title="Chosen by the kernel",
            created_at=T0 - timedelta(days=1),
            updated_at=T0 + timedelta(hours=1),
            message_count=42,
        )
        event = LedgerEvent(seq=3, timestamp=T0, payload=SystemMessage(content="x"))
        await storage.append_event("s-1", event, custom)
        assert (await storage.list_sessions(SessionListQuery())).items == (custom,)
        assert (await storage.load_head("s-1")).summary == custom

    async def test_duplicate_seq_is_rejected_and_changes_nothing(
        self, storage: SessionStorage
    ) -> None:
        events, summary = await append_all(storage, "s-1", [profile(), user("hello")])
        for seq in (2, 1):
            clash = LedgerEvent(seq=seq, timestamp=T0 + timedelta(hours=1), payload=user("dup"))
            with pytest.raises(AgentError) as exc:
                await storage.append_event("s-1", clash, next_summary(summary, "s-1", clash))
            assert_error(exc, ErrorCode.STORAGE_ERROR)
        assert list(await storage.load_events("s-1")) == events
        assert (await storage.load_head("s-1")).summary == summary

    async def test_summary_of_another_session_is_rejected(self, storage: SessionStorage) -> None:
        event = LedgerEvent(seq=1, timestamp=T0, payload=profile())
        with pytest.raises(AgentError) as exc:
            await storage.append_event("s-1", event, next_summary(None, "s-2", event))
        assert_error(exc, ErrorCode.STORAGE_ERROR)
        for session_id in ("s-1", "s-2"):
            with pytest.raises(AgentError) as missing:
                await storage.load_events(session_id)
            assert_error(missing, ErrorCode.SESSION_NOT_FOUND)

    async def test_unknown_session_is_not_found(self, storage: SessionStorage) -> None:
        for call in (storage.load_events, storage.load_head, storage.delete_session):
            with pytest.raises(AgentError) as exc:
                await call("nope")
            assert_error(exc, ErrorCode.SESSION_NOT_FOUND)

    async def test_head_points_at_profile_and_latest_compaction_and_checkpoint(
        self, storage: SessionStorage
    ) -> None:
        events, summary = await append_all(storage, "s-1", [profile(), user("hi")])
        head = await storage.load_head("s-1")
        assert (head.summary, head.last_seq, head.profile) == (summary, 2, events[0])
        assert head.latest_compaction is None and head.latest_memory_checkpoint is None

        def compaction(through: int) -> Metadata:
            value = {"mode": "summary", "replaces_through_seq": through, "summary_body": "s"}
            return Metadata(key=META_CONTEXT_COMPACTION, value=value)

        def checkpoint(last_seq: int) -> Metadata:
            value = {"last_seq": last_seq, "turn_index": 1}
            return Metadata(key=META_MEMORY_CHECKPOINT, value=value)

        more, summary = await append_all(
            storage,
            "s-1",
            [compaction(2), checkpoint(3), user("again"), compaction(5), user("last")],
            first_seq=3,
            previous=summary,
        )
        head = await storage.load_head("s-1")
        assert head.summary == summary
        assert head.last_seq == 7
        assert head.profile == events[0]
        assert head.latest_compaction == more[3]
        assert head.latest_memory_checkpoint == more[1]

    async def test_load_session_reads_the_head_and_the_events_after_the_seq_it_picks(
        self, storage: SessionStorage
    ) -> None:
        events, _ = await append_all(storage, "s-1", [profile(), user("a"), user("b"), user("c")])
        seen: list[SessionHead] = []

        def after(head: SessionHead) -> int:
            seen.append(head)
            return head.last_seq - 2

        head, loaded = await storage.load_session("s-1", after)
        assert seen == [head] and head == await storage.load_head("s-1")
        assert list(loaded) == events[2:]
        head, loaded = await storage.load_session("s-1", lambda head: head.last_seq)
        assert list(loaded) == []
        with pytest.raises(AgentError) as exc:
            await storage.load_session("nope", lambda head: 0)
        assert_error(exc, ErrorCode.SESSION_NOT_FOUND)

    async def test_head_follows_a_newer_profile(self, storage: SessionStorage) -> None:
        _, summary = await append_all(storage, "s-1", [profile("a"), user("hi")])
        newer, _ = await append_all(storage, "s-1", [profile("b")], first_seq=3, previous=summary)
        assert (await storage.load_head("s-1")).profile == newer[0]

    async def test_list_pages_through_ties_in_updated_at(self, storage: SessionStorage) -> None:
        expected: list[tuple[datetime, str]] = []
        for n in range(23):
            at = T0 + timedelta(minutes=n // 4)  # groups of four share updated_at
            session_id = f"s-{(n * 7) % 23:02d}"
            await make_session(storage, session_id, f"title {n}", at)
            expected.append((at, session_id))
        order = [sid for _, sid in sorted(expected, reverse=True)]
        for limit in (1, 4, 5, 23, 50):
            pages = await all_pages(storage, limit)
            assert [sid for page in pages for sid in page] == order
            assert all(len(page) == limit for page in pages[:-1])
        assert await all_pages(storage, 23) == [order]

    async def test_empty_catalog_has_one_empty_page(self, storage: SessionStorage) -> None:
        page = await storage.list_sessions(SessionListQuery())
        assert page.items == () and page.next_cursor is None

    @pytest.mark.parametrize("cursor", ["", "not-base64!", "eyJ1IjogMX0", "bnVsbA"])
    async def test_bad_cursor_or_limit_is_input_validation(
        self, storage: SessionStorage, cursor: str
    ) -> None:
        await make_session(storage, "s-1", "t", T0)
        with pytest.raises(AgentError) as exc:
            await storage.list_sessions(SessionListQuery(limit=5, cursor=cursor))
        assert_error(exc, ErrorCode.INPUT_VALIDATION)
        with pytest.raises(AgentError) as exc:
            await storage.list_sessions(SessionListQuery(limit=0))
        assert_error(exc, ErrorCode.INPUT_VALIDATION)
        with pytest.raises(AgentError) as exc:
            await storage.find_sessions(SessionSearchQuery(SearchMode.ID_PREFIX, "s"), 0)
        assert_error(exc, ErrorCode.INPUT_VALIDATION)

    async def test_find_by_id_prefix_title_or_both(self, storage: SessionStorage) -> None:
        titles = {
            "abc-1": "CPU alert on checkout",
            "abd-2": "100% disk on db-1",
            "ABC-3": "rename snake_case_name",
            "x-4": "snakeXcaseYname and 100 percent",
            "x-5": "Straße ÜBER alles abc",
            "x%6": "plain",
        }
        for n, (session_id, title) in enumerate(titles.items()):
            await make_session(storage, session_id, title, T0 + timedelta(minutes=n))

        async def find(mode: SearchMode, text: str, limit: int = 10) -> list[str]:
            return ids(await storage.find_sessions(SessionSearchQuery(mode, text), limit))

        assert await find(SearchMode.ID_PREFIX, "abc") == ["abc-1"]
        assert await find(SearchMode.ID_PREFIX, "ab") == ["abd-2", "abc-1"]
        assert await find(SearchMode.ID_PREFIX, "x%") == ["x%6"]
        assert await find(SearchMode.ID_PREFIX, "zzz") == []
        assert await find(SearchMode.TITLE_CONTAINS, "cpu ALERT") == ["abc-1"]
        assert await find(SearchMode.TITLE_CONTAINS, "100%") == ["abd-2"]
        assert await find(SearchMode.TITLE_CONTAINS, "e_c") == ["ABC-3"]
        assert await find(SearchMode.TITLE_CONTAINS, "über") == ["x-5"]
        assert await find(SearchMode.TITLE_CONTAINS, "\\") == []
        assert await find(SearchMode.ID_PREFIX_OR_TITLE, "abc") == ["x-5", "abc-1"]
        assert await find(SearchMode.ID_PREFIX_OR_TITLE, "abc", limit=1) == ["x-5"]
        # x-4 matches by id and by title ("snakeXcase"): listed once
        assert await find(SearchMode.ID_PREFIX_OR_TITLE, "x") == ["x%6", "x-5", "x-4"]

    async def test_find_returns_the_stored_summaries(self, storage: SessionStorage) -> None:
        summary = await make_session(storage, "s-1", "Latency regression", T0)
        found = await storage.find_sessions(SessionSearchQuery(SearchMode.TITLE_CONTAINS, "lat"), 5)
        assert list(found) == [summary]

    async def test_delete_removes_the_session_and_its_events(self, storage: SessionStorage) -> None:
        await append_all(storage, "s-1", every_payload())
        kept, _ = await append_all(storage, "s-2", [profile(), user("keep me")])
        await storage.delete_session("s-1")
        for call in (storage.load_events, storage.load_head, storage.delete_session):
            with pytest.raises(AgentError) as exc:
                await call("s-1")
            assert_error(exc, ErrorCode.SESSION_NOT_FOUND)
        assert ids((await storage.list_sessions(SessionListQuery())).items) == ["s-2"]
        assert list(await storage.load_events("s-2")) == kept
        # the id can start a fresh session afterwards
        fresh, _ = await append_all(storage, "s-1", [profile()])
        assert list(await storage.load_events("s-1")) == fresh
