"""Model-facing names of MCP tools: ``<server>__<tool>``, inside the providers' name rule.

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``. Other characters become ``_``;
a name that is still too long, or that two tools of one server would share after that, ends in
``_`` + 8 hex digits of the SHA-256 of the tool's own name. The suffix depends on that name
alone, so a tool keeps its model-facing name across restarts and across listings, and a tool
whose name needed no change keeps it even when another tool's name collides with it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

MAX_TOOL_NAME = 64
SEPARATOR = "__"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_SUFFIX_DIGITS = 8


def _hashed(plain: str, tool: str) -> str:
    digest = hashlib.sha256(tool.encode("utf-8")).hexdigest()[:_SUFFIX_DIGITS]
    return f"{plain[: MAX_TOOL_NAME - _SUFFIX_DIGITS - 1]}_{digest}"


def model_tool_names(server_id: str, tools: Iterable[str]) -> dict[str, str]:
    """Each tool's server-side name → its model-facing name (``server_id`` is already valid)."""
    prefix = server_id + SEPARATOR
    plain = {tool: prefix + _NOT_ALLOWED.sub("_", tool) for tool in tools}
    shared = Counter(plain.values())
    names: dict[str, str] = {}
    for tool, name in plain.items():
        exact = name == prefix + tool
        if len(name) > MAX_TOOL_NAME or (shared[name] > 1 and not exact):
            name = _hashed(name, tool)
        names[tool] = name
    return names
