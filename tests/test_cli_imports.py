"""``youyou --help`` and ``youyou chat`` stay fast by not importing what they do not use.

A deterministic check instead of a timing test: a fresh interpreter imports the CLI (shows the
help, or answers one message), then reports which of the heavy packages ended up in
``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import youyou
from cli_kit import Cli

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
    "rich",  # help is plain text: formatting it with Rich cost half of ``youyou --help``
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
        _ = youyou.no_such_name


_LOADED = """
import json, sys
{body}
names = {names!r}
loaded = [n for n in names if any(m == n or m.startswith(n + ".") for m in sys.modules)]
with open({out!r}, "w") as out:
    json.dump(loaded, out)
"""

_CHAT = """
from youyou.cli.main import app
try:
    app(["chat", "-m", "hi"], prog_name="youyou")
except SystemExit as exit:
    assert not exit.code, exit.code
"""

# Loaded only when needed: migrations to run, Markdown to render (not in a pipe), a knowledge
# base configured, a tool called (its arguments checked), a SKILL.md or a script file parsed.
NOT_FOR_A_CHAT_MESSAGE = (
    "alembic",
    "jsonschema",
    "yaml",
    "mako",
    "rich.markdown",
    "markdown_it",
    "pygments",
    "youyou.adapters.knowledge",
)


def _loaded_after(body: str, names: tuple[str, ...], tmp_path: Path) -> list[str]:
    out = tmp_path / "loaded.json"
    code = _LOADED.format(body=body, names=names, out=str(out))
    env = Cli(tmp_path).env(with_config=False)
    subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(out.read_text())
    return loaded


def test_a_chat_message_to_a_database_at_head_loads_only_what_it_uses(tmp_path: Path) -> None:
    assert "alembic" in _loaded_after(_CHAT, ("alembic",), tmp_path)  # creates the database
    assert _loaded_after(_CHAT, NOT_FOR_A_CHAT_MESSAGE, tmp_path) == []


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("youyou.adapters.storage.engine", ("alembic",)),
        ("youyou.adapters.storage.lease", ("sqlalchemy.dialects.postgresql",)),
        ("youyou.adapters.storage.sql", ("sqlalchemy.dialects.postgresql", "alembic")),
        (
            "youyou.adapters.memory.sqlite_fts",
            (
                "sqlalchemy.dialects.postgresql",
                "snowballstemmer",
                "youyou.adapters.memory.postgres",
            ),
        ),
        ("youyou.adapters.memory.in_memory", ("snowballstemmer", "sqlalchemy")),
        ("youyou.domain.tool_schema", ("jsonschema",)),
        ("youyou.cli.render", ("rich.markdown",)),
        ("youyou.cli.transcript", ("rich.markdown",)),
        ("youyou.bootstrap", ("youyou.adapters.knowledge", "alembic")),
        # single sign-on's libraries, for a server without [server.oidc]
        ("youyou.workbench.server", ("authlib", "joserfc", "youyou.workbench.oidc")),
        # what the account commands use: the store and accounts, not the web server
        ("youyou.workbench.accounts", ("fastapi", "uvicorn", "youyou.workbench.app")),
        ("youyou.workbench.auth", ("fastapi", "uvicorn", "youyou.workbench.app")),
        # what every command shares: the account, db and kb commands start without the chat's
        ("youyou.cli.process", ("sqlalchemy", "youyou.api", "youyou.application", "pydantic")),
    ],
)
def test_modules_load_their_costly_dependencies_on_first_use(
    module: str, names: tuple[str, ...], tmp_path: Path
) -> None:
    assert _loaded_after(f"import {module}", names, tmp_path) == []
