"""Offline token counting: exact BPE where a tokenizer ships, an approximation elsewhere."""

from youyou.adapters.tokens.approximate import ApproximateTokenCounter
from youyou.adapters.tokens.bpe import BpeTokenCounter, BpeUnavailableError
from youyou.adapters.tokens.families import (
    DeferredBpeCounter,
    EncodingChoice,
    counter_for_encoding,
    counter_for_model,
    encoding_for_model,
)

__all__ = [
    "ApproximateTokenCounter",
    "BpeTokenCounter",
    "BpeUnavailableError",
    "DeferredBpeCounter",
    "EncodingChoice",
    "counter_for_encoding",
    "counter_for_model",
    "encoding_for_model",
]
