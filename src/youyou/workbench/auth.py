"""Sign-in: Argon2id password hashes, opaque bearer tokens stored only as hashes, and a
per-(username, client address) limit on failed logins."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.store import UsernameTaken, UserRecord, WorkbenchStore

_hasher = PasswordHasher()  # argon2-cffi's defaults are Argon2id with RFC 9106 parameters


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """Verified when the username is unknown, so both answers take as long (no user
    enumeration); made on first use, not at import."""
    return _hasher.hash("youyou-no-such-user")


def token_digest(token: str) -> str:
    """Tokens are 256 random bits: a fast hash is enough, and a stolen table grants nothing."""
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


class LoginLimiter:
    """Failures per (username, address) in a sliding window; in-process memory only."""

    def __init__(self, attempts: int, window_s: float) -> None:
        self._attempts = attempts
        self._window_s = window_s
        self._failures: dict[tuple[str, str], deque[float]] = {}

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        failures = self._failures.setdefault(key, deque())
        while failures and failures[0] <= now - self._window_s:
            failures.popleft()
        return failures

    def check(self, username: str, address: str) -> None:
        key = (username.lower(), address)
        now = time.monotonic()
        failures = self._recent(key, now)
        if len(failures) >= self._attempts:
            retry = max(1, int(failures[0] + self._window_s - now) + 1)
            raise ApiError(ApiCode.AUTH_RATE_LIMITED, headers={"Retry-After": str(retry)})
        if not failures:
            self._failures.pop(key, None)

    def failed(self, username: str, address: str) -> None:
        key = (username.lower(), address)
        self._recent(key, time.monotonic()).append(time.monotonic())

    def succeeded(self, username: str, address: str) -> None:
        self._failures.pop((username.lower(), address), None)


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    expires_at: datetime
    user: UserRecord


class Authenticator:
    def __init__(self, store: WorkbenchStore, limiter: LoginLimiter, token_ttl: timedelta) -> None:
        self._store = store
        self._limiter = limiter
        self._ttl = token_ttl

    async def register(self, username: str, password: str) -> UserRecord:
        digest = await asyncio.to_thread(_hasher.hash, password)
        try:
            return await self._store.create_user(username, digest)
        except UsernameTaken:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN) from None

    async def login(self, username: str, password: str, address: str) -> IssuedToken:
        self._limiter.check(username, address)
        user = await self._store.user_by_name(username)
        valid = await asyncio.to_thread(
            _verify, user.password_hash if user else _dummy_hash(), password
        )
        if user is None or not valid:
            self._limiter.failed(username, address)
            raise ApiError(ApiCode.AUTH_INVALID_CREDENTIALS)
        self._limiter.succeeded(username, address)
        token = secrets.token_urlsafe(32)
        expires_at = datetime.now(UTC) + self._ttl
        await self._store.add_token(user.id, token_digest(token), expires_at)
        return IssuedToken(token, expires_at, user)

    async def user_for(self, authorization: str | None) -> UserRecord:
        token = bearer_token(authorization)
        user = (
            await self._store.user_for_token(token_digest(token), datetime.now(UTC))
            if token
            else None
        )
        if user is None:
            raise ApiError(ApiCode.AUTH_UNAUTHENTICATED, headers={"WWW-Authenticate": "Bearer"})
        return user

    async def logout(self, authorization: str | None) -> None:
        await self.user_for(authorization)
        token = bearer_token(authorization)
        assert token is not None
        await self._store.revoke_token(token_digest(token))


def _verify(stored_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False
