"""Single sign-on with an OpenID Connect provider: authorization code flow with PKCE.

``start`` stores a one-time ``state`` (with the nonce and the PKCE verifier) and answers the
provider's authorization URL; the web UI sends the browser there, and the provider sends it
back to ``redirect_uri`` with a code and the state, which the UI posts to ``finish``. The code
is exchanged with Authlib's OAuth 2 client; the ID token is verified with joserfc against the
provider's published keys (signature, issuer, audience, expiry, nonce). No JWT is checked by
hand here. Accounts are found by (issuer, subject), made on first sign-in.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from youyou.config import OidcSettings
from youyou.workbench.accounts import checked_username
from youyou.workbench.auth import token_digest
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.store import ADMIN, MEMBER, UsernameTaken, UserRecord, WorkbenchStore

logger = logging.getLogger(__name__)

SIGN_ON_TTL = timedelta(minutes=10)
_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Provider:
    """What the provider's discovery document says, read once per process."""

    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]


def refused(why: str) -> ApiError:
    """Every failed sign-on is one 401; why goes to the log."""
    logger.warning("single sign-on refused: %s", why)
    return ApiError(ApiCode.AUTH_SSO_FAILED)


def verify_id_token(
    id_token: str,
    keys: KeySet,
    algorithms: tuple[str, ...],
    issuer: str,
    client_id: str,
    nonce: str,
) -> dict[str, Any]:
    """The ID token's claims, if its signature is one of ``keys`` and it was issued by
    ``issuer`` for ``client_id`` with ``nonce`` and has not expired; else ``ApiError``."""
    try:
        token = jwt.decode(id_token, keys, algorithms=list(algorithms))
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": client_id},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        ).validate(token.claims)
    except (JoseError, ValueError) as error:
        raise refused(f"ID token: {error}") from None
    return dict(token.claims)


class OidcLogin:
    def __init__(self, settings: OidcSettings, store: WorkbenchStore, admins: tuple[str, ...]):
        self._settings = settings
        self._store = store
        self._admins = {name.casefold() for name in admins}
        self._provider: Provider | None = None
        self._keys: KeySet | None = None

    def _client(self) -> AsyncOAuth2Client:
        variable = self._settings.client_secret_env
        secret = os.environ.get(variable) if variable else None
        return AsyncOAuth2Client(
            client_id=self._settings.client_id,
            client_secret=secret,
            scope=" ".join(self._settings.scopes),
            redirect_uri=self._settings.redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_post" if secret else "none",
            timeout=_TIMEOUT_S,
        )

    async def provider(self) -> Provider:
        if self._provider is None:
            url = f"{self._settings.issuer.rstrip('/')}/.well-known/openid-configuration"
            document = await _get_json(url)
            try:
                self._provider = Provider(
                    document["authorization_endpoint"],
                    document["token_endpoint"],
                    document["jwks_uri"],
                    tuple(document.get("id_token_signing_alg_values_supported") or ["RS256"]),
                )
            except (KeyError, TypeError):
                raise refused("the discovery document lacks an endpoint") from None
        return self._provider

    async def start(self) -> str:
        """The provider's authorization URL for a new sign-on."""
        provider = await self.provider()
        state, nonce, verifier = (secrets.token_urlsafe(48) for _ in range(3))
        await self._store.add_oidc_login(
            token_digest(state), nonce, verifier, datetime.now(UTC) + SIGN_ON_TTL
        )
        async with self._client() as client:
            url, _ = client.create_authorization_url(
                provider.authorization_endpoint, state=state, nonce=nonce, code_verifier=verifier
            )
        return str(url)

    async def finish(self, code: str, state: str) -> UserRecord:
        """The account signed in by this code; AUTH_SSO_FAILED for an unknown, used or
        expired state, a refused code, or an ID token that does not verify."""
        taken = await self._store.take_oidc_login(token_digest(state))
        if taken is None:
            raise refused("unknown, used or expired state")
        nonce, verifier = taken
        provider = await self.provider()
        try:
            async with self._client() as client:
                tokens = await client.fetch_token(
                    provider.token_endpoint, code=code, code_verifier=verifier
                )
        except Exception as error:  # Authlib raises OAuthError, httpx its own errors
            raise refused(f"code exchange: {error}") from None
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise refused("the token answer has no ID token")
        claims = verify_id_token(
            id_token,
            await self._key_set(),
            provider.algorithms,
            self._settings.issuer,
            self._settings.client_id,
            nonce,
        )
        return await self._account(claims)

    async def _key_set(self) -> KeySet:
        if self._keys is None:
            self._keys = KeySet.import_key_set(await _get_json((await self.provider()).jwks_uri))
        return self._keys

    async def _account(self, claims: dict[str, Any]) -> UserRecord:
        settings = self._settings
        name = claims.get(settings.username_claim) or claims.get("email") or claims["sub"]
        raw_groups = claims.get(settings.groups_claim) or []
        group_names = (
            [g for g in raw_groups if isinstance(g, str)] if isinstance(raw_groups, list) else []
        )
        admin = (
            bool(set(group_names) & set(settings.admin_groups))
            or str(name).casefold() in self._admins
        )
        try:
            user = await self._store.sso_account(
                settings.issuer,
                str(claims["sub"]),
                checked_username(str(name)),
                ADMIN if admin else MEMBER,
                group_names,
            )
        except UsernameTaken:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN) from None
        if user.disabled_at is not None:
            raise ApiError(ApiCode.AUTH_ACCOUNT_DISABLED)
        return user


async def _get_json(url: str) -> Any:
    try:
        async with httpx.AsyncClient(timeout=_TIMEOUT_S) as http:
            response = await http.get(url)
            response.raise_for_status()
            return response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise refused(f"reading {url}: {error}") from None
