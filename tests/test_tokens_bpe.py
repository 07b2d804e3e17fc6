"""Exact BPE counts, checked against reference tiktoken counts for the same encodings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from youyou.adapters.tokens.bpe import BpeTokenCounter, BpeUnavailableError

# Expected values were produced by tiktoken 0.14 (encode_ordinary) with the official
# cl100k_base / o200k_base files (sha256 223921b7... / 446a9538...).
SAMPLES = (
    "hello world",
    "今天天气很好，我们去公园散步吧。",
    "def add(a, b):\n    return a + b\n",
    "<|endoftext|>",
    "The quick brown fox 跳过了懒狗 🦊 ！",
)
REFERENCE = {
    "cl100k_base": (2, 20, 12, 7, 20),
    "o200k_base": (2, 12, 12, 7, 16),
}


@pytest.mark.parametrize("encoding", sorted(REFERENCE))
def test_counts_match_reference_tiktoken(encoding: str) -> None:
    counter = BpeTokenCounter(encoding)
    assert tuple(counter.count_text(s) for s in SAMPLES) == REFERENCE[encoding]


@pytest.mark.parametrize(
    ("encoding", "expected"),
    # Llama 3 and Qwen 2/2.5/3 encode "Hello world" as [9906, 1917] and [9707, 1879].
    [("llama3", 2), ("qwen3", 2)],
)
def test_open_model_encodings_ship_too(encoding: str, expected: int) -> None:
    assert BpeTokenCounter(encoding).count_text("Hello world") == expected


def test_special_token_text_is_counted_as_plain_text() -> None:
    # A user pasting "<|endoftext|>" must neither crash counting nor count as one token.
    assert BpeTokenCounter("cl100k_base").count_text("<|endoftext|>") == 7


def test_empty_text_is_zero_tokens() -> None:
    assert BpeTokenCounter("o200k_base").count_text("") == 0


def test_lone_surrogates_are_counted_like_tiktoken() -> None:
    # tiktoken counts "bad \ud800 byte" as 3 tokens after replacing the surrogate.
    assert BpeTokenCounter("cl100k_base").count_text("bad \ud800 byte") == 3


def test_unknown_encoding_raises_unavailable() -> None:
    with pytest.raises(BpeUnavailableError):
        BpeTokenCounter("no_such_encoding")


def test_encoding_is_loaded_once_and_shared_across_threads() -> None:
    text = "mixed 文本 and code: x = [i for i in range(10)]\n" * 50
    with ThreadPoolExecutor(max_workers=8) as pool:
        counters = list(pool.map(lambda _: BpeTokenCounter("o200k_base"), range(16)))
        counts = list(pool.map(lambda c: c.count_text(text), counters))
    assert len({id(c._tokenizer) for c in counters}) == 1
    assert len(set(counts)) == 1
    assert counts[0] == BpeTokenCounter("o200k_base").count_text(text)
