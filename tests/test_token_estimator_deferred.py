"""Exact token counts only near a threshold: a deferred tokenizer is loaded when it matters.

Below ``exact_from`` the estimator approximates; everything it counted is then provably under
``exact_from`` both exactly and approximately, so every threshold decision is the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from youyou.adapters.tokens import ApproximateTokenCounter, BpeTokenCounter
from youyou.application.context_manager import ContextManager
from youyou.application.token_estimator import (
    MESSAGE_OVERHEAD_TOKENS,
    ContextTokenEstimator,
    exactness_floor,
)
from youyou.domain.config import AgentConfig
from youyou.domain.content import FileContentBlock, TextBlock
from youyou.domain.context import VisibleMessage
from youyou.domain.ledger import LedgerEvent, UserMessage

EXACT = BpeTokenCounter("cl100k_base")
APPROXIMATE = ApproximateTokenCounter()


class Deferred:
    """A deferred counter over the real cl100k tokenizer that records what it was asked."""

    def __init__(self, *, loaded: bool = False) -> None:
        self.loaded = loaded
        self.exact_counts = 0
        self.preloads = 0

    def estimate_text(self, text: str) -> int:
        return APPROXIMATE.count_text(text)

    def preload(self) -> None:
        self.preloads += 1

    def count_text(self, text: str) -> int:
        self.loaded = True
        self.exact_counts += 1
        return EXACT.count_text(text)


def user(seq: int | None, text: str) -> VisibleMessage:
    return VisibleMessage(seq, UserMessage(content=(TextBlock(text=text),)))


def event(seq: int, text: str) -> LedgerEvent:
    return LedgerEvent(
        seq=seq, timestamp=datetime(2025, 1, 1, tzinfo=UTC), payload=user(seq, text).message
    )


def exact_tokens(*texts: str) -> int:
    return sum(MESSAGE_OVERHEAD_TOKENS + EXACT.count_text(t) for t in texts)


def test_below_the_floor_counts_approximately_without_loading() -> None:
    counter = Deferred()
    estimator = ContextTokenEstimator(counter, exact_from=1_000)
    assert estimator.message_tokens(user(1, "hello world, again")) == MESSAGE_OVERHEAD_TOKENS + 5
    assert estimator.text_tokens("system prompt") == 4
    assert counter.exact_counts == 0 and counter.preloads == 0
    assert not estimator.exact and estimator.generation == 0


def test_without_a_floor_a_deferred_counter_is_exact_at_once() -> None:
    estimator = ContextTokenEstimator(Deferred())
    assert estimator.exact
    assert estimator.message_tokens(user(1, "hello world, again")) == exact_tokens(
        "hello world, again"
    )


def test_crossing_the_floor_turns_exact_and_the_history_is_recounted() -> None:
    counter = Deferred()
    estimator = ContextTokenEstimator(counter, exact_from=200)
    context = ContextManager(estimator, context_window=1_000)
    texts = [f"message number {i}: the quick brown fox jumps over the lazy dog" for i in range(5)]
    for seq, text in enumerate(texts[:2], start=1):
        context.append(event(seq, text))
    assert not estimator.exact
    assert counter.preloads == 1  # past half the floor: loading starts off the loop
    for seq, text in enumerate(texts[2:], start=3):
        context.append(event(seq, text))
    assert estimator.exact and estimator.generation == 1
    assert context.history_tokens == exact_tokens(*texts)
    assert estimator.message_tokens(user(1, texts[0])) == exact_tokens(texts[0])


def test_a_message_that_crosses_the_floor_midway_is_counted_exactly_whole() -> None:
    estimator = ContextTokenEstimator(Deferred(), exact_from=20)
    block = FileContentBlock(file_name="a.txt", media_type="text/plain", text="x " * 40)
    vm = VisibleMessage(1, UserMessage(content=(block,)))
    expected = MESSAGE_OVERHEAD_TOKENS + EXACT.count_text("a.txt") + EXACT.count_text("x " * 40)
    assert estimator.message_tokens(vm) == expected
    assert estimator.messages_tokens([vm]) == expected


def test_a_large_tool_result_is_fitted_with_exact_counts() -> None:
    counter = Deferred()
    estimator = ContextTokenEstimator(counter, exact_from=10_000)
    assert estimator.uncached_text_tokens("hello world") == 2
    assert estimator.exact and counter.exact_counts == 1


def test_a_tokenizer_loaded_elsewhere_is_used_at_once() -> None:
    estimator = ContextTokenEstimator(Deferred(loaded=True), exact_from=10_000)
    assert estimator.text_tokens("hello world, again") == EXACT.count_text("hello world, again")
    assert estimator.exact


def test_the_floor_is_half_the_lowest_size_trigger() -> None:
    config = AgentConfig(default_model="m", compact_threshold=0.8)
    assert exactness_floor(config, 100_000) == 35_000  # context_percent 0.70 is the lowest


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(max_size=60), max_size=12), floor=st.integers(1, 400))
def test_while_approximate_both_counts_stay_under_the_floor(texts: list[str], floor: int) -> None:
    estimator = ContextTokenEstimator(Deferred(), exact_from=floor)
    approximate = 0
    for seq, text in enumerate(texts, start=1):
        approximate += estimator.message_tokens(user(seq, text))
        if estimator.exact:
            return
        assert approximate < floor
        assert exact_tokens(*texts[:seq]) < floor


# A whole session with a real model family's id, in a fresh interpreter: a short chat never
# loads the o200k tokenizer (~65 MB); a context near a threshold does.
_SESSION = """
import asyncio, json, sys
from youyou import AgentBuilder, AgentConfig, ModelInfo, ScriptedProvider
from youyou.adapters.tokens import bpe

async def main():
    model = ModelInfo(model_id="gpt-4o", display_name="gpt-4o", context_window=20_000)
    provider = ScriptedProvider.demo(models=(model,))
    agent = await AgentBuilder(AgentConfig(default_model="gpt-4o")).register_model_provider(
        provider
    ).build()
    session = await agent.new_session()
    loaded = []
    for text in sys.argv[1:]:
        await (await session.send_message(text)).join()
        loaded.append(sorted(bpe._LOADED))
    await agent.shutdown()
    print(json.dumps(loaded))

asyncio.run(main())
"""


def test_a_short_chat_never_loads_the_exact_tokenizer() -> None:
    # Two short turns count ~500 bytes, under half the 7,000-token floor of a 20,000-token
    # window (no preload yet); 7,500 bytes more pass the floor.
    big = "word " * 1_500
    done = subprocess.run(
        [sys.executable, "-c", _SESSION, "hi", "how are you?", big],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == [[], [], ["o200k_base"]]
