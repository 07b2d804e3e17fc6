"""Exact BPE token counts from the encodings shipped inside the quicktok wheel.

The vocabularies are package data, so counting never touches the network or a cache directory
(unlike stock tiktoken, which downloads its encodings on first use). Each encoding is loaded
once per process and shared: the tokenizer is thread-safe.
"""

from __future__ import annotations

import threading
from typing import Protocol, cast

CL100K_BASE = "cl100k_base"
O200K_BASE = "o200k_base"
LLAMA3 = "llama3"
QWEN = "qwen3"


class _Tokenizer(Protocol):
    def count(self, text: str) -> int: ...


class BpeUnavailableError(RuntimeError):
    """The encoding's files could not be loaded (missing wheel or unknown encoding)."""


_LOCK = threading.Lock()
_LOADED: dict[str, _Tokenizer] = {}


def _load(encoding: str) -> _Tokenizer:
    tokenizer = _LOADED.get(encoding)
    if tokenizer is not None:
        return tokenizer
    with _LOCK:
        tokenizer = _LOADED.get(encoding)
        if tokenizer is None:
            try:
                import quicktok  # type: ignore[import-untyped]

                # An empty data dir means "the files bundled in the wheel", never a download.
                tokenizer = cast(_Tokenizer, quicktok.Tokenizer(encoding, ""))
            except (ImportError, OSError, RuntimeError) as exc:
                raise BpeUnavailableError(f"BPE encoding {encoding!r} unavailable: {exc}") from exc
            _LOADED[encoding] = tokenizer
        return tokenizer


def is_loaded(encoding: str) -> bool:
    """The encoding is already in memory (loading it again would be a dictionary lookup)."""
    return encoding in _LOADED


def _replace_lone_surrogates(text: str) -> str:
    """Turn unpaired surrogates (e.g. from undecodable tool output) into U+FFFD, like tiktoken."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class BpeTokenCounter:
    """A ``TokenCounter`` giving the exact token count of text under one BPE encoding."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._tokenizer = _load(encoding)

    def count_text(self, text: str) -> int:
        try:
            return self._tokenizer.count(text)
        except TypeError:
            # The C++ binding rejects strings that are not valid UTF-8.
            return self._tokenizer.count(_replace_lone_surrogates(text))

    def __repr__(self) -> str:
        return f"BpeTokenCounter({self.encoding!r})"
