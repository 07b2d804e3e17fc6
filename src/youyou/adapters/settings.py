"""Configuration: one ``youyou.toml`` plus environment overrides (docs/providers.md lists keys).

The file path comes from the caller (``--config``) or ``YOUYOU_CONFIG``; with neither, every
default applies: 127.0.0.1:8000, SQLite in the user's data directory and the offline scripted
demo model. ``YOUYOU_DATABASE_URL`` wins over ``[database].url``. API keys are never read from
the file, only from the environment variable a provider names in ``api_key_env``.
Every problem is an ``AgentError(INVALID_CONFIG)`` naming the offending key path.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from youyou.adapters.private_files import data_dir
from youyou.adapters.providers.scripted import DEMO_MODEL
from youyou.domain.approvals import ApprovalPolicy
from youyou.domain.config import (
    AgentConfig,
    AgentConfigBase,
    CompactionPolicy,
    CompactionPolicyBase,
    Count,
    MemoryMode,
    SummaryFailurePolicy,
    config_error,
    describe_problem,
)
from youyou.domain.model import ModelInfo, ProviderCapability

CONFIG_ENV = "YOUYOU_CONFIG"
DATABASE_URL_ENV = "YOUYOU_DATABASE_URL"
MAX_CONFIG_BYTES = 1024 * 1024


# Headers that carry credentials whatever their value looks like.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"}
)
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_PREFIXES = ("sk-", "sk_", "pk-", "rk-", "ghp_", "gho_", "github_pat_", "xox", "AIza", "hf_")
_KEY_SCHEMES = ("bearer ", "basic ", "token ")


def looks_like_secret(value: str) -> bool:
    """An API key, a token or a credential header value rather than a name or plain text:
    a vendor key prefix, an auth scheme, or a long random-looking word."""
    text = value.strip()
    if text.startswith(_KEY_PREFIXES) or text.lower().startswith(_KEY_SCHEMES):
        return True
    random_looking = (
        any(c.islower() for c in text)
        and any(c.isupper() for c in text)
        and any(c.isdigit() for c in text)
    )
    return len(text) >= 20 and " " not in text and random_looking


def check_variable_name(name: str, where: str = "") -> str:
    """``name`` if it can name an environment variable; otherwise an error that does not
    repeat it, since what was written there is most likely the secret itself."""
    if looks_like_secret(name) or _VARIABLE_NAME.fullmatch(name) is None:
        raise ValueError(
            f"{where}this looks like a key, not a variable name (the value is not shown): "
            "put the secret in an environment variable and write that variable's name here"
        )
    return name


def check_http_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host: without a scheme the SDKs take
    ``localhost:8080/v1`` for a relative path and every request fails far from here."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "must be an absolute http:// or https:// URL with a host, e.g. "
            '"http://127.0.0.1:8080/v1"'
        )
    return url


def default_database_url() -> str:
    path = data_dir() / "youyou.db"
    return f"sqlite+aiosqlite:///{path}"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OidcSettings(_Section):
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


class ServerSettings(_Section):
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
    lease_ttl_s: float = Field(30.0, gt=0)
    """A crashed process's session lease expires after this long."""
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
    hash_concurrency: PositiveInt | None = None
    """Password hashes computed at once (each takes 64 MiB and a core); None: the CPU count."""
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


class DatabaseSettings(_Section):
    url: str = Field(default_factory=default_database_url, min_length=1)
    sqlite_synchronous: Literal["normal", "full"] = "normal"
    """``normal``: a commit survives a killed process, not a power cut; ``full``: both."""
    lease_ttl_s: float = Field(30.0, gt=0)
    """The session lease of a ``youyou chat`` that stopped (on another machine) expires after
    this long; one of this machine is taken over at once."""


# The CLI and the server keep one active session per open conversation; the kernel's own
# default of 1 is for embedders.
PRODUCT_MAX_ACTIVE_SESSIONS = 10_000


class AgentSettings(AgentConfigBase):
    """``[agent]``: the kernel's ``AgentConfig`` fields with their bounds and defaults, except
    that ``default_model`` defaults to the first model and ``max_active_sessions`` to
    ``PRODUCT_MAX_ACTIVE_SESSIONS``."""

    default_model: str | None = None
    max_active_sessions: Count = PRODUCT_MAX_ACTIVE_SESSIONS


class MemorySettings(_Section):
    enabled: bool = True
    """Long-term memory: extraction at checkpoints and recall into prompts."""
    close_timeout_s: float = Field(10.0, gt=0)
    """How long ``youyou chat`` waits for the memory extraction of a session it closes; what
    it did not extract stays in the ledger for when the session is resumed and closed again."""


