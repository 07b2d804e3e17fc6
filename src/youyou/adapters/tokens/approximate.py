"""Character-based token estimate for models whose tokenizer is unknown or unavailable."""

from __future__ import annotations

import re

CHARS_PER_TOKEN = 4
"""BPE tokenizers average about four characters of English or code per token."""

# CJK ideographs, kana, Hangul and CJK/full-width punctuation: BPE vocabularies give these
# roughly one token per character, far more than the four-characters rule would say.
_CJK = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f]"
)


class ApproximateTokenCounter:
    """A ``TokenCounter`` counting ~1 token per CJK character and ~4 characters per token else."""

    def count_text(self, text: str) -> int:
        if text.isascii():  # no CJK: skip the regular expression
            return -(-len(text) // CHARS_PER_TOKEN)
        other = len(_CJK.sub("", text))
        cjk = len(text) - other
        return cjk + -(-other // CHARS_PER_TOKEN)

    def __repr__(self) -> str:
        return "ApproximateTokenCounter()"
