"""``youyou.config`` names its public surface once: ``__all__`` is exactly the public names
its modules define, so a new setting cannot be left out and none disappears unnoticed."""

from __future__ import annotations

import ast
from pathlib import Path

import youyou.config

PUBLIC = {
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
}


def _defined_publicly(module: Path) -> set[str]:
    """The public names a module's top level defines (classes, functions, constants)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_")}


def test_all_is_the_public_surface() -> None:
    assert len(youyou.config.__all__) == len(set(youyou.config.__all__))
    assert set(youyou.config.__all__) == PUBLIC


def test_every_public_name_of_the_modules_is_exported_and_resolves() -> None:
    package = Path(youyou.config.__file__).parent
    defined = set().union(
        *(_defined_publicly(m) for m in package.glob("*.py") if m.name != "__init__.py")
    )
    assert defined == PUBLIC
    namespace: dict[str, object] = {}
    exec("from youyou.config import *", namespace)
    assert set(namespace) >= PUBLIC