# Names users type (workbench, CLI) ↔ the kernel's modes; ``youyou.toml`` also takes the kernel's.
MEMORY_MODE_NAMES: dict[str, MemoryMode] = {
    "every_30_turns": MemoryMode.EVERY_N_TURNS,
    "context_70_percent": MemoryMode.CONTEXT_PERCENT,
    "manual": MemoryMode.MANUAL,
}


def memory_mode_name(mode: MemoryMode) -> str:
    return next(name for name, value in MEMORY_MODE_NAMES.items() if value is mode)


class CompactionSettings(CompactionPolicyBase):
    """The default trigger of new sessions and the thresholds of all triggers: the kernel's
    ``CompactionPolicy`` fields with their bounds and defaults.

    ``mode`` takes the workbench names (``every_30_turns``, ``context_70_percent``,
    ``manual``) or the kernel's (``every_n_turns``, ``context_percent``). The workbench never
    drops facts silently, so a failed summary keeps the boundary (``on_summary_failure``).
    """

    on_summary_failure: SummaryFailurePolicy = SummaryFailurePolicy.FAIL

    @model_validator(mode="before")
    @classmethod
    def _mode_alias(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("mode") in MEMORY_MODE_NAMES:
            return {**data, "mode": MEMORY_MODE_NAMES[data["mode"]]}
        return data

    def policy(self) -> CompactionPolicy:
        return CompactionPolicy(**self.model_dump())


class ProviderType(StrEnum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    LOCAL = "local"
    SCRIPTED = "scripted"


@dataclass(frozen=True, slots=True)
class ModelPrice:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        ) / 1_000_000


class ModelSettings(_Section):
    id: str = Field(min_length=1)
    display_name: str | None = None
    context_window: PositiveInt
    capabilities: frozenset[ProviderCapability] = frozenset(
        {ProviderCapability.TOOL_USE, ProviderCapability.STREAMING}
    )
    api_name: str | None = None
    """The model name sent to the API when it differs from ``id`` (ids are globally unique)."""
    input_price_per_mtok: float | None = Field(None, ge=0)
    output_price_per_mtok: float | None = Field(None, ge=0)
    """Prices per million input / output tokens (any currency, the same for every model): with
    either set, each turn's cost is stored with its usage (the other counts as 0)."""

    @property
    def price(self) -> ModelPrice | None:
        if self.input_price_per_mtok is None and self.output_price_per_mtok is None:
            return None
        return ModelPrice(self.input_price_per_mtok or 0.0, self.output_price_per_mtok or 0.0)

    def to_model_info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.id,
            display_name=self.display_name or self.id,
            context_window=self.context_window,
            capabilities=self.capabilities,
        )


class _SecretsFromEnvironment(_Section):
    """Extra HTTP headers: plain values in ``headers``, secret ones read from the environment
    variables named in ``headers_env``. A secret written into the file is refused, and never
    repeated in the error (configuration errors end up in terminals and CI logs)."""

    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if name.lower() in SECRET_HEADERS or looks_like_secret(value):
                raise ValueError(
                    f"{name}: secrets are read from the environment only; set "
                    f'headers_env = {{ "{name}" = "NAME_OF_THE_VARIABLE" }} instead '
                    "(the value is not shown)"
                )
        return headers

    @field_validator("headers_env")
    @classmethod
    def _variable_names(cls, names: dict[str, str]) -> dict[str, str]:
        for header, variable in names.items():
            check_variable_name(variable, f"{header}: ")
        return names

    def resolved_headers(self, environ: Mapping[str, str], where: str) -> dict[str, str]:
        """``headers`` plus each ``headers_env`` header read from its variable (which must be
        set); ``where`` names this entry in the error, e.g. ``providers[0]``."""
        resolved = dict(self.headers)
        for header, variable in self.headers_env.items():
            value = environ.get(variable)
            if not value:
                raise config_error(
                    f"{where}.headers_env.{header}: environment variable {variable} is not set"
                )
            resolved[header] = value
        return resolved


