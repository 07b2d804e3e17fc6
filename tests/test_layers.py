"""Imports run one way. The kernel is layered: ``domain`` (the model, no I/O) < ``ports``
(the protocols adapters implement) < ``application`` (the use cases) < ``api`` (what embedders
call); ``adapters`` and ``config`` sit outside it, and the products (``workbench``, ``cli``) on
top. A module that imports against the direction couples a lower layer to a higher one, so
the rules are checked on the source itself (an ``ast`` walk, type-checking imports included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import youyou

SRC = Path(youyou.__file__).parent
_ANYTHING_BUT_PRODUCTS = frozenset(
    {"", "domain", "ports", "application", "api", "adapters", "config", "bootstrap", "bulk"}
)
ALLOWED: dict[str, frozenset[str]] = {
    # "" is the package root (``youyou``: the version, and names resolved on first use)
    "domain": frozenset({"domain"}),
    "ports": frozenset({"domain", "ports"}),
    "application": frozenset({"domain", "ports", "application", "bulk"}),
    "api": frozenset({"domain", "ports", "application", "api"}),
    "bulk": frozenset(),
    "adapters": frozenset({"", "domain", "ports", "adapters", "config", "bulk"}),
    "config": frozenset({"domain", "adapters", "config"}),
    "bootstrap": _ANYTHING_BUT_PRODUCTS,
    "": _ANYTHING_BUT_PRODUCTS,
    "workbench": _ANYTHING_BUT_PRODUCTS | {"workbench"},
    "cli": _ANYTHING_BUT_PRODUCTS | {"workbench", "cli"},
    "__main__": frozenset({"cli"}),
}
# The builder wires the default token counter when an embedder registers none (imported only
# then): the one place the kernel reaches for an adapter.
EXCEPTIONS = frozenset({("youyou.api.builder", "youyou.adapters.tokens")})


def module_name(root: Path, path: Path) -> str:
    parts = ("youyou", *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    """``youyou.domain.config`` → ``domain``; ``youyou`` itself → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def youyou_imports(path: Path) -> Iterator[str]:
    """Every ``youyou`` module ``path`` imports, at any depth (functions, ``TYPE_CHECKING``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            names = [node.module or ""]
        else:
            continue
        yield from (name for name in names if name == "youyou" or name.startswith("youyou."))


def violations(root: Path) -> tuple[set[str], list[str]]:
    """The layers found under ``root`` and every import against the rules."""
    seen: set[str] = set()
    wrong: list[str] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(root, path)
        source = layer(module)
        seen.add(source)
        allowed = ALLOWED[source]
        for target in youyou_imports(path):
            if layer(target) not in allowed and (module, target) not in EXCEPTIONS:
                wrong.append(f"{module} imports {target}")
    return seen, wrong


def test_imports_run_one_way() -> None:
    seen, wrong = violations(SRC)
    assert seen == set(ALLOWED), "a new top-level package needs its rule"
    assert wrong == []


def test_an_import_against_the_direction_is_reported(tmp_path: Path) -> None:
    """The check itself can fail: each wrong import of a small tree is named, and the allowed
    ones are not."""
    files = {
        "__init__.py": "import youyou.domain\n",
        "domain/__init__.py": "from youyou.domain import errors\n",
        "domain/bad.py": "from youyou.workbench.hub import SessionHub\n",
        "ports/bad.py": "import youyou.application.kernel\n",
        "application/bad.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from youyou.adapters.storage import sql\n"
        ),
        "api/builder.py": "def f():\n    from youyou.adapters.tokens import counter_for_model\n",
        "api/session.py": "from youyou.adapters.tokens import counter_for_model\n",
        "adapters/bad.py": "from youyou.cli.main import app\n",
        "config/ok.py": "from youyou.adapters.private_files import data_dir\n",
        "bulk.py": "from youyou.domain import errors\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")

    seen, wrong = violations(tmp_path)
    assert seen == {"", "domain", "ports", "application", "api", "adapters", "config", "bulk"}
    assert wrong == [
        "youyou.adapters.bad imports youyou.cli.main",
        "youyou.api.session imports youyou.adapters.tokens",
        "youyou.application.bad imports youyou.adapters.storage",
        "youyou.bulk imports youyou.domain",
        "youyou.domain.bad imports youyou.workbench.hub",
        "youyou.ports.bad imports youyou.application.kernel",
    ]
