"""ContextTokenEstimator: every block type counted, each message tokenized only once."""

from __future__ import annotations

import base64
import json

from youyou.adapters.tokens import BpeTokenCounter
from youyou.application.token_estimator import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    ContextTokenEstimator,
)
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import VisibleMessage
from youyou.domain.ledger import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)

PNG_1PX = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(64)).decode()


class CountingCounter:
    """Wraps the real cl100k counter and records every text it is asked to count."""

    def __init__(self) -> None:
        self._inner = BpeTokenCounter("cl100k_base")
        self.calls: list[str] = []

    def count_text(self, text: str) -> int:
        self.calls.append(text)
        return self._inner.count_text(text)


def tokens(text: str) -> int:
    return BpeTokenCounter("cl100k_base").count_text(text)


def user(seq: int | None, *blocks: TextBlock | ImageBlock | FileContentBlock) -> VisibleMessage:
    return VisibleMessage(seq, UserMessage(content=blocks))


def test_text_block() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    vm = user(1, TextBlock(text="hello world"))
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + 2


def test_file_block_counts_name_and_text() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    block = FileContentBlock(file_name="notes.md", media_type="text/markdown", text="今天天气很好")
    expected = MESSAGE_OVERHEAD_TOKENS + tokens("notes.md") + tokens("今天天气很好")
    assert estimator.message_tokens(user(1, block)) == expected


def test_file_block_without_name() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    block = FileContentBlock(text="print('hi')")
    assert estimator.message_tokens(user(1, block)) == MESSAGE_OVERHEAD_TOKENS + tokens(
        "print('hi')"
    )


def test_image_block_has_a_fixed_cost_and_is_not_tokenized() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter)
    vm = user(1, ImageBlock(mime_type="image/png", data_base64=PNG_1PX), TextBlock(text="what?"))
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS + tokens("what?")
    assert counter.calls == ["what?"]


def test_image_cost_is_configurable() -> None:
    estimator = ContextTokenEstimator(CountingCounter(), image_tokens=1600)
    vm = user(1, ImageBlock(mime_type="image/png", data_base64=PNG_1PX))
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + 1600


def test_assistant_message_blocks() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    vm = VisibleMessage(2, AssistantMessage(content=(TextBlock(text="a"), TextBlock(text="b c"))))
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + tokens("a") + tokens("b c")


def test_tool_call_counts_name_and_effective_json_arguments() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter)
    record = ToolCallRecord(
        call_id="c1",
        tool_name="read_file",
        requested_arguments={"path": "a.txt"},
        effective_arguments={"path": "/srv/a.txt", "encoding": "utf-8", "标签": "中文"},
    )
    arguments = json.dumps(record.effective_arguments, ensure_ascii=False)
    expected = MESSAGE_OVERHEAD_TOKENS + tokens("read_file") + tokens(arguments)
    assert estimator.message_tokens(VisibleMessage(3, ToolCall(call=record))) == expected
    assert counter.calls == ["read_file", arguments]


def test_tool_result_counts_output_content() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    output = ToolOutput(content="line 1\nline 2\n", is_error=False, metadata={"bytes": 14})
    vm = VisibleMessage(
        4, ToolResult(result=ToolResultRecord(call_id="c1", tool_name="read_file", output=output))
    )
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + tokens("line 1\nline 2\n")


def test_system_message() -> None:
    estimator = ContextTokenEstimator(CountingCounter())
    vm = VisibleMessage(5, SystemMessage(content="be brief"))
    assert estimator.message_tokens(vm) == MESSAGE_OVERHEAD_TOKENS + tokens("be brief")


def test_ledger_messages_are_tokenized_once_by_seq() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter)
    history = [user(seq, TextBlock(text=f"message number {seq}")) for seq in range(1, 101)]
    total = estimator.messages_tokens(history)
    assert len(counter.calls) == 100
    assert total == sum(
        MESSAGE_OVERHEAD_TOKENS + tokens(f"message number {s}") for s in range(1, 101)
    )

    history.append(user(101, TextBlock(text="one more")))
    assert estimator.messages_tokens(history) == total + MESSAGE_OVERHEAD_TOKENS + 2
    assert counter.calls[100:] == ["one more"]  # only the new message was tokenized


def test_synthetic_messages_are_cached_by_content() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter)
    summary = "[summary]\n\nthe user asked about tokens"
    first = estimator.message_tokens(VisibleMessage(None, SystemMessage(content=summary)))
    again = estimator.message_tokens(VisibleMessage(None, SystemMessage(content=summary)))
    other = estimator.message_tokens(VisibleMessage(None, SystemMessage(content="[incomplete]")))
    assert first == again == MESSAGE_OVERHEAD_TOKENS + tokens(summary)
    assert other == MESSAGE_OVERHEAD_TOKENS + tokens("[incomplete]")
    assert counter.calls == [summary, "[incomplete]"]


def test_synthetic_key_ignores_image_bytes() -> None:
    # A pending user message (no seq yet) may carry a 20 MB image: its cache key must not.
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter)
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(3_000_000)).decode()
    first = user(None, ImageBlock(mime_type="image/png", data_base64=big), TextBlock(text="see"))
    second = user(
        None, ImageBlock(mime_type="image/png", data_base64=PNG_1PX), TextBlock(text="see")
    )
    expected = MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS + tokens("see")
    assert estimator.message_tokens(first) == estimator.message_tokens(second) == expected
    assert counter.calls == ["see"]


def test_synthetic_cache_is_bounded() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter, synthetic_cache_size=2)
    texts = ["a", "b", "c"]
    for text in texts:
        estimator.message_tokens(VisibleMessage(None, SystemMessage(content=text)))
    estimator.message_tokens(VisibleMessage(None, SystemMessage(content="c")))  # still cached
    estimator.message_tokens(VisibleMessage(None, SystemMessage(content="a")))  # was evicted
    assert counter.calls == ["a", "b", "c", "a"]


def test_text_tokens_caches_recent_prompts() -> None:
    counter = CountingCounter()
    estimator = ContextTokenEstimator(counter, text_cache_size=2)
    prompt = "You are YouYou, a careful on-call assistant. 请用中文回答。"
    assert estimator.text_tokens(prompt) == tokens(prompt)
    for _ in range(5):
        assert estimator.text_tokens(prompt) == tokens(prompt)
    estimator.text_tokens("augmentation one")
    estimator.text_tokens(prompt)  # recently used: still cached
    estimator.text_tokens("augmentation two")  # evicts "augmentation one"
    estimator.text_tokens("augmentation one")
    assert counter.calls == [prompt, "augmentation one", "augmentation two", "augmentation one"]


def test_empty_history() -> None:
    assert ContextTokenEstimator(CountingCounter()).messages_tokens([]) == 0