class _Provider(_Section):
    """What every ``[[providers]]`` entry has; its ``type`` decides which other keys exist."""

    id: str = Field(min_length=1)
    models: tuple[ModelSettings, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _no_inline_secrets(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "api_key" in data:
            raise ValueError(
                "api_key: keys are read from the environment only; "
                'set api_key_env = "NAME_OF_THE_VARIABLE" instead'
            )
        return data

    @property
    def offline_demo(self) -> bool:
        """The built-in demo answers: a scripted provider without a script of its own."""
        return False

    def model_infos(self) -> tuple[ModelInfo, ...]:
        return tuple(m.to_model_info() for m in self.models)


class _HttpProvider(_Provider, _SecretsFromEnvironment):
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(60.0, gt=0)
    """The longest silence of an open stream (and of a connect or a write)."""
    first_byte_timeout_s: float = Field(30.0, gt=0)
    """How long an attempt waits for the response to start: a silent endpoint fails fast."""
    max_attempts: PositiveInt = 3
    retry_base_delay_s: float = Field(0.5, ge=0)

    @field_validator("base_url")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, name: str | None) -> str | None:
        return None if name is None else check_variable_name(name)


class OpenAIProviderSettings(_HttpProvider):
    """Any OpenAI-compatible endpoint."""

    type: Literal[ProviderType.OPENAI]
    stream_usage: bool = True


class AnthropicProviderSettings(_HttpProvider):
    type: Literal[ProviderType.ANTHROPIC]
    max_tokens: PositiveInt = 4096


class LocalProviderSettings(_Provider):
    """A GGUF model run by llama.cpp in a worker process."""

    type: Literal[ProviderType.LOCAL]
    model_path: str | None = None
    n_ctx: PositiveInt = 4096


class ScriptedProviderSettings(_Provider):
    """Answers replayed from ``script_path``, or the offline demo without one."""

    type: Literal[ProviderType.SCRIPTED]
    script_path: str | None = None
    models: tuple[ModelSettings, ...] = ()

    @property
    def offline_demo(self) -> bool:
        return self.script_path is None

    def model_infos(self) -> tuple[ModelInfo, ...]:
        return super().model_infos() or (DEMO_MODEL,)


ProviderSettings = Annotated[
    OpenAIProviderSettings
    | AnthropicProviderSettings
    | LocalProviderSettings
    | ScriptedProviderSettings,
    Field(discriminator="type"),
]
"""One ``[[providers]]`` entry: a key that its ``type`` does not have is an error."""
_PROVIDER_TYPES: dict[ProviderType, type[_Provider]] = {
    ProviderType.OPENAI: OpenAIProviderSettings,
    ProviderType.ANTHROPIC: AnthropicProviderSettings,
    ProviderType.LOCAL: LocalProviderSettings,
    ProviderType.SCRIPTED: ScriptedProviderSettings,
}


class McpTransport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


class McpServerSettings(_SecretsFromEnvironment):
    """An MCP server whose tools the model may call (docs/mcp.md).

    ``transport`` defaults from what is given: ``command`` → ``stdio``, ``url`` → ``http``
    (streamable HTTP). ``env`` maps each variable the server process gets to the name of the
    variable here that holds its value, so no secret is ever written into the file; the process
    sees only those plus a minimal safe set (PATH, HOME…). ``users`` and ``groups`` limit who
    gets the tools in the workbench (neither: everyone; see ``youyou.workbench.access``);
    ``name`` is the old spelling of ``id``. ``approval`` is the tools' approval policy
    (``mutating``: a tool without ``readOnlyHint: true`` asks a person first);
    ``approve_tools`` / ``ask_tools`` name tools (server-side names) that never / always ask
    (docs/approvals.md).
    """

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$", validation_alias=AliasChoices("id", "name"))
    transport: McpTransport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    timeout_ms: PositiveInt = 30_000
    startup_timeout_ms: PositiveInt = 30_000
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    users: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None
    approval: ApprovalPolicy = "mutating"
    approve_tools: tuple[str, ...] = ()
    ask_tools: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _default_transport(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "transport" not in data:
            has_command, has_url = data.get("command") is not None, data.get("url") is not None
            if has_command == has_url:
                raise ValueError(
                    "exactly one of command (stdio) or url (streamable HTTP) is required"
                )
            return {**data, "transport": "stdio" if has_command else "http"}
        return data

    @field_validator("id")
    @classmethod
    def _unambiguous_prefix(cls, server_id: str) -> str:
        if "__" in server_id:  # tools are named <id>__<tool>: the first "__" ends the id
            raise ValueError("must not contain '__'")
        return server_id

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)

    @field_validator("env")
    @classmethod
    def _env_names(cls, names: dict[str, str]) -> dict[str, str]:
        for variable, source in names.items():
            check_variable_name(variable, f"{variable}: ")
            check_variable_name(source, f"{variable}: ")
        return names

    @model_validator(mode="after")
    def _one_approval_per_tool(self) -> Self:
        if both := sorted(set(self.approve_tools) & set(self.ask_tools)):
            raise ValueError(f"{', '.join(both)}: in both approve_tools and ask_tools")
        return self

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        stdio_only = ("command", "args", "env", "cwd")
        http_only = ("url", "headers", "headers_env")
        wrong = http_only if self.transport is McpTransport.STDIO else stdio_only
        needed = "command" if self.transport is McpTransport.STDIO else "url"
        if getattr(self, needed) is None:
            raise ValueError(f"transport = {self.transport.value!r} needs {needed}")
        if given := [key for key in wrong if key in self.model_fields_set]:
            raise ValueError(f"{', '.join(given)}: not for transport = {self.transport.value!r}")
        return self

    def resolved_env(self, environ: Mapping[str, str], where: str) -> dict[str, str]:
        """``env`` with each value read from its named variable (which must be set)."""
        resolved: dict[str, str] = {}
        for variable, source in self.env.items():
            value = environ.get(source)
            if value is None:
                raise config_error(
                    f"{where}.env.{variable}: environment variable {source} is not set"
                )
            resolved[variable] = value
        return resolved

    def offers(self, tool_name: str) -> bool:
        """``enabled_tools`` (None: all) minus ``disabled_tools``; server-side names."""
        enabled = self.enabled_tools is None or tool_name in self.enabled_tools
        return enabled and tool_name not in self.disabled_tools

    def approval_for(self, tool_name: str) -> ApprovalPolicy:
        """The approval policy of one tool (server-side name): its list, else ``approval``."""
        if tool_name in self.ask_tools:
            return "always"
        if tool_name in self.approve_tools:
            return "never"
        return self.approval


class KnowledgeSourceSettings(_Section):
    """A directory of Markdown or text runbooks searched by ``search_knowledge``
    (docs/knowledge.md). ``path`` is relative to the working directory of ``youyou kb index``,
    the only command that reads it; ``users`` and ``groups`` limit who searches it in the
    workbench (neither: everyone)."""

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    path: Path
    glob: tuple[str, ...] = Field(("**/*.md", "**/*.txt"), min_length=1)
    users: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None

    @field_validator("glob", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class TelemetrySettings(_Section):
    """``[telemetry]``: OpenTelemetry traces (docs/telemetry.md), off by default; on, it
    needs the ``otel`` extra."""

    enabled: bool = False
    otlp_endpoint: str | None = None
    """OTLP over HTTP, e.g. ``http://127.0.0.1:4318/v1/traces``; unset: the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables."""
    service_name: str = Field("youyou", min_length=1)
    sample_ratio: float = Field(1.0, ge=0, le=1)
    """Share of traces kept, decided once per trace (a kept request keeps all its spans)."""
    record_content: bool = False
    """Put messages, prompts, tool arguments and results into spans: they may hold secrets
    and personal data, so only where the trace store may keep them."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)


class SkillsSettings(_Section):
    """``dir``: every ``*/SKILL.md`` under it is loaded through the shared validator."""

    dir: Path | None = None


DEMO_PROVIDER = ScriptedProviderSettings(id="scripted", type=ProviderType.SCRIPTED)


class Settings(_Section):
    server: ServerSettings = ServerSettings()
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    agent: AgentSettings = AgentSettings()
    memory: MemorySettings = MemorySettings()
    compaction: CompactionSettings = CompactionSettings()
    skills: SkillsSettings = SkillsSettings()
    providers: tuple[ProviderSettings, ...] = (DEMO_PROVIDER,)
    mcp_servers: tuple[McpServerSettings, ...] = ()
    knowledge: tuple[KnowledgeSourceSettings, ...] = ()
    telemetry: TelemetrySettings = TelemetrySettings()

    @model_validator(mode="after")
    def _references(self) -> Self:
        model_ids = self.model_ids()
        _unique("providers[].id", [p.id for p in self.providers])
        _unique("providers[].models[].id", model_ids)
        _unique("mcp_servers[].id", [s.id for s in self.mcp_servers])
        _unique("knowledge[].id", [k.id for k in self.knowledge])
        if not self.providers:
            raise ValueError("providers: at least one [[providers]] entry is required")
        for key in ("default_model", "compact_model", "memory_model"):
            model = getattr(self.agent, key)
            if model is not None and model not in model_ids:
                raise ValueError(
                    f"agent.{key}: {model!r} is not a model of any [[providers]] entry "
                    f"(known: {', '.join(model_ids)})"
                )
        return self

    def access_lists(self) -> dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]]:
        """Every entry with a ``users`` or a ``groups`` list (or both), keyed by where it is
        (``mcp_servers.ID``, ``knowledge.ID``): its (users, groups)."""
        entries: list[tuple[str, McpServerSettings | KnowledgeSourceSettings]] = [
            *((f"mcp_servers.{s.id}", s) for s in self.mcp_servers),
            *((f"knowledge.{k.id}", k) for k in self.knowledge),
        ]
        return {
            where: (entry.users, entry.groups)
            for where, entry in entries
            if entry.users is not None or entry.groups is not None
        }

    def model_prices(self) -> dict[str, ModelPrice]:
        """The models that have prices configured, by id."""
        return {
            model.id: model.price
            for provider in self.providers
            for model in provider.models
            if model.price is not None
        }

    def model_ids(self) -> list[str]:
        return [m.model_id for p in self.providers for m in p.model_infos()]

    @property
    def default_model(self) -> str:
        return self.agent.default_model or self.model_ids()[0]

    def agent_config(self) -> AgentConfig:
        """The kernel's ``AgentConfig`` built from ``[agent]``."""
        values = self.agent.model_dump(exclude={"default_model"})
        return AgentConfig(
            default_model=self.default_model, compaction=self.compaction.policy(), **values
        )


def _unique(key: str, values: list[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{key}: {value!r} appears more than once")
        seen.add(value)


def _as_written(error: ErrorDetails) -> ErrorDetails:
    """A ``[[providers]]`` problem named as the file spells it: the path without the type that
    picked the entry's model, and a key of another type saying which types have it."""
    loc = error["loc"]
    if len(loc) < 2 or loc[0] != "providers" or not isinstance(loc[1], int):
        return error
    fixed = error.copy()
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        fixed["loc"] = (*loc[:2], "type")
        fixed["msg"] = "must be one of " + ", ".join(repr(t.value) for t in ProviderType)
        return fixed
    if len(loc) < 3 or loc[2] not in set(ProviderType):
        return error
    fixed["loc"] = key = (*loc[:2], *loc[3:])
    if error["type"] == "extra_forbidden" and len(key) == 3:
        owners = [t for t, model in _PROVIDER_TYPES.items() if key[2] in model.model_fields]
        if owners:
            fixed["msg"] = "applies only to type = " + " or ".join(repr(t.value) for t in owners)
    if key[2:] == ("models",) and error["type"] in ("missing", "too_short"):
        fixed["msg"] = "at least one [[providers.models]] entry is required"
    return fixed


def _only_for_its_entries(error: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A list "too short" only because its entries failed on their own: pydantic counts the
    valid entries alone, so the entries' own problems are the ones to report."""
    loc = error["loc"]
    return error["type"] == "too_short" and any(
        len(other["loc"]) > len(loc) and other["loc"][: len(loc)] == loc for other in errors
    )


def _read_file(path: Path) -> dict[str, Any]:
    """Parse the file; every way it can be unusable (missing, a directory, unreadable, binary,
    endless like ``/dev/zero``) is INVALID_CONFIG naming it."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise config_error(f"{path} is larger than 1 MiB: is it really youyou.toml?")
        return tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError as exc:
        raise config_error(f"configuration file not found: {path}") from exc
    except IsADirectoryError as exc:
        raise config_error(f"{path} is a directory, not a configuration file") from exc
    except OSError as exc:
        raise config_error(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise config_error(
            f"{path} is not UTF-8 text (byte {exc.start}): is it really youyou.toml?"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise config_error(f"{path} is not valid TOML: {exc}") from exc


def parse_settings(data: Mapping[str, Any], *, source: str = "configuration") -> Settings:
    """Validate already-parsed TOML data; errors name each offending key path."""
    try:
        return Settings.model_validate(dict(data))
    except ValidationError as exc:
        errors = exc.errors()
        problems = [
            describe_problem(_as_written(error))
            for error in errors
            if not _only_for_its_entries(error, errors)
        ]
        # Not chained: the validation error repeats the input values, secrets included.
        raise config_error(f"invalid {source}: " + "; ".join(problems)) from None


def load_settings(
    path: str | Path | None = None, *, environ: Mapping[str, str] | None = None
) -> Settings:
    """Read the TOML file (``path`` or ``$YOUYOU_CONFIG``, else none) and apply env overrides."""
    env = os.environ if environ is None else environ
    chosen = path or env.get(CONFIG_ENV) or None
    data: dict[str, Any] = _read_file(Path(chosen)) if chosen else {}
    if database_url := env.get(DATABASE_URL_ENV):
        database = data.get("database", {})
        data["database"] = (
            {**database, "url": database_url}
            if isinstance(database, dict)
            else {"url": database_url}
        )
    return parse_settings(data, source=str(chosen) if chosen else "configuration")
