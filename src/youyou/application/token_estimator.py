"""Token estimates of the model-visible context, each message counted only once.

The context manager checks its budget before every request; re-tokenizing the whole history each
turn would make a turn's cost grow with the session. Ledger messages are immutable, so their count
is cached by ``source_seq``; the few synthetic messages (summary, markers) and the system prompt
are cached by their text in small LRU caches. Use one estimator per session: ``source_seq`` is
only unique within a session's ledger.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.context import VisibleMessage, VisiblePayload
from youyou.domain.ledger import AssistantMessage, ToolCall, ToolResult, UserMessage
from youyou.ports.token_counter import TokenCounter

MESSAGE_OVERHEAD_TOKENS = 4
"""Role marker and separators that chat formats wrap around every message."""

IMAGE_TOKENS = 765
"""Fixed cost of one image, without decoding it: OpenAI's high-detail cost of a 1024x1024 image
(85 base + 4 tiles x 170). Anthropic charges about width x height / 750 (~1 600 at its 1.15 MP cap);
pass ``image_tokens`` to the estimator to budget for that instead."""

SYNTHETIC_CACHE_SIZE = 64
TEXT_CACHE_SIZE = 8


class _LruCache:
    """A small thread-safe least-recently-used map from text to a token count."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> int | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: int) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            if len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class ContextTokenEstimator:
    """Estimates request tokens with a ``TokenCounter``, counting each message once."""

    def __init__(
        self,
        counter: TokenCounter,
        *,
        image_tokens: int = IMAGE_TOKENS,
        synthetic_cache_size: int = SYNTHETIC_CACHE_SIZE,
        text_cache_size: int = TEXT_CACHE_SIZE,
    ) -> None:
        self._counter = counter
        self._image_tokens = image_tokens
        self._by_seq: dict[int, int] = {}
        self._synthetic = _LruCache(synthetic_cache_size)
        self._texts = _LruCache(text_cache_size)

    def message_tokens(self, vm: VisibleMessage) -> int:
        """Tokens of one visible message, including the per-message overhead."""
        if vm.source_seq is not None:
            cached = self._by_seq.get(vm.source_seq)
            if cached is None:
                cached = self._by_seq[vm.source_seq] = self._count_message(vm.message)
            return cached
        key = vm.message.model_dump_json()
        tokens = self._synthetic.get(key)
        if tokens is None:
            tokens = self._count_message(vm.message)
            self._synthetic.put(key, tokens)
        return tokens

    def messages_tokens(self, messages: Sequence[VisibleMessage]) -> int:
        """Tokens of a visible history; only messages not seen before are tokenized."""
        return sum(self.message_tokens(vm) for vm in messages)

    def text_tokens(self, text: str) -> int:
        """Tokens of a request-level text (system prompt, augmentation, summary draft)."""
        tokens = self._texts.get(text)
        if tokens is None:
            tokens = self._counter.count_text(text)
            self._texts.put(text, tokens)
        return tokens

    def _count_message(self, message: VisiblePayload) -> int:
        count = self._counter.count_text
        if isinstance(message, UserMessage | AssistantMessage):
            body = sum(self._block_tokens(block) for block in message.content)
        elif isinstance(message, ToolCall):
            arguments = json.dumps(
                message.call.effective_arguments, ensure_ascii=False, default=str
            )
            body = count(message.call.tool_name) + count(arguments)
        elif isinstance(message, ToolResult):
            body = count(message.result.output.content)
        else:
            body = count(message.content)
        return MESSAGE_OVERHEAD_TOKENS + body

    def _block_tokens(self, block: TextBlock | ImageBlock | FileContentBlock) -> int:
        if isinstance(block, ImageBlock):
            return self._image_tokens
        if isinstance(block, FileContentBlock):
            return self._counter.count_text(block.file_name or "") + self._counter.count_text(
                block.text
            )
        return self._counter.count_text(block.text)
