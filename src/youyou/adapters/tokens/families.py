"""Which tokenizer counts a model's tokens, chosen from the model id's family."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from youyou.adapters.tokens.approximate import ApproximateTokenCounter
from youyou.adapters.tokens.bpe import (
    CL100K_BASE,
    LLAMA3,
    O200K_BASE,
    QWEN,
    BpeTokenCounter,
    BpeUnavailableError,
    is_loaded,
)
from youyou.ports.token_counter import TokenCounter

_log = logging.getLogger(__name__)
_APPROXIMATE = ApproximateTokenCounter()


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """``encoding`` None means the character-based approximation; ``exact`` False means the
    encoding only approximates the model's own tokenizer (which no offline package ships)."""

    encoding: str | None
    exact: bool


# Families whose own tokenizer ships in no offline package: cl100k_base is a close stand-in.
_APPROXIMATED_FAMILIES = (
    *("claude", "llama", "codellama", "qwen", "mistral", "mixtral", "codestral", "ministral"),
    *("gemma", "gemini", "deepseek", "phi", "command", "glm", "yi", "kimi", "grok"),
)

# First matching rule wins, so the more specific prefixes come first.
_RULES: tuple[tuple[tuple[str, ...], EncodingChoice], ...] = (
    (
        ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4"),
        EncodingChoice(O200K_BASE, exact=True),
    ),
    (
        ("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada-002"),
        EncodingChoice(CL100K_BASE, exact=True),
    ),
    (("llama-3", "llama3", "meta-llama-3"), EncodingChoice(LLAMA3, exact=True)),
    (("qwen2", "qwen3", "qwq"), EncodingChoice(QWEN, exact=True)),
    (_APPROXIMATED_FAMILIES, EncodingChoice(CL100K_BASE, exact=False)),
)

_UNKNOWN = EncodingChoice(None, exact=False)


def _matches(name: str, prefix: str) -> bool:
    # "o1" matches "o1-mini" and "llama3" matches "llama3.1:8b", but "phi" not "phind".
    return name.startswith(prefix) and not name[len(prefix) : len(prefix) + 1].isalpha()


def encoding_for_model(model_id: str) -> EncodingChoice:
    """Map ``openai/gpt-4o``, ``meta-llama/Llama-3.1-8B``, ``qwen2.5:7b``... to an encoding."""
    name = model_id.strip().lower().rsplit("/", 1)[-1]
    for prefixes, choice in _RULES:
        if any(_matches(name, prefix) for prefix in prefixes):
            return choice
    return _UNKNOWN


def counter_for_encoding(encoding: str) -> TokenCounter:
    """The BPE counter of ``encoding``, or the approximation if its files cannot be loaded."""
    try:
        return BpeTokenCounter(encoding)
    except BpeUnavailableError as exc:
        _log.warning("%s; counting tokens approximately", exc)
        return ApproximateTokenCounter()


class DeferredBpeCounter:
    """The exact BPE counter of an encoding that loads it only on the first exact count.

    Loading o200k_base takes ~0.5–1 s and keeps ~65 MB resident, more than the rest of a chat
    session. The estimator asks ``estimate_text`` (the approximation, nothing loaded) until a
    context comes near a compaction threshold, and ``count_text`` from then on (docs/tokens.md,
    "Exact counts only near a threshold"). ``count_text`` is never more than the text's UTF-8
    length, as for any byte-level BPE.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._exact: TokenCounter | None = None
        self._preloading = False

    @property
    def loaded(self) -> bool:
        """Exact counts cost nothing more: this counter or another one loaded the encoding."""
        return self._exact is not None or is_loaded(self.encoding)

    def estimate_text(self, text: str) -> int:
        return _APPROXIMATE.count_text(text)

    def preload(self) -> None:
        """Load on a worker thread (once), so the first exact count does not stall the loop."""
        if not self._preloading and not self.loaded:
            self._preloading = True
            loader = threading.Thread(target=self._exact_counter, name="bpe-load", daemon=True)
            loader.start()

    def count_text(self, text: str) -> int:
        return self._exact_counter().count_text(text)

    def _exact_counter(self) -> TokenCounter:
        # The load is serialized (and shared) in bpe._load: a count during a preload waits for it.
        if self._exact is None:
            self._exact = counter_for_encoding(self.encoding)
        return self._exact

    def __repr__(self) -> str:
        return f"DeferredBpeCounter({self.encoding!r})"


def counter_for_model(model_id: str) -> TokenCounter:
    """The token counter the context manager should use for ``model_id``."""
    encoding = encoding_for_model(model_id).encoding
    if encoding is None:
        return ApproximateTokenCounter()
    return DeferredBpeCounter(encoding)
