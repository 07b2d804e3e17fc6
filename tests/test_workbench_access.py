"""``AccessLists``: an entry lets in its bound account ids and its groups' members; an entry
without lists lets in everyone."""

from __future__ import annotations

from youyou.workbench.access import AccessLists, Grant, Member


def test_an_entry_lets_in_its_accounts_and_its_groups_members() -> None:
    lists = AccessLists(
        {
            "mcp_servers.grafana": Grant(frozenset({"id-carol"}), frozenset({"sre"})),
            "knowledge.secrets": Grant(frozenset(), frozenset({"security"})),
        }
    )
    carol = Member("id-carol", frozenset())
    erin = Member("id-erin", frozenset({"sre"}))
    newcomer = Member("id-new", frozenset())
    assert [lists.mcp_servers(m)("grafana") for m in (carol, erin, newcomer)] == [
        True,
        True,
        False,
    ]
    assert lists.mcp_servers(newcomer)("unlisted")  # no lists: everyone
    assert not lists.knowledge(erin)("secrets")
    assert lists.knowledge(Member("id-sec", frozenset({"security"})))("secrets")
    assert lists.knowledge(newcomer)("runbooks")
