"""Configuration: one ``youyou.toml`` plus environment overrides (docs/providers.md lists keys).

The file path comes from the caller (``--config``) or ``YOUYOU_CONFIG``; with neither, every
default applies: 127.0.0.1:8000, SQLite in the user's data directory and the offline scripted
demo model. ``YOUYOU_DATABASE_URL`` wins over ``[database].url``, and ``youyou serve``'s
``--host``/``--port``/``--workers`` over ``[server]``, all in ``load_settings``. API keys are
never read from the file, only from the environment variable a provider names in
``api_key_env``. Every problem is an ``AgentError(INVALID_CONFIG)`` naming the offending key
path.

One module per job: ``base`` (what every section shares), ``secrets`` (secrets stay in the
environment), ``server``, ``providers``, ``mcp``, ``knowledge``, ``schema`` (the whole file)
and ``load`` (reading and resolving it).
"""

from youyou.config.base import Section, check_http_url, refuse_key
from youyou.config.knowledge import KnowledgeSourceSettings
from youyou.config.load import (
    CONFIG_ENV,
    DATABASE_URL_ENV,
    MAX_CONFIG_BYTES,
    ServerOverrides,
    load_settings,
    parse_settings,
)
from youyou.config.mcp import McpServerSettings, McpTransport
from youyou.config.providers import (
    DEMO_PROVIDER,
    PROVIDER_TYPES,
    AnthropicProviderSettings,
    LocalProviderSettings,
    ModelPrice,
    ModelSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    ProviderType,
    ScriptedProviderSettings,
)
from youyou.config.schema import (
    MEMORY_MODE_NAMES,
    PRODUCT_MAX_ACTIVE_SESSIONS,
    AgentSettings,
    CompactionSettings,
    DatabaseSettings,
    MemorySettings,
    Settings,
    SkillsSettings,
    TelemetrySettings,
    default_database_url,
    memory_mode_name,
)
from youyou.config.secrets import (
    SECRET_HEADERS,
    SecretsFromEnvironment,
    check_variable_name,
    looks_like_secret,
)
from youyou.config.server import OidcSettings, ServerSettings, is_loopback

__all__ = [
    "CONFIG_ENV",
    "DATABASE_URL_ENV",
    "DEMO_PROVIDER",
    "MAX_CONFIG_BYTES",
    "MEMORY_MODE_NAMES",
    "PRODUCT_MAX_ACTIVE_SESSIONS",
    "PROVIDER_TYPES",
    "SECRET_HEADERS",
    "AgentSettings",
    "AnthropicProviderSettings",
    "CompactionSettings",
    "DatabaseSettings",
    "KnowledgeSourceSettings",
    "LocalProviderSettings",
    "McpServerSettings",
    "McpTransport",
    "MemorySettings",
    "ModelPrice",
    "ModelSettings",
    "OidcSettings",
    "OpenAIProviderSettings",
    "ProviderSettings",
    "ProviderType",
    "ScriptedProviderSettings",
    "SecretsFromEnvironment",
    "Section",
    "ServerOverrides",
    "ServerSettings",
    "Settings",
    "SkillsSettings",
    "TelemetrySettings",
    "check_http_url",
    "check_variable_name",
    "default_database_url",
    "is_loopback",
    "load_settings",
    "looks_like_secret",
    "memory_mode_name",
    "parse_settings",
    "refuse_key",
]
