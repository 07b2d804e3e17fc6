"""Language-aware terms for full-text memory search, shared by every memory store.

Latin-script words are lower-cased and stemmed here (Snowball English: "prefers" and
"preference" both become "prefer"), so each database indexes exactly the terms a query
produces and term statistics can be looked up directly. Chinese and Japanese have no spaces,
so each run of CJK characters becomes overlapping character bigrams, the usual CJK indexing
unit: most Chinese words are two characters, so "咖啡" matches "我喜欢喝咖啡" through the
index. Documents also index single characters, so a one-character query still finds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TERM = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")

MAX_QUERY_TERMS = 32
# Postings a search may rank; beyond it the most common query terms are left out.
POSTINGS_BUDGET = 2000

# Frequent English words: they carry no meaning for recall and only cost index and query time.
_STOP_WORDS_TEXT = (
    "a an and are as at be but by can could did do does for from had has have how i if in is "
    "it its me my of on or our please so than that the their them then there these they this "
    "to was we were what when where which who why will with would you your"
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


@cache
def _stemmer() -> Any:
    """Snowball English, built on first use: importing it costs ~0.02 s of every start."""
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def _cjk_terms(run: str, *, unigrams: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return [*run, *bigrams] if unigrams else bigrams


def _terms(text: str, *, unigrams: bool) -> list[str]:
    terms: list[str] = []
    for match in _TERM.finditer(text.lower()):
        token = match.group()
        if _CJK_RUN.fullmatch(token):
            terms.extend(_cjk_terms(token, unigrams=unigrams))
        elif token not in STOP_WORDS:
            terms.append(_stem(token))
    return terms


def index_text(text: str) -> str:
    """Space-separated terms stored next to the memory and indexed by the database."""
    return " ".join(_terms(text, unigrams=True))


def query_terms(text: str) -> list[str]:
    """Distinct search terms of a query, capped to bound search time."""
    return list(dict.fromkeys(_terms(text, unigrams=False)))[:MAX_QUERY_TERMS]


def choose_terms(terms: Sequence[str], doc_freq: Mapping[str, int], budget: int) -> list[str]:
    """Rarest terms first while their postings fit the budget, always at least one found term.

    Terms missing from the statistics cost nothing to search and are kept.
    """
    chosen: list[str] = []
    spent = 0
    for term in sorted(terms, key=lambda t: doc_freq.get(t, 0)):
        postings = doc_freq.get(term, 0)
        if postings and spent and spent + postings > budget:
            break
        chosen.append(term)
        spent += postings
    return chosen
