"""Token estimates of the model-visible context, each message counted only once.

The context manager checks its budget before every request; re-tokenizing the whole history each
turn would make a turn's cost grow with the session. Ledger messages are immutable, so their count
is cached by ``source_seq``; synthetic messages (summary, markers, the admission candidate) and
the system prompt are cached by the texts they count in small LRU caches. Use one estimator per
session: ``source_seq`` is only unique within a session's ledger.

An exact tokenizer costs tens of MB and most of a second to load, and exactness only matters
near a threshold. With a ``DeferredTokenCounter`` and ``exact_from`` the estimator approximates
while everything it has counted stays under ``exact_from`` tokens even counted as one token
per UTF-8 byte (a BPE token is at least one byte, and the approximation never gives more), so
every comparison with a threshold at or above ``exact_from`` comes out as it would exactly.
Past that it loads the tokenizer and counts everything again; ``generation`` tells holders of
earlier results to recount.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from youyou.domain.config import AgentConfig
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


@runtime_checkable
class DeferredTokenCounter(TokenCounter, Protocol):
    """A counter whose exact tokenizer is loaded on the first ``count_text``.

    ``estimate_text`` approximates without loading anything; ``loaded`` says exact counts are
    free already; ``preload`` starts loading off the caller's thread. Neither count ever
    exceeds the text's UTF-8 length.
    """

    @property
    def loaded(self) -> bool: ...

    def estimate_text(self, text: str) -> int: ...

    def preload(self) -> None: ...


def warm_up(counters: Iterable[TokenCounter]) -> None:
    """Load what the counters need before the first turn, except deferred exact tokenizers."""
    for counter in counters:
        if not isinstance(counter, DeferredTokenCounter):
            counter.count_text("warm up")


def exactness_floor(config: AgentConfig, context_window: int) -> int:
    """Half the lowest size trigger in tokens: below it no decision depends on exactness."""
    compaction = config.compaction
    lowest = min(config.compact_threshold, compaction.context_percent, compaction.hard_limit)
    return int(context_window * lowest) // 2


@dataclass(frozen=True, slots=True)
class _Countable:
    """What a message costs: texts to tokenize plus a fixed part (images)."""

    texts: tuple[str, ...]
    fixed: int


class ContextTokenEstimator:
    """Estimates request tokens with a ``TokenCounter``, counting each message once."""

    def __init__(
        self,
        counter: TokenCounter,
        *,
        exact_from: int = 0,
        image_tokens: int = IMAGE_TOKENS,
        synthetic_cache_size: int = SYNTHETIC_CACHE_SIZE,
        text_cache_size: int = TEXT_CACHE_SIZE,
    ) -> None:
        self._counter = counter
        self._deferred = counter if isinstance(counter, DeferredTokenCounter) else None
        self._exact = self._deferred is None or exact_from <= 0
        self._exact_from = exact_from
        self._bound = 0  # what everything counted so far could be at most, in tokens
        self.generation = 0
        """Bumped when counting turns exact: every count returned before is stale."""
        self._image_tokens = image_tokens
        self._cache_sizes = (synthetic_cache_size, text_cache_size)
        self._clear_caches()

    def _clear_caches(self) -> None:
        synthetic_size, text_size = self._cache_sizes
        self._by_seq: dict[int, int] = {}
        # Synthetic messages are keyed by what is counted, not the message: image bytes never
        # enter the key.
        self._count_synthetic = functools.lru_cache(synthetic_size)(self._count)
        self._count_text = functools.lru_cache(text_size)(self._text)

    @property
    def exact(self) -> bool:
        """Counts come from the counter's exact tokenizer (always, unless it is deferred)."""
        return self._exact

    def message_tokens(self, vm: VisibleMessage) -> int:
        """Tokens of one visible message, including the per-message overhead."""
        return self._settled(lambda: self._message_tokens(vm))

    def messages_tokens(self, messages: Sequence[VisibleMessage]) -> int:
        """Tokens of a visible history; only messages not seen before are tokenized."""
        return self._settled(lambda: sum(map(self._message_tokens, messages)))

    def text_tokens(self, text: str) -> int:
        """Tokens of a request-level text (system prompt, augmentation, summary draft)."""
        return self._settled(lambda: self._count_text(text))

    def uncached_text_tokens(self, text: str) -> int:
        """Tokens of a text counted once (a large tool result being fitted to the window):
        it bypasses the caches, so it neither evicts nor keeps anything. Always exact: what
        the model is shown depends on it."""
        self._become_exact()
        return self._counter.count_text(text)

    def _settled(self, count: Callable[[], int]) -> int:
        """``count()``, again if counting turned exact part-way (no mixed result escapes)."""
        generation = self.generation
        tokens = count()
        return tokens if generation == self.generation else count()

    def _message_tokens(self, vm: VisibleMessage) -> int:
        if vm.source_seq is None:
            return self._count_synthetic(self._countable(vm.message))
        by_seq = self._by_seq  # a count that turns exact part-way is stored in the old cache
        cached = by_seq.get(vm.source_seq)
        if cached is None:
            text = _only_text(vm.message)
            if text is not None and self._exact:  # most messages: one text block, no images
                cached = MESSAGE_OVERHEAD_TOKENS + self._counter.count_text(text)
            else:
                cached = self._count(self._countable(vm.message))
            by_seq[vm.source_seq] = cached
        return cached

    def _count(self, countable: _Countable) -> int:
        fixed = MESSAGE_OVERHEAD_TOKENS + countable.fixed
        if self._exact:  # the common case, without a call per text
            return fixed + sum(map(self._counter.count_text, countable.texts))
        self._bound += fixed
        return fixed + sum(map(self._text, countable.texts))

    def _text(self, text: str) -> int:
        deferred = self._deferred
        if self._exact or deferred is None:
            return self._counter.count_text(text)
        self._bound += len(text.encode("utf-8", "surrogatepass"))
        if self._bound < self._exact_from and not deferred.loaded:
            if self._bound >= self._exact_from // 2:
                deferred.preload()  # so that turning exact finds the tokenizer ready
            return deferred.estimate_text(text)
        self._become_exact()
        return self._counter.count_text(text)

    def _become_exact(self) -> None:
        if not self._exact:
            self._exact = True
            self.generation += 1
            self._clear_caches()

    def _countable(self, message: VisiblePayload) -> _Countable:
        if type(message) is UserMessage or type(message) is AssistantMessage:
            if (text := _only_text(message)) is not None:
                return _Countable((text,), 0)
            texts: list[str] = []
            images = 0
            for block in message.content:
                if type(block) is ImageBlock:
                    images += 1
                elif type(block) is FileContentBlock:
                    texts.extend((block.file_name or "", block.text))
                else:
                    texts.append(block.text)
            return _Countable(tuple(texts), images * self._image_tokens)
        if type(message) is ToolCall:
            arguments = json.dumps(
                message.call.effective_arguments, ensure_ascii=False, default=str
            )
            return _Countable((message.call.tool_name, arguments), 0)
        if type(message) is ToolResult:
            return _Countable((message.result.output.content,), 0)
        return _Countable((message.content,), 0)


def _only_text(message: VisiblePayload) -> str | None:
    """The text of a user or assistant message made of one text block, else None."""
    if type(message) is UserMessage or type(message) is AssistantMessage:
        content = message.content
        if len(content) == 1 and type(block := content[0]) is TextBlock:
            return block.text
    return None
