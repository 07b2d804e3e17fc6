"""The pure part of recall: terms, ranking, excerpts and the token budget (domain/recall.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from youyou.domain.content import TextBlock
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    Metadata,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.recall import (
    DEFAULT_RECALL_TOKENS,
    RecallEntry,
    RecallRequest,
    query_terms,
    recall,
    recall_entries,
    recall_request,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def chars(text: str) -> int:
    """One token per character: budgets become exact to check."""
    return len(text)


def search(query: str, budget: int = 10_000) -> RecallRequest:
    return RecallRequest(query=query, from_seq=None, to_seq=None, budget=budget, cap=budget)


def entries(*texts: str) -> list[RecallEntry]:
    return [RecallEntry(seq, text) for seq, text in enumerate(texts, start=2)]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Timeout ON db-7.prod.internal,", ("timeout", "on", "db-7.prod.internal")),
        ("数据库连接超时", ("数据", "据库", "库连", "连接", "接超", "超时")),
        ("连接db-7超时", ("连接", "db-7", "超时")),
        ("“库” 库", ("库",)),
        ("  , 。 ", ()),
    ],
)
def test_terms_are_words_and_pairs_of_chinese_characters(
    query: str, terms: tuple[str, ...]
) -> None:
    assert query_terms(query) == terms


def test_more_matched_terms_rank_first_then_the_newest() -> None:
    found = recall(
        entries("disk full on db-7", "db-7 refused", "nothing", "DB-7 REFUSED again", "refused"),
        search("db-7 refused"),
        through_seq=10,
        count=chars,
    )
    assert [line.split(" ", 1)[0] for line in found.split("\n\n")[1:]] == [
        "#5",  # both terms, newest (case does not matter)
        "#3",  # both terms
        "#6",  # one term, newest
        "#2",
    ]


def test_a_long_match_is_shown_as_excerpts_around_its_terms() -> None:
    long = "x" * 3000 + " ERROR: host db-7 down " + "y" * 3000
    found = recall(entries(long), search("db-7"), through_seq=5, count=chars)
    assert "ERROR: host db-7 down" in found
    assert f"[excerpts of {len(long):,} characters; read #2 alone with from_seq/to_seq" in found
    assert len(found) < 1000


@pytest.mark.parametrize("budget", [300, 333, 500, 1000])
def test_the_answer_never_exceeds_its_budget(budget: int) -> None:
    many = entries(*(f"message {i}: " + "word " * (i * 7) for i in range(40)))
    for request in (
        search("message word", budget),
        RecallRequest(query=None, from_seq=1, to_seq=None, budget=budget, cap=5000),
    ):
        answer = recall(many, request, through_seq=41, count=chars)
        assert chars(answer) <= budget
        assert f"[Cut at the budget of {budget} tokens" in answer


def test_max_tokens_is_capped_by_the_window_and_arguments_are_required() -> None:
    capped = recall_request({"query": "x", "max_tokens": 10**6}, context_window=8000)
    assert isinstance(capped, RecallRequest)
    assert (capped.budget, capped.cap) == (1000, 1000)
    default = recall_request({"from_seq": 3}, context_window=200_000)
    assert isinstance(default, RecallRequest)
    assert default.budget == DEFAULT_RECALL_TOKENS
    assert isinstance(recall_request({"query": "  "}, context_window=8000), str)


def test_only_messages_behind_the_boundary_are_read() -> None:
    def event(seq: int, payload: object) -> LedgerEvent:
        return LedgerEvent.model_validate({"seq": seq, "timestamp": NOW, "payload": payload})

    ledger = [
        event(1, Metadata(key="session_profile", value={})),
        event(2, UserMessage(content=(TextBlock(text="ping db-7"),))),
        event(
            3,
            ToolResult(
                result=ToolResultRecord(
                    call_id="c", tool_name="ping", output=ToolOutput(content="timeout")
                )
            ),
        ),
        event(4, AssistantMessage(content=(TextBlock(text="after the boundary"),))),
    ]
    behind = recall_entries(ledger, through_seq=3)
    assert behind == [
        RecallEntry(2, "user: ping db-7"),
        RecallEntry(3, "tool_result ping: timeout"),
    ]
    later = RecallRequest(query=None, from_seq=4, to_seq=None, budget=500, cap=500)
    assert "still in your context" in recall(behind, later, through_seq=3, count=chars)
