"""Ports for the servers a test starts, one range per test process.

A port found by binding to port 0 and closing the socket is free only for a moment: the
system hands the same ephemeral ports to other test processes' servers and to every client
connection, so a server started on it may fail to bind while the test, probing the port,
finds another process's server healthy there (and later talks to it: wrong database,
``401``, then a refused connection once that server stops). Each pytest-xdist worker takes its
ports in turn from a range of its own, below the ephemeral range, and skips any port that
something already holds.
"""

from __future__ import annotations

import itertools
import os
import socket

FIRST_PORT = 20000
PORTS_PER_PROCESS = 1500
"""Eight workers fit below 32768, where the system's ephemeral range starts."""


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", … under xdist
    return int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0


_START = FIRST_PORT + PORTS_PER_PROCESS * (_worker_index() % 8)
_NEXT = itertools.cycle(range(_START, _START + PORTS_PER_PROCESS))


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """The next port of this process's range that nothing listens on or connects from; a
    port is handed out again only after the other ports of the range."""
    for _ in range(PORTS_PER_PROCESS):
        port = next(_NEXT)
        if _bindable(port):
            return port
    raise RuntimeError(f"no free port in {_START}–{_START + PORTS_PER_PROCESS - 1}")
