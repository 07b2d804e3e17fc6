"""Model-facing names of MCP tools: valid for every provider, stable, never shared."""

from __future__ import annotations

import re

from youyou.adapters.mcp import model_tool_names

PROVIDER_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_a_plain_name_is_server__tool() -> None:
    assert model_tool_names("prom", ["query", "list-targets"]) == {
        "query": "prom__query",
        "list-targets": "prom__list-targets",
    }


def test_characters_providers_refuse_become_underscores() -> None:
    assert model_tool_names("jira", ["search.tickets/v2"]) == {
        "search.tickets/v2": "jira__search_tickets_v2"
    }


def test_a_long_name_is_cut_and_ends_in_a_hash_of_the_tool_name() -> None:
    tool = "x" * 80
    name = model_tool_names("srv", [tool])[tool]
    assert PROVIDER_RULE.match(name) and len(name) == 64
    assert name.startswith("srv__xxx") and re.search(r"_[0-9a-f]{8}$", name)
    # Stable: the same tool gets the same name in any listing, alone or with others.
    assert model_tool_names("srv", ["other", tool])[tool] == name


def test_two_long_names_with_one_prefix_stay_apart() -> None:
    first, second = "y" * 70 + "a", "y" * 70 + "b"
    names = model_tool_names("srv", [first, second])
    assert names[first] != names[second]
    assert all(PROVIDER_RULE.match(n) for n in names.values())


def test_a_collision_after_sanitizing_hashes_only_the_changed_names() -> None:
    names = model_tool_names("s", ["a_b", "a.b", "a:b"])
    assert names["a_b"] == "s__a_b"  # needed no change: keeps its name
    assert names["a.b"].startswith("s__a_b_") and names["a:b"].startswith("s__a_b_")
    assert len(set(names.values())) == 3
    assert names["a.b"] == model_tool_names("s", ["a.b", "a:b"])["a.b"]
