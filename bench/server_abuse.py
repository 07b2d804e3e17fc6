"""Hostile clients against a real ``youyou serve``: does ``/healthz`` still answer quickly?

Starts ``youyou serve`` (a temporary SQLite database, the offline demo model, a free port),
then measures ``GET /healthz``, each on a new connection as a load balancer's check does,
twice: alone, and while an attack runs. The attack, all from this process:

* ``--idle N`` connections that send nothing;
* ``--slowloris N`` connections that send a request head one byte every ``--drip-s`` seconds;
* ``--slow-bodies N`` anonymous requests declaring a 32 MiB body and sending it in 64 KiB
  pieces, then going quiet (refused at once: no body is read before a token is checked);
* ``--trickle N`` anonymous logins whose small body arrives a byte every ``--drip-s`` seconds
  (cut off by ``[server] body_timeout_s``).

Prints p50/p99/max of the health checks in both phases, failed checks, the server's RSS
before and after, and how many attacking connections the server closed. The server runs with
its default ``[server]`` settings except those given with ``--set key=value``.

Run: ``.venv/bin/python bench/server_abuse.py [--seconds 20] [--idle 200] [--slowloris 50]
[--slow-bodies 6] [--trickle 20] [--set header_timeout_s=10] [--nofile 256]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

_SCRIPT = Path(sys.executable).with_name("youyou")
SERVE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "youyou"]
MIB = 1024 * 1024
HUGE = b"x" * 30 * MIB
PAD = b" " * 3999
PROBE = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"


@dataclass(frozen=True, slots=True)
class Plan:
    head: bytes
    head_drip_s: float
    body: bytes
    body_drip_s: float


@dataclass
class Attack:
    opened: int = 0
    closed_by_server: int = 0
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def limit_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def probe(port: int) -> float | None:
    """Seconds for one health check on a new connection; None when it failed."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(PROBE)
            answer = await reader.read()
            writer.close()
    except (OSError, TimeoutError):
        return None
    return time.perf_counter() - started if answer.startswith(b"HTTP/1.1 200") else None


async def measure(port: int, seconds: float, interval_s: float = 0.02) -> list[float | None]:
    results: list[float | None] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        results.append(await probe(port))
        await asyncio.sleep(interval_s)
    return results


async def attacker(port: int, attack: Attack, plan: Plan) -> None:
    """Sends the plan's head, then its body, each at once (in 64 KiB pieces) or a byte every
    ``drip_s``; then holds the connection open until the server closes it."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    attack.opened += 1
    try:
        for data, drip_s in ((plan.head, plan.head_drip_s), (plan.body, plan.body_drip_s)):
            step = 1 if drip_s else 65536
            for start in range(0, len(data), step):
                writer.write(data[start : start + step])
                await writer.drain()
                if drip_s:
                    await asyncio.sleep(drip_s)
        await reader.read()
    except OSError:
        pass
    attack.closed_by_server += 1
    writer.close()


def summary(name: str, results: list[float | None]) -> str:
    times = sorted(r * 1000 for r in results if r is not None)
    failed = len(results) - len(times)
    if not times:
        return f"{name:>8}: {len(results)} checks, all failed"
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    return (
        f"{name:>8}: {len(results)} checks, p50 {statistics.median(times):.1f} ms, "
        f"p99 {p99:.1f} ms, max {times[-1]:.1f} ms, failed {failed}"
    )


async def run(args: argparse.Namespace, port: int, pid: int) -> None:
    print(summary("alone", await measure(port, args.baseline_s)))
    before = rss_mib(pid)
    attack = Attack()
    login = b"POST /auth/login HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
    drip = args.drip_s
    plans = (
        (args.idle, Plan(b"", 0, b"", 0)),
        (
            args.slowloris,
            Plan(b"GET /healthz HTTP/1.1\r\nHost: bench\r\nX-Pad: " + PAD, drip, b"", 0),
        ),
        (args.slow_bodies, Plan(login + b"Content-Length: %d\r\n\r\n" % (32 * MIB), 0, HUGE, 0)),
        (args.trickle, Plan(login + b"Content-Length: 4000\r\n\r\n", 0, b"{" + PAD, drip)),
    )
    for count, plan in plans:
        attack.tasks += [asyncio.create_task(attacker(port, attack, plan)) for _ in range(count)]
    await asyncio.sleep(1)  # every attacker connected and started
    print(summary("attacked", await measure(port, args.seconds)))
    after = rss_mib(pid)
    print(
        f"attack: {attack.opened} connections, {attack.closed_by_server} closed by the server "
        f"within {args.seconds + 1:.0f} s; server RSS {before:.0f} -> {after:.0f} MiB"
    )
    for task in attack.tasks:
        task.cancel()
    await asyncio.gather(*attack.tasks, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--baseline-s", type=float, default=5)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--slowloris", type=int, default=50)
    parser.add_argument("--slow-bodies", type=int, default=6)
    parser.add_argument("--trickle", type=int, default=20)
    parser.add_argument("--drip-s", type=float, default=1.0)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--nofile", type=int, help="the server's open-files limit (ulimit -n)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server_keys = "\n".join(args.set)
        config = root / "youyou.toml"
        config.write_text(
            f'[database]\nurl = "sqlite+aiosqlite:///{root / "bench.db"}"\n\n'
            f"[server]\n{server_keys}\n",
            encoding="utf-8",
        )
        port = free_port()
        log = (root / "server.log").open("w")
        server = subprocess.Popen(
            [*SERVE, "serve", "--config", str(config), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=(lambda: limit_files(args.nofile)) if args.nofile else None,
        )
        try:
            deadline = time.monotonic() + 60
            while asyncio.run(probe(port)) is None:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit((root / "server.log").read_text())
                time.sleep(0.2)
            asyncio.run(run(args, port, server.pid))
        finally:
            server.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(30)
            if server.poll() is None:
                server.kill()


if __name__ == "__main__":
    main()
