"""Interfaces the kernel depends on; adapters implement them (docs/architecture.md, 'Layers')."""

from youyou.ports.memory_storage import MemoryStorage
from youyou.ports.model_provider import ModelProvider
from youyou.ports.plugin import Plugin, PluginRegistrar
from youyou.ports.session_lease import SessionLeases
from youyou.ports.session_storage import SessionStorage
from youyou.ports.token_counter import TokenCounter
from youyou.ports.tool import ToolHandler
from youyou.ports.tracer import Tracer, TraceSpan

__all__ = [
    "MemoryStorage",
    "ModelProvider",
    "Plugin",
    "PluginRegistrar",
    "SessionLeases",
    "SessionStorage",
    "TokenCounter",
    "ToolHandler",
    "TraceSpan",
    "Tracer",
]
