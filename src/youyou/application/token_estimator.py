"""Token estimates of the model-visible context, each message counted only once.

The context manager checks its budget before every request; re-tokenizing the whole history each
turn would make a turn's cost grow with the session. Ledger messages are immutable, so their count
is cached by ``source_seq``; synthetic messages (summary, markers, the admission candidate) and
the system prompt are cached by the texts they count in small LRU caches. Use one estimator per
session: ``source_seq`` is only unique within a session's ledger.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass

from youyou.domain.content import FileContentBlock, ImageBlock
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


@dataclass(frozen=True, slots=True)
class _Countable:
    """What a message costs: texts to tokenize plus a fixed part (images)."""

    texts: tuple[str, ...]
    fixed: int


def _count(counter: TokenCounter, countable: _Countable) -> int:
    texts = sum(counter.count_text(text) for text in countable.texts)
    return MESSAGE_OVERHEAD_TOKENS + countable.fixed + texts


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
        # Synthetic messages are keyed by what is counted, not the message: image bytes never
        # enter the key.
        self._count_synthetic = functools.lru_cache(synthetic_cache_size)(
            functools.partial(_count, counter)
        )
        self._count_text = functools.lru_cache(text_cache_size)(counter.count_text)

    def message_tokens(self, vm: VisibleMessage) -> int:
        """Tokens of one visible message, including the per-message overhead."""
        if vm.source_seq is None:
            return self._count_synthetic(self._countable(vm.message))
        cached = self._by_seq.get(vm.source_seq)
        if cached is None:
            cached = self._by_seq[vm.source_seq] = _count(
                self._counter, self._countable(vm.message)
            )
        return cached

    def messages_tokens(self, messages: Sequence[VisibleMessage]) -> int:
        """Tokens of a visible history; only messages not seen before are tokenized."""
        return sum(self.message_tokens(vm) for vm in messages)

    def text_tokens(self, text: str) -> int:
        """Tokens of a request-level text (system prompt, augmentation, summary draft)."""
        return self._count_text(text)

    def uncached_text_tokens(self, text: str) -> int:
        """Tokens of a text counted once (a large tool result being fitted to the window):
        it bypasses the caches, so it neither evicts nor keeps anything."""
        return self._counter.count_text(text)

    def _countable(self, message: VisiblePayload) -> _Countable:
        if isinstance(message, UserMessage | AssistantMessage):
            texts: list[str] = []
            images = 0
            for block in message.content:
                if isinstance(block, ImageBlock):
                    images += 1
                elif isinstance(block, FileContentBlock):
                    texts.extend((block.file_name or "", block.text))
                else:
                    texts.append(block.text)
            return _Countable(tuple(texts), images * self._image_tokens)
        if isinstance(message, ToolCall):
            arguments = json.dumps(
                message.call.effective_arguments, ensure_ascii=False, default=str
            )
            return _Countable((message.call.tool_name, arguments), 0)
        if isinstance(message, ToolResult):
            return _Countable((message.result.output.content,), 0)
        return _Countable((message.content,), 0)
