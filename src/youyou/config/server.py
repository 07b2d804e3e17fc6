"""``[server]``: how the workbench listens, who may sign up, and what one user may hold."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, field_validator, model_validator

from youyou.config.base import Section, check_http_url, refuse_key
from youyou.config.secrets import check_variable_name


class OidcSettings(Section):
    """Single sign-on with an OpenID Connect provider (authorization code + PKCE), see
    docs/accounts.md. ``redirect_uri`` is the web UI's public address (the server never
    builds a URL from the ``Host`` header); register it at the provider."""

    issuer: str
    client_id: str = Field(min_length=1)
    client_secret_env: str | None = None
    """The environment variable holding the client secret (none: a public client)."""
    redirect_uri: str
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    username_claim: str = "preferred_username"
    groups_claim: str = "groups"
    admin_groups: tuple[str, ...] = ()
    """Members of these provider groups are administrators."""
    password_login: bool = True
    """False: accounts sign in only through the provider (no password sign-in or sign-up)."""
    display_name: str | None = Field(None, min_length=1, max_length=64)
    """The provider's name on the web UI's sign-in button ("Sign in with <name>")."""

    @field_validator("issuer", "redirect_uri")
    @classmethod
    def _absolute_url(cls, url: str) -> str:
        return check_http_url(url)

    @field_validator("client_secret_env")
    @classmethod
    def _variable(cls, name: str | None) -> str | None:
        return None if name is None else check_variable_name(name)


class ServerSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    registration: Literal["open", "closed", "invite"] | None = None
    """``open``: anyone who reaches the server may sign up; ``closed`` for a team server whose
    accounts exist already; ``invite``: only with a one-time link an administrator made.
    Unset: open on a loopback address, closed otherwise. ``true``/``false`` are the old
    spellings."""
    admins: tuple[str, ...] = ()
    """Usernames made administrators at each start (the accounts that have them then)."""
    oidc: OidcSettings | None = None
    open_registration_with_access_lists: bool = False
    """Start although ``users`` access lists exist while registration is open (refused
    otherwise: a listed name that has no account yet could be taken by anyone)."""
    workers: PositiveInt = 1
    """Server processes sharing the port; more than one needs PostgreSQL."""
    token_ttl_hours: float = Field(168.0, gt=0)
    """Lifetime of a bearer token from login (default 7 days)."""
    session_idle_s: float = Field(300.0, gt=0)
    """An open session without a turn for this long is closed; the next message resumes it."""
    max_body_bytes: PositiveInt = 32 * 1024 * 1024
    """Largest body of a message or an upload, read only once the sender's token is checked
    (a 20 MB image travels base64-encoded, about 27 MB)."""
    max_anonymous_body_bytes: PositiveInt = 16 * 1024
    """Largest body read before the sender is known; a larger one needs a valid token first."""
    header_timeout_s: float = Field(10.0, gt=0)
    """A connection must send its request line and headers within this long of opening (or of
    the previous answer ending), or it is closed."""
    body_timeout_s: float = Field(60.0, gt=0)
    """A request's whole body must arrive within this long of its headers, or it is refused
    (408) and the connection closed; a 32 MiB upload within 60 s needs about 4.5 Mbit/s."""
    keep_alive_timeout_s: PositiveInt = 5
    """An idle kept-alive connection is closed after this long."""
    max_connections: PositiveInt = 500
    """Open connections per server process (SSE streams included); beyond it requests are
    answered 503 and further connections closed at once. Keep it under ``ulimit -n``."""
    api_docs: bool = False
    """Serve the interactive API docs (``/docs``, ``/redoc``), which load their scripts from a
    public CDN; ``/openapi.json`` is always served."""
    keepalive_s: float = Field(15.0, gt=0)
    """Idle SSE streams get a comment line this often, so proxies keep them open."""
    login_attempts: PositiveInt = 5
    login_window_s: float = Field(300.0, gt=0)
    """After ``login_attempts`` failures within the window, logins for that username and
    client address are refused with 429 until the oldest failure leaves the window."""
    address_login_attempts: PositiveInt = 20
    """Failed logins from one client address within ``login_window_s``, whatever the
    usernames; then every login from that address is refused with 429."""
    registration_attempts: PositiveInt = 10
    registration_window_s: float = Field(3600.0, gt=0)
    """Sign-ups tried from one client address within the window; then 429."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (``10.0.0.0/8``) of reverse proxies in front: a request from one
    of them is taken to come from the address its ``X-Forwarded-For`` names (and its scheme
    from ``X-Forwarded-Proto``), so the per-address limits count each client. Empty (the
    default): the headers are ignored, since any client could forge them."""
    password_hash_memory_kib: int = Field(64 * 1024, ge=8 * 1024)
    """Memory of one Argon2id password hash, in KiB. With ``password_hash_iterations`` = 3
    the default is RFC 9106's recommended setting for memory-constrained machines; less makes
    sign-ins cheaper and a stolen database's hashes cheaper to crack. Hashes made with other
    settings still verify and are redone with these at their owner's next sign-in."""
    password_hash_iterations: PositiveInt = 3
    """Argon2id passes over that memory per password hash."""
    hash_concurrency: PositiveInt | None = None
    """Password hashes computed at once (each takes ``password_hash_memory_kib`` and a core);
    None: the CPU count."""
    hash_queue: NonNegativeInt | None = None
    """Sign-ins waiting for a hashing slot, beyond which one more is refused at once with 503;
    None: 2 × ``hash_concurrency``, so a sign-in waits at most about three hash times."""

    max_message_chars: PositiveInt = 1024 * 1024
    """Most characters of text (text blocks and attached files together) one chat message
    may hold: a pasted log of 1 MiB fits; more is refused with 413 before any work."""
    # What one user may hold of this process and of the database, so no user can take what
    # the others need (see docs/workbench.md, "Limits per user").
    user_open_sessions: PositiveInt = 20
    """Sessions of one user this process keeps open; their least recently used idle one is
    closed to make room."""
    user_running_turns: PositiveInt = 4
    """Turns of one user running at once in this process."""
    user_streams: PositiveInt = 20
    """SSE responses (sends and re-attaches) of one user open at once in this process."""
    user_stored_sessions: PositiveInt = 10_000
    user_prompts: PositiveInt = 500
    user_knowledge_documents: PositiveInt = 1_000

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network") from None
        return entries

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, table: Any) -> Any:
        moved = "lease_ttl_s has moved to [database] (one lease time for youyou chat and serve)"
        return refuse_key(table, "lease_ttl_s", moved)

    @field_validator("registration", mode="before")
    @classmethod
    def _old_switch(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return "open" if value else "closed"
        return value

    @property
    def registration_mode(self) -> Literal["open", "closed", "invite"]:
        """``registration``, or by default open only where nobody else can reach the server."""
        if self.registration is not None:
            return self.registration
        return "open" if is_loopback(self.host) else "closed"

    @property
    def registration_open(self) -> bool:
        return self.registration_mode == "open"


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
