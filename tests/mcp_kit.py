"""The demo MCP server (tests/mcp_servers/demo_server.py) over stdio or streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from port_kit import free_port
from youyou.config import McpServerSettings

DEMO = Path(__file__).parent / "mcp_servers" / "demo_server.py"
MARKER_VARIABLE = "YOUYOU_TEST_MCP_MARKERS"


def stdio_settings(**extra: Any) -> McpServerSettings:
    """The demo server as a child process; it finds the marker directory through ``env``."""
    return McpServerSettings(
        id=extra.pop("id", "demo"),
        command=sys.executable,
        args=(str(DEMO), "stdio"),
        env={"DEMO_MARKER_DIR": MARKER_VARIABLE},
        **extra,
    )


@contextmanager
def http_demo(marker_dir: Path) -> Iterator[str]:
    """Serve the demo over streamable HTTP in a child process; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(DEMO), "http", str(port)],
        env={**os.environ, "DEMO_MARKER_DIR": str(marker_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the demo MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _contents(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def wait_for_file(path: Path, within_s: float = 10.0) -> str:
    """The file's text once it is written (not merely created: a marker's text comes in the
    write after the file appears); fails after ``within_s`` seconds."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not (text := _contents(path)):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{path.name} did not appear within {within_s:g} s")
        await asyncio.sleep(0.01)
    return text
