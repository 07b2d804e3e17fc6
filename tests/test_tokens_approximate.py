"""The character-based fallback: ~4 characters per token, ~1 token per CJK character."""

from __future__ import annotations

import pytest

from youyou.adapters.tokens.approximate import ApproximateTokenCounter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("a" * 400, 100),
        ("你好世界", 4),
        ("こんにちは", 5),
        ("안녕하세요", 5),
        ("，。！", 3),
        ("hello 世界", 2 + 2),  # "hello " -> ceil(6 / 4) = 2, plus two ideographs
    ],
)
def test_counts(text: str, expected: int) -> None:
    assert ApproximateTokenCounter().count_text(text) == expected


def test_cjk_text_is_not_underestimated_by_the_character_rule() -> None:
    sentence = "今天天气很好，我们去公园散步吧。"
    # cl100k_base gives 20 tokens, o200k_base 12: the plain 4-characters rule would say 4.
    assert ApproximateTokenCounter().count_text(sentence) == len(sentence)
