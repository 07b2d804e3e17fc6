"""Single sign-on against a real OpenID Connect provider process (``oidc-provider-mock``),
through the real workbench on SQLite and PostgreSQL: accounts made on first sign-in and found
again by subject, groups and administrators from the provider's claims, password sign-in
turned off; and every bad sign-on refused — a replayed state, a tampered signature, a token
for another client, an expired token."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc.jwk import KeySet

from port_kit import free_port
from server_kit import Api, Workbench, isolated_env, wait_until
from youyou.workbench.errors import ApiError
from youyou.workbench.oidc import verify_id_token

StartWorkbench = Callable[..., Workbench]
REDIRECT = "http://127.0.0.1:1/"  # the web UI's address; the test reads the redirect itself


class Provider:
    """``python -m oidc_provider_mock`` on a free port."""

    def __init__(self, root: Path, token_max_age_s: int = 3600) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.log = (root / f"oidc-{self.port}.log").open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oidc_provider_mock",
                "--port",
                str(self.port),
                "--token-max-age",
                str(token_max_age_s),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=isolated_env(root),
        )
        assert wait_until(self._up, 30), "the OIDC provider did not start"

    def _up(self) -> bool:
        try:
            return httpx.get(f"{self.issuer}/.well-known/openid-configuration").is_success
        except httpx.TransportError:
            return False

    def user(self, sub: str, **claims: Any) -> None:
        assert httpx.put(f"{self.issuer}/users/{sub}", json=claims).status_code == 204

    def authorize(self, authorization_url: str, sub: str) -> tuple[str, str]:
        """What the user does at the provider: sign in as ``sub``; (code, state) of the
        redirect back."""
        answer = httpx.post(authorization_url, data={"sub": sub})
        assert answer.status_code == 302, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        return query["code"][0], query["state"][0]

    def id_token(self, sub: str, client_id: str, nonce: str = "n-1") -> str:
        """An ID token for ``client_id``, as the provider issues it."""
        url = httpx.URL(
            f"{self.issuer}/oauth2/authorize",
            params={
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT,
                "scope": "openid profile",
                "nonce": nonce,
                "state": "s",
            },
        )
        code, _ = self.authorize(str(url), sub)
        tokens = httpx.post(
            f"{self.issuer}/oauth2/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "client_secret": "any",
            },
        )
        assert tokens.status_code == 200, tokens.text
        token: str = tokens.json()["id_token"]
        return token

    def keys(self) -> KeySet:
        return KeySet.import_key_set(httpx.get(f"{self.issuer}/jwks").json())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture
def provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Provider]:
    """The provider, and the client secret in the environment the server reads it from."""
    monkeypatch.setenv("YOUYOU_TEST_SSO_SECRET", "s3cret-of-the-client")
    started = Provider(tmp_path)
    yield started
    started.stop()


def sso_config(
    provider: Provider, *, password_login: bool = True, redirect: str = REDIRECT, extra: str = ""
) -> str:
    return (
        "[server.oidc]\n"
        f'issuer = "{provider.issuer}"\n'
        'client_id = "youyou"\n'
        'client_secret_env = "YOUYOU_TEST_SSO_SECRET"\n'
        f'redirect_uri = "{redirect}"\n'
        'admin_groups = ["ops-admins"]\n'
        f"password_login = {'true' if password_login else 'false'}\n{extra}"
    )


def sign_on(wb: Workbench, provider: Provider, sub: str) -> httpx.Response:
    start = Api(wb.url).data("GET", "/auth/oidc/start")["authorizationUrl"]
    code, state = provider.authorize(start, sub)
    return httpx.post(f"{wb.url}/auth/oidc/callback", json={"code": code, "state": state})


def test_first_sign_on_makes_the_account_and_later_ones_find_it_by_subject(
    start_workbench: StartWorkbench, provider: Provider
) -> None:
    wb = start_workbench(extra=sso_config(provider))
    provider.user("u-1", preferred_username="zoe", groups=["sre", "ops-admins"])
    first = sign_on(wb, provider, "u-1")
    assert first.status_code == 200, first.text
    user = first.json()["data"]["user"]
    assert (user["username"], user["role"]) == ("zoe", "admin")
    zoe = Api(wb.url, first.json()["data"]["accessToken"])
    assert zoe.data("GET", "/auth/me")["id"] == user["id"]
    groups = {g["name"]: g["memberIds"] for g in zoe.data("GET", "/admin/groups")}
    assert groups == {"ops-admins": [user["id"]], "sre": [user["id"]]}

    # The provider renamed her and took her out of the admin group: same account, now a member.
    provider.user("u-1", preferred_username="zoe.b", groups=["sre"])
    again = sign_on(wb, provider, "u-1")
    assert again.status_code == 200, again.text
    assert again.json()["data"]["user"]["id"] == user["id"]
    assert again.json()["data"]["user"]["role"] == "member"
    # A password account cannot be taken over by a provider user who claims its name.
    wb.user("amy")
    provider.user("u-2", preferred_username="AMY")
    taken = sign_on(wb, provider, "u-2")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "AUTH_USERNAME_TAKEN"
    assert Api(wb.url).data("GET", "/auth/settings")["sso"] is True


def test_a_replayed_state_or_a_forged_code_is_refused(
    start_workbench: StartWorkbench, provider: Provider
) -> None:
    wb = start_workbench(extra=sso_config(provider))
    provider.user("u-3", preferred_username="ben")
    start = Api(wb.url).data("GET", "/auth/oidc/start")["authorizationUrl"]
    code, state = provider.authorize(start, "u-3")
    body = {"code": code, "state": state}
    assert httpx.post(f"{wb.url}/auth/oidc/callback", json=body).status_code == 200
    replayed = httpx.post(f"{wb.url}/auth/oidc/callback", json=body)
    assert replayed.status_code == 401
    assert replayed.json()["error"]["code"] == "AUTH_SSO_FAILED"
    fresh_state = parse_qs(
        urlsplit(Api(wb.url).data("GET", "/auth/oidc/start")["authorizationUrl"]).query
    )["state"][0]
    forged = httpx.post(
        f"{wb.url}/auth/oidc/callback", json={"code": "made-up", "state": fresh_state}
    )
    assert forged.status_code == 401 and forged.json()["error"]["code"] == "AUTH_SSO_FAILED"
    assert "single sign-on refused" in wb.server.log()


def test_password_sign_in_can_be_turned_off(
    start_workbench: StartWorkbench, provider: Provider
) -> None:
    wb = start_workbench(extra=sso_config(provider, password_login=False))
    anonymous = Api(wb.url)
    settings = anonymous.data("GET", "/auth/settings")
    assert (settings["sso"], settings["passwordLogin"], settings["registration"]) == (
        True,
        False,
        False,
    )
    body = {"username": "carl", "password": "correct horse"}
    for route in ("/auth/register", "/auth/login"):
        refused = anonymous.error("POST", route, 403, json=body)
        assert refused["code"] == "AUTH_PASSWORD_LOGIN_DISABLED"
    provider.user("u-4", preferred_username="carl")
    assert sign_on(wb, provider, "u-4").status_code == 200
    anonymous.close()


def test_id_tokens_that_do_not_verify_are_refused(tmp_path: Path) -> None:
    """Real tokens of a real provider: a tampered signature, another client's token and an
    expired one are each refused; the untouched one verifies."""
    short = Provider(tmp_path, token_max_age_s=5)
    try:
        keys = short.keys()

        def check(token: str) -> dict[str, Any]:
            return verify_id_token(token, keys, ("RS256",), short.issuer, "youyou", "n-1")

        short.user("u-5", preferred_username="dan")
        good = short.id_token("u-5", "youyou")
        assert check(good)["sub"] == "u-5"
        head, payload, signature = good.split(".")
        tampered = (
            f"{head}.{payload}.{signature[:-4]}{'AAAA' if signature[-4:] != 'AAAA' else 'BBBB'}"
        )
        other_client = short.id_token("u-5", "someone-else")
        for bad in (tampered, other_client):
            with pytest.raises(ApiError) as refused:
                check(bad)
            assert refused.value.code == "AUTH_SSO_FAILED"
        time.sleep(5.5)  # the token lived 5 s
        with pytest.raises(ApiError):
            check(good)
        with pytest.raises(ApiError):  # the nonce of another sign-on
            verify_id_token(
                short.id_token("u-5", "youyou"),
                keys,
                ("RS256",),
                short.issuer,
                "youyou",
                "another-nonce",
            )
    finally:
        short.stop()
