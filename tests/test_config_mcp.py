"""``[[mcp_servers]]``: transports, secrets only from named variables, tool and user filters."""

from __future__ import annotations

from typing import Any

import pytest

from youyou.config import McpTransport, parse_settings
from youyou.domain.errors import AgentError, ErrorCode

KEY = "sk-live-9f8A7b6C5d4E3f2G1h0J"


def servers(*entries: dict[str, Any]) -> Any:
    return parse_settings({"mcp_servers": list(entries)}).mcp_servers


def refusal(*entries: dict[str, Any]) -> str:
    with pytest.raises(AgentError) as info:
        servers(*entries)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    return info.value.message


def test_defaults_and_the_transport_follows_from_command_or_url() -> None:
    stdio, http = servers(
        {"id": "prom", "command": "prom-mcp"}, {"id": "jira", "url": "http://127.0.0.1:9/mcp"}
    )
    assert stdio.transport is McpTransport.STDIO and http.transport is McpTransport.HTTP
    assert (stdio.timeout_ms, stdio.startup_timeout_ms) == (30_000, 30_000)
    assert (stdio.enabled_tools, stdio.disabled_tools, stdio.users) == (None, (), None)
    assert stdio.cwd is None and stdio.env == {}


def test_name_is_still_accepted_for_id() -> None:
    (server,) = servers({"name": "prom", "transport": "stdio", "command": "p"})
    assert server.id == "prom"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"id": "a", "transport": "stdio", "url": "http://x"}, "needs command"),
        ({"id": "a", "transport": "http", "command": "p"}, "needs url"),
        ({"id": "a", "command": "p", "headers_env": {"X": "V"}}, "headers_env: not for"),
        ({"id": "a", "url": "http://x", "cwd": "/tmp"}, "cwd: not for transport = 'http'"),
        ({"id": "a__b", "command": "p"}, "must not contain '__'"),
        ({"id": "a.b", "command": "p"}, "mcp_servers[0].id"),
        ({"id": "a", "command": "p", "timeout_ms": 0}, "timeout_ms"),
    ],
)
def test_inconsistent_entries_are_refused(entry: dict[str, Any], expected: str) -> None:
    assert expected in refusal(entry)


def test_env_takes_variable_names_and_a_key_is_refused_without_showing_it() -> None:
    message = refusal({"id": "a", "command": "p", "env": {"API_TOKEN": KEY}})
    assert "mcp_servers[0].env: API_TOKEN: this looks like a key" in message
    assert KEY not in message


def test_env_values_are_read_from_the_named_variables() -> None:
    (server,) = servers({"id": "a", "command": "p", "env": {"API_TOKEN": "MY_TOKEN"}})
    assert server.resolved_env({"MY_TOKEN": "t0k"}, "mcp_servers[0]") == {"API_TOKEN": "t0k"}
    with pytest.raises(AgentError) as info:
        server.resolved_env({}, "mcp_servers[0]")
    assert "mcp_servers[0].env.API_TOKEN: environment variable MY_TOKEN is not set" in str(
        info.value
    )


def test_duplicate_ids_are_refused() -> None:
    message = refusal({"id": "a", "command": "p"}, {"name": "a", "url": "http://x"})
    assert "mcp_servers[].id: 'a' appears more than once" in message


def test_tool_filters_and_users() -> None:
    (server,) = servers(
        {
            "id": "a",
            "command": "p",
            "enabled_tools": ["read", "write"],
            "disabled_tools": ["write"],
            "users": ["alice"],
        }
    )
    assert [t for t in ("read", "write", "other") if server.offers(t)] == ["read"]
    assert server.users == ("alice",) and server.groups is None


def test_approval_policy_and_per_tool_overrides() -> None:
    (plain,) = servers({"id": "a", "command": "p"})
    assert plain.approval == "mutating"
    assert plain.approval_for("anything") == "mutating"
    (server,) = servers(
        {
            "id": "t",
            "command": "p",
            "approval": "never",
            "approve_tools": ["get_ticket"],
            "ask_tools": ["close_ticket"],
        }
    )
    assert [server.approval_for(t) for t in ("close_ticket", "get_ticket", "other")] == [
        "always",
        "never",
        "never",
    ]
    assert "close_ticket: in both approve_tools and ask_tools" in refusal(
        {
            "id": "t",
            "command": "p",
            "approve_tools": ["close_ticket"],
            "ask_tools": ["close_ticket"],
        }
    )
    assert "approval" in refusal({"id": "t", "command": "p", "approval": "sometimes"})
