"""The web UI's JavaScript is type-checked: every module starts with ``// @ts-check`` and
``tsc --noEmit`` (TypeScript pinned in ``tests/js/package-lock.json``, installed there by
``npm ci``) finds no error in its JSDoc types. Node serves the tests only: installing or
running YouYou never needs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "src" / "youyou" / "workbench" / "static"
TYPECHECK = ROOT / "tests" / "js"
TSC = TYPECHECK / "node_modules" / ".bin" / "tsc"


def test_every_module_asks_to_be_checked() -> None:
    modules = sorted(STATIC.glob("*.js"))
    assert modules
    unchecked = [m.name for m in modules if not m.read_text("utf-8").startswith("// @ts-check\n")]
    assert unchecked == []


def test_tsc_finds_no_type_error() -> None:
    if shutil.which("node") is None:
        pytest.skip("Node is not installed (only this check needs it)")
    if not TSC.exists():
        if os.environ.get("CI"):
            pytest.fail("run `npm ci` in tests/js (.ci/run does) to install TypeScript")
        pytest.skip("TypeScript is not installed: run `npm ci` in tests/js")
    result = subprocess.run(
        [str(TSC), "--noEmit", "-p", str(TYPECHECK / "tsconfig.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
