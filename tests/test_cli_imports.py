"""``youyou --help`` stays fast by not importing the kernel's heavy dependencies.

A deterministic check instead of a timing test: a fresh interpreter imports the CLI (and shows
the help), then reports which of the heavy packages ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import youyou

HEAVY = (
    "sqlalchemy",
    "alembic",
    "aiosqlite",
    "asyncpg",
    "pydantic",
    "jsonschema",
    "openai",
    "anthropic",
    "fastapi",
    "uvicorn",
    "mcp",
    "prometheus_client",
    "argon2",
)

_REPORT = """
import json, sys
{body}
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
sys.stderr.write(json.dumps(loaded))
"""

_HELP = """
from youyou.cli.main import app
try:
    app({args!r}, prog_name="youyou")
except SystemExit as exit:
    assert exit.code == 0, exit.code
"""


def _heavy_modules_after(body: str) -> list[str]:
    code = _REPORT.format(body=body, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(done.stderr)
    return loaded


def test_importing_the_cli_loads_no_heavy_package() -> None:
    assert _heavy_modules_after("import youyou.cli.main") == []


def test_help_loads_no_heavy_package() -> None:
    assert _heavy_modules_after(_HELP.format(args=["--help"])) == []


def test_the_package_root_resolves_its_names_on_first_use() -> None:
    namespace: dict[str, object] = {}
    exec("from youyou import *", namespace)
    assert set(youyou.__all__) <= set(namespace)
    assert set(youyou.__all__) <= set(dir(youyou))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = youyou.no_such_name  # type: ignore[attr-defined]
