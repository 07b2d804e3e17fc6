"""Which tokenizer counts a model's tokens, chosen from the model id's family."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from youyou.adapters.tokens.approximate import ApproximateTokenCounter
from youyou.adapters.tokens.bpe import (
    CL100K_BASE,
    LLAMA3,
    O200K_BASE,
    QWEN,
    BpeTokenCounter,
    BpeUnavailableError,
)
from youyou.ports.token_counter import TokenCounter

_log = logging.getLogger(__name__)


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


def counter_for_model(model_id: str) -> TokenCounter:
    """The token counter the context manager should use for ``model_id``."""
    encoding = encoding_for_model(model_id).encoding
    if encoding is None:
        return ApproximateTokenCounter()
    return counter_for_encoding(encoding)
