"""Language-aware search terms and the postings budget."""

from __future__ import annotations

from youyou.adapters.memory.text_index import (
    MAX_QUERY_TERMS,
    choose_terms,
    index_text,
    query_terms,
)


def test_english_words_are_lowercased_stemmed_and_stop_words_dropped() -> None:
    assert index_text("The User PREFERS dark-roast coffee") == "user prefer dark roast coffe"
    assert query_terms("What are the preferences of the user?") == ["prefer", "user"]


def test_chinese_runs_become_bigrams_and_documents_also_index_characters() -> None:
    assert index_text("喝咖啡") == "喝 咖 啡 喝咖 咖啡"
    assert query_terms("喝咖啡") == ["喝咖", "咖啡"]
    assert query_terms("猫") == ["猫"]


def test_mixed_scripts_split_at_script_boundaries() -> None:
    assert query_terms("用Python写服务, deploy到k8s") == [
        "用",
        "python",
        "写服",
        "服务",
        "deploy",
        "到",
        "k8s",
    ]
    assert query_terms("カタカナ") == ["カタ", "タカ", "カナ"]


def test_query_terms_are_distinct_and_capped() -> None:
    assert query_terms("tea tea teas") == ["tea"]
    many = " ".join(f"word{i}" for i in range(100))
    assert len(query_terms(many)) == MAX_QUERY_TERMS
    assert query_terms("   ,,, !!") == []


def test_choose_terms_keeps_rarest_terms_within_budget() -> None:
    doc_freq = {"coffee": 900, "tea": 500, "drumizen": 3, "user": 5000}
    assert choose_terms(["user", "coffee", "tea", "drumizen"], doc_freq, 1000) == [
        "drumizen",
        "tea",
    ]
    assert choose_terms(["user", "coffee"], doc_freq, 1000) == ["coffee"]
    assert choose_terms(["unseen", "user", "coffee"], doc_freq, 1000) == ["unseen", "coffee"]
    assert choose_terms(["a", "b"], {}, 1000) == ["a", "b"]
    assert choose_terms([], doc_freq, 1000) == []
