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


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ('["10.0.0.0/8", "::1"]', None),
        ('["proxy.local"]', "'proxy.local' is not an IP address or network"),
    ],
)
def test_trusted_proxies_are_addresses_or_networks(entry: str, expected: str | None) -> None:
    text = f"[server]\ntrusted_proxies = {entry}\n"
    if expected is None:
        assert server_of(text).trusted_proxies == ("10.0.0.0/8", "::1")
        return
    with pytest.raises(AgentError) as info:
        server_of(text)
    assert expected in info.value.message
