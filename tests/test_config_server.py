"""``[server]`` (``youyou.config.server``): who may sign up, by setting or by the address the
server listens on."""

from __future__ import annotations

import tomllib

import pytest

from youyou.config import ServerSettings, parse_settings
from youyou.domain.errors import AgentError, ErrorCode


def server_of(text: str) -> ServerSettings:
    return parse_settings(tomllib.loads(text)).server


@pytest.mark.parametrize(
    ("written", "expected"),
    [('"open"', "open"), ('"closed"', "closed"), ("true", "open"), ("false", "closed")],
)
def test_registration_is_open_or_closed_and_takes_the_old_switch(
    written: str, expected: str
) -> None:
    assert server_of(f"[server]\nregistration = {written}\n").registration == expected


def test_registration_refuses_other_words() -> None:
    with pytest.raises(AgentError) as info:
        server_of('[server]\nregistration = "sometimes"\n')
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "server.registration" in info.value.message


@pytest.mark.parametrize(
    ("keys", "mode"),
    [
        ("", "open"),
        ('host = "::1"', "open"),
        ('host = "localhost"', "open"),
        ('host = "127.0.0.2"', "open"),
        ('host = "0.0.0.0"', "closed"),
        ('host = "example.org"', "closed"),
        ('host = "10.1.2.3"\nregistration = "open"', "open"),
        ('host = "localhost"\nregistration = "invite"', "invite"),
    ],
)
def test_registration_defaults_to_open_only_on_a_loopback_address(keys: str, mode: str) -> None:
    server = server_of(f"[server]\n{keys}\n")
    assert server.registration_mode == mode
    assert server.registration_open is (mode == "open")


def test_the_lease_time_of_earlier_versions_points_to_its_new_place() -> None:
    """``[server] lease_ttl_s`` became ``[database] lease_ttl_s``, one time for both programs."""
    with pytest.raises(AgentError) as info:
        server_of("[server]\nlease_ttl_s = 60\n")
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "lease_ttl_s has moved to [database]" in info.value.message
    settings = parse_settings(tomllib.loads("[database]\nlease_ttl_s = 60\n"))
    assert settings.database.lease_ttl_s == 60
