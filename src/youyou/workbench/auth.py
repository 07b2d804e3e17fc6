"""Sign-in: Argon2id password hashes computed behind a ``HashGate``, opaque bearer tokens
stored only as hashes, limits per client address on failed logins and on sign-ups, and the
password policy on every new password."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from youyou.config import ServerSettings
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.passwords import check_new_password
from youyou.workbench.store import InviteUnusable, UsernameTaken, UserRecord, WorkbenchStore
from youyou.workbench.store.sending import SendReads
from youyou.workbench.throttle import HashGate, LoginLimiter, SlidingWindow

_Read = TypeVar("_Read")


class Passwords:
    """Argon2id hashes at the cost ``[server]`` sets (``password_hash_memory_kib``,
    ``password_hash_iterations``; 4 lanes)."""

    def __init__(self, server: ServerSettings) -> None:
        self._hasher = PasswordHasher(
            time_cost=server.password_hash_iterations,
            memory_cost=server.password_hash_memory_kib,
            parallelism=4,
        )

    def hash(self, password: str) -> str:
        """The hash of a password that passed ``check_new_password``."""
        return self._hasher.hash(password)

    def verify(self, stored_hash: str | None, password: str) -> bool:
        """``None`` (no such user) verifies against a dummy hash of the same cost, so both
        answers take as long (no user enumeration)."""
        try:
            return self._hasher.verify(stored_hash or self._dummy_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    def outdated(self, stored_hash: str) -> bool:
        """True for a hash made at another cost: it is redone at the next sign-in."""
        return self._hasher.check_needs_rehash(stored_hash)

    @cached_property
    def _dummy_hash(self) -> str:
        """Made on first use (in a hashing worker thread), not at start-up."""
        return self._hasher.hash("youyou-no-such-user")


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


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    expires_at: datetime
    user: UserRecord


@dataclass(frozen=True, slots=True)
class IssuedInvite:
    token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Throttles:
    """The per-address limits and the hashing gate one server process shares."""

    logins: LoginLimiter
    registrations: SlidingWindow
    hashing: HashGate

    @classmethod
    def of(cls, server: ServerSettings) -> Throttles:
        concurrency = server.hash_concurrency or os.cpu_count() or 1
        queue = 2 * concurrency if server.hash_queue is None else server.hash_queue
        return cls(
            LoginLimiter(
                server.login_attempts, server.address_login_attempts, server.login_window_s
            ),
            SlidingWindow(
                server.registration_attempts,
                server.registration_window_s,
                ApiCode.AUTH_RATE_LIMITED,
            ),
            HashGate(concurrency, queue),
        )


class Authenticator:
    def __init__(
        self,
        store: WorkbenchStore,
        throttles: Throttles,
        token_ttl: timedelta,
        passwords: Passwords,
    ) -> None:
        self._store = store
        self._throttles = throttles
        self._ttl = token_ttl
        self._passwords = passwords

    async def register(
        self, username: str, password: str, address: str, invite: str | None = None
    ) -> UserRecord:
        """Every attempt that gets as far as the hash counts against the address; a taken name
        or an unusable invite is refused before it (sign-up says whether a name is taken
        anyway). An invite is used up with the account it creates, so it admits one."""
        self._throttles.registrations.check(address)
        check_new_password(password, username)
        invite_hash = token_digest(invite) if invite is not None else None
        if invite_hash is not None and not await self._store.invite_usable(invite_hash):
            raise ApiError(ApiCode.AUTH_INVITE_INVALID)
        if await self._store.user_by_name(username) is not None:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN)
        self._throttles.registrations.record(address)
        digest = await self._throttles.hashing.run(address, self._passwords.hash, password)
        try:
            return await self._store.create_user(username, digest, invite_hash=invite_hash)
        except UsernameTaken:
            raise ApiError(ApiCode.AUTH_USERNAME_TAKEN) from None
        except InviteUnusable:
            raise ApiError(ApiCode.AUTH_INVITE_INVALID) from None

    async def hash_password(self, password: str, address: str) -> str:
        """A new password's hash, behind the hashing gate like every sign-in."""
        return await self._throttles.hashing.run(address, self._passwords.hash, password)

    async def create_invite(self, admin: UserRecord, valid_for: timedelta) -> IssuedInvite:
        """A one-time sign-up token; only its hash is stored."""
        token = secrets.token_urlsafe(32)
        expires_at = datetime.now(UTC) + valid_for
        await self._store.add_invite(token_digest(token), admin.id, expires_at)
        return IssuedInvite(token, expires_at)

    async def login(self, username: str, password: str, address: str) -> IssuedToken:
        """A token for the right password; the user's dead token rows go at the same time."""
        return await self.issue(await self._checked(username, password, address))

    async def issue(self, user: UserRecord) -> IssuedToken:
        """A new token for a user who has just signed in (by password or single sign-on)."""
        token = secrets.token_urlsafe(32)
        issued_at = datetime.now(UTC)
        await self._store.purge_tokens(issued_at, user.id)
        await self._store.add_token(user.id, token_digest(token), issued_at + self._ttl)
        return IssuedToken(token, issued_at + self._ttl, user)

    async def _checked(self, username: str, password: str, address: str) -> UserRecord:
        """The user whose password this is, through the login limits; a wrong password counts
        as a failed login of that username from that address."""
        limiter = self._throttles.logins
        limiter.check(username, address)
        user = await self._store.user_by_name(username)
        try:
            valid = await self._throttles.hashing.run(
                address, self._passwords.verify, user.password_hash if user else None, password
            )
        except ApiError:
            limiter.refused(address)
            raise
        if user is None or not valid:
            limiter.failed(username, address)
            raise ApiError(ApiCode.AUTH_INVALID_CREDENTIALS)
        limiter.succeeded(username, address)
        if user.disabled_at is not None:  # said only to whoever knows the password
            raise ApiError(ApiCode.AUTH_ACCOUNT_DISABLED)
        if user.password_hash and self._passwords.outdated(user.password_hash):
            digest = await self._throttles.hashing.run(address, self._passwords.hash, password)
            await self._store.set_password_hash(user.id, digest)
        return user

    async def change_password(
        self, user: UserRecord, token: str, current: str, new: str, address: str
    ) -> None:
        """Needs the current password too (a stolen token alone cannot take the account over);
        every other token of the user is revoked, ``token`` (the one used here) stays."""
        check_new_password(new, user.username)
        await self._checked(user.username, current, address)
        digest = await self._throttles.hashing.run(address, self._passwords.hash, new)
        await self._store.set_password_hash(user.id, digest)
        await self._store.revoke_user_tokens(user.id, keep=token_digest(token))

    async def user_for(self, authorization: str | None) -> UserRecord:
        return await self._authenticated(
            authorization, lambda digest, at: self._store.user_for_token(digest, at)
        )

    async def sender_for(self, authorization: str | None, chat_id: str) -> SendReads:
        """``user_for`` and what a send to ``chat_id`` reads, in one transaction."""
        return await self._authenticated(
            authorization, lambda digest, at: self._store.send_reads(digest, at, chat_id)
        )

    async def _authenticated(
        self,
        authorization: str | None,
        read: Callable[[str, datetime], Awaitable[_Read | None]],
    ) -> _Read:
        """What ``read`` finds for the bearer token's digest; AUTH_UNAUTHENTICATED when the
        header has no token or the token is unknown, revoked or expired (``read``: None)."""
        token = bearer_token(authorization)
        found = await read(token_digest(token), datetime.now(UTC)) if token else None
        if found is None:
            raise ApiError(ApiCode.AUTH_UNAUTHENTICATED, headers={"WWW-Authenticate": "Bearer"})
        return found

    async def logout(self, authorization: str | None) -> None:
        await self.user_for(authorization)
        token = bearer_token(authorization)
        assert token is not None
        await self._store.revoke_token(token_digest(token))

    async def logout_everywhere(self, user: UserRecord) -> None:
        """Every token of the user, the one of this request included."""
        await self._store.revoke_user_tokens(user.id)
