"""Memory extraction templates, memory merging and the tolerant mutation parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    MessageStatus,
    Metadata,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.memory import CreateMemory, DeleteMemory, Memory, SkipMemory, UpdateMemory
from youyou.domain.memory_extraction import (
    MEMORY_EXTRACTION_PROMPT,
    MutationContext,
    has_conversation,
    merge_memories,
    parse_mutations,
    render_extraction_input,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC)
OLD = NOW - timedelta(days=30)
EXISTING = [
    Memory(id="m1", namespace="ns", content="User likes tea", created_at=OLD, updated_at=OLD),
    Memory(id="m2", namespace="ns", content="用户住在北京", created_at=OLD, updated_at=OLD),
]


def context() -> MutationContext:
    ids = count(1)
    return MutationContext(
        namespace="ns",
        now=NOW,
        session_id="s1",
        seq_start=5,
        seq_end=9,
        new_id=lambda: f"new{next(ids)}",
    )


def parse(text: str) -> tuple[list[object], list[str]]:
    parsed = parse_mutations(text, EXISTING, context())
    return list(parsed.mutations), list(parsed.warnings)


def event(seq: int, payload: object) -> LedgerEvent:
    return LedgerEvent.model_validate({"seq": seq, "timestamp": NOW, "payload": payload})


def test_prompt_asks_for_strict_json_with_the_four_ops() -> None:
    for word in ('"mutations"', '"create"', '"update"', '"delete"', '"skip"', "strict JSON"):
        assert word in MEMORY_EXTRACTION_PROMPT


def test_all_four_ops_become_mutations_with_provenance() -> None:
    text = json.dumps(
        {
            "mutations": [
                {"op": "create", "content": "User is a backend engineer", "reason": "said so"},
                {
                    "op": "update",
                    "id": "m1",
                    "content": "User prefers coffee now",
                    "reason": "changed",
                },
                {"op": "delete", "id": "m2", "reason": "moved"},
                {"op": "skip", "reason": "small talk"},
            ]
        }
    )
    mutations, warnings = parse(text)
    assert warnings == []
    created = Memory(
        id="new1",
        namespace="ns",
        content="User is a backend engineer",
        created_at=NOW,
        updated_at=NOW,
        source_session_id="s1",
        source_seq_start=5,
        source_seq_end=9,
    )
    updated = created.model_copy(
        update={"id": "m1", "content": "User prefers coffee now", "created_at": OLD}
    )
    assert mutations == [
        CreateMemory(created),
        UpdateMemory(updated),
        DeleteMemory("m2"),
        SkipMemory("small talk"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"mutations": [{"op": "create", "content": "Likes jazz", "reason": "r"}]}\n```',
        'Here you go:\n{"mutations": [{"op": "create", "content": "Likes jazz"}]}\nDone.',
        '```\n[{"op": "create", "content": "Likes jazz", "reason": "r"}]\n```',
        'Sure {not json} then {"mutations": [{"op": "create", "content": "Likes jazz"}]}',
    ],
)
def test_json_is_found_in_fences_and_prose(text: str) -> None:
    mutations, warnings = parse(text)
    assert warnings == []
    assert [type(m) for m in mutations] == [CreateMemory]
    assert isinstance(mutations[0], CreateMemory)
    assert mutations[0].memory.content == "Likes jazz"


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("", "no output"),
        ("   \n", "no output"),
        ("I could not find anything to remember.", "no JSON mutations"),
        ('{"mutations": "none"}', "no JSON mutations"),
        ('{"result": []}', "no JSON mutations"),
        ('{"mutations": [', "no JSON mutations"),
    ],
)
def test_unusable_output_is_a_warning_without_mutations(text: str, warning: str) -> None:
    mutations, warnings = parse(text)
    assert mutations == []
    assert len(warnings) == 1
    assert warning in warnings[0]


def test_bad_items_are_rejected_one_by_one() -> None:
    text = json.dumps(
        {
            "mutations": [
                {"op": "merge", "id": "m1"},
                {"op": "update", "id": "ghost", "content": "x"},
                {"op": "delete", "id": "ghost"},
                {"op": "delete", "id": 7},
                {"op": "update", "id": "m1"},
                {"op": "create", "content": "   "},
                "create something",
                {"op": "delete", "id": "m2"},
                {"op": "update", "id": "m2", "content": "用户搬到了上海"},
                {"op": "create", "content": "Keeps a cat"},
            ]
        }
    )
    mutations, warnings = parse(text)
    assert mutations[0] == DeleteMemory("m2")
    assert isinstance(mutations[1], CreateMemory)
    assert len(mutations) == 2
    indexes = [0, 1, 2, 3, 4, 5, 6, 8]
    assert [w.split(":", 1)[0] for w in warnings] == [f"mutation {i}" for i in indexes]
    assert "unknown op 'merge'" in warnings[0]
    assert "unknown memory id 'ghost'" in warnings[1]
    assert "unknown memory id 'm2'" in warnings[7]


def test_extraction_input_lists_window_and_all_memories() -> None:
    call = ToolCallRecord(
        call_id="c1",
        tool_name="weather",
        requested_arguments={},
        effective_arguments={"city": "北京"},
    )
    events = [
        event(
            5,
            UserMessage(
                content=(
                    TextBlock(text="我下周搬去上海"),
                    ImageBlock(mime_type="image/png", data_base64="AA=="),
                    FileContentBlock(file_name="notes.md", text="moving checklist"),
                )
            ),
        ),
        event(6, ToolCall(call=call)),
        event(
            7,
            ToolResult(
                result=ToolResultRecord(
                    call_id="c1", tool_name="weather", output=ToolOutput(content="晴" * 5000)
                )
            ),
        ),
        event(8, Metadata(key="context_compaction", value={"x": 1})),
        event(
            9, AssistantMessage(content=(TextBlock(text="好的"),), status=MessageStatus.INCOMPLETE)
        ),
    ]
    rendered = render_extraction_input("s1", events, EXISTING)
    assert 'session_id="s1" from_seq="5" to_seq="9"' in rendered
    assert "[5] user: 我下周搬去上海\n[image]\n[file notes.md]\nmoving checklist" in rendered
    assert '[6] tool_call weather: {"city": "北京"}' in rendered
    assert "[7] tool_result weather: " + "晴" * 2000 + "\n" in rendered
    assert "[8]" not in rendered
    assert "[9] assistant (interrupted): 好的" in rendered
    assert '{"id": "m2", "content": "用户住在北京"' in rendered
    assert 'count="2"' in rendered


def test_empty_memory_list_is_marked() -> None:
    window = [event(1, UserMessage(content=(TextBlock(text="hi"),)))]
    rendered = render_extraction_input("s1", window, [])
    assert "(none)" in rendered


def test_has_conversation_ignores_metadata_only_windows() -> None:
    assert not has_conversation([])
    assert not has_conversation([event(3, Metadata(key="memory_checkpoint", value=2))])
    assert has_conversation([event(3, UserMessage(content=(TextBlock(text="hi"),)))])


def test_merge_keeps_first_list_order_dedupes_and_caps() -> None:
    a, b = EXISTING
    c = a.model_copy(update={"id": "m3"})
    assert merge_memories([b, a], [a, c], 10) == [b, a, c]
    assert merge_memories([b, a], [a, c], 2) == [b, a]
    assert merge_memories([b], [c], 0) == []
