"""Login flood: how a real user's sign-in and ``/healthz`` fare while 12 clients hammer
``POST /auth/login`` with wrong passwords.

Each scenario starts a fresh ``youyou serve`` (SQLite in a temporary directory, one process),
signs one real user up, then measures at rest and during a flood of ``--seconds`` seconds:

- the real user's login from 127.0.0.1, once a second: latency of those that succeed, and how
  many were refused at once (503 ``AUTH_BUSY``, to be retried after ``Retry-After``);
- ``GET /healthz`` every 50 ms: p50 / p99;
- the flood's answers by status, and the server's RSS at rest and at its peak (VmHWM).

The flood comes from other loopback addresses than the real user (Linux routes all of
127.0.0.0/8 to ``lo``), so the per-address limits are seen as on a real network:

- ``unlimited``: per-address limits off and as many hashes at once as the default thread pool
  runs (CPU count + 4) with an unbounded queue — how the server behaved before the limits;
- ``one address``: the defaults, all 12 clients behind one address;
- ``12 addresses``: the defaults, each client from its own address, so only the hashing gate
  (CPU count hashes at once, twice that waiting) stands between them and the real user.

Run: ``.venv/bin/python bench/login_flood.py [--seconds 20] [--clients 12]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from server_load import free_port, percentile, start_server, stop, vm_hwm_mib

PASSWORD = "tidal-quartz-ferry"
REAL_USER_EVERY_S = 1.0
HEALTH_EVERY_S = 0.05


@dataclass(frozen=True)
class Scenario:
    name: str
    server_keys: str
    flood_addresses: tuple[str, ...]


@dataclass
class Measured:
    login_ms: list[float] = field(default_factory=list)  # the successful ones
    login_refused: int = 0
    health_ms: list[float] = field(default_factory=list)
    flood: Counter[str] = field(default_factory=Counter)


def scenarios(clients: int) -> list[Scenario]:
    threads = (os.cpu_count() or 1) + 4
    unlimited = (
        f"address_login_attempts = 1000000000\nhash_concurrency = {threads}\nhash_queue = 1000000\n"
    )
    many = tuple(f"127.0.2.{i + 1}" for i in range(clients))
    return [
        Scenario("unlimited", unlimited, many),
        Scenario("one address", "", ("127.0.3.1",) * clients),
        Scenario("12 addresses" if clients == 12 else f"{clients} addresses", "", many),
    ]


def write_config(root: Path, server_keys: str) -> Path:
    config = root / "youyou.toml"
    config.write_text(
        f'[server]\n{server_keys}\n[database]\nurl = "sqlite+aiosqlite:///{root / "wb.db"}"\n',
        encoding="utf-8",
    )
    return config


def client(url: str, address: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=address)
    return httpx.AsyncClient(base_url=url, transport=transport, timeout=120, trust_env=False)


async def real_logins(url: str, until: float, into: Measured) -> None:
    body = {"username": "oncall", "password": PASSWORD}
    async with client(url, "127.0.0.1") as http:
        while time.monotonic() < until:
            began = time.perf_counter()
            response = await http.post("/auth/login", json=body)
            if response.status_code == 200:
                into.login_ms.append((time.perf_counter() - began) * 1000)
            elif response.status_code == 503:
                into.login_refused += 1
            else:
                raise RuntimeError(f"real login: {response.status_code} {response.text}")
            await asyncio.sleep(REAL_USER_EVERY_S)


async def health(url: str, until: float, into: list[float]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60, trust_env=False) as http:
        while time.monotonic() < until:
            began = time.perf_counter()
            (await http.get("/healthz")).raise_for_status()
            into.append((time.perf_counter() - began) * 1000)
            await asyncio.sleep(HEALTH_EVERY_S)


async def flooder(url: str, address: str, until: float, into: Counter[str]) -> None:
    """Ignores Retry-After, as an attacker does."""
    async with client(url, address) as http:
        while time.monotonic() < until:
            name = f"guess-{secrets.token_hex(4)}"
            try:
                response = await http.post(
                    "/auth/login", json={"username": name, "password": "wrong-password"}
                )
                into[str(response.status_code)] += 1
            except httpx.HTTPError as exc:
                into[type(exc).__name__] += 1


async def measure(url: str, seconds: float, flood: tuple[str, ...]) -> Measured:
    measured = Measured()
    until = time.monotonic() + seconds
    tasks = [flooder(url, address, until, measured.flood) for address in flood]
    await asyncio.gather(
        real_logins(url, until, measured), health(url, until, measured.health_ms), *tasks
    )
    return measured


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(label: str, m: Measured) -> str:
    flood = ", ".join(f"{status}: {count}" for status, count in sorted(m.flood.items()))
    return (
        f"  {label:<6} real login p50/max {percentile(m.login_ms, 0.5):.0f}/"
        f"{max(m.login_ms, default=float('nan')):.0f} ms ({len(m.login_ms)} signed in, "
        f"{m.login_refused} refused at once with 503), /healthz p50/p99 "
        f"{percentile(m.health_ms, 0.5):.1f}/{percentile(m.health_ms, 0.99):.1f} ms"
        + (f", flood answers {flood}" if flood else "")
    )


async def run(scenario: Scenario, seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="youyou-flood-") as tmp:
        root = Path(tmp)
        port = free_port()
        server = start_server(root, write_config(root, scenario.server_keys), port, 1)
        url = f"http://127.0.0.1:{port}"
        try:
            async with client(url, "127.0.0.1") as http:
                signed_up = await http.post(
                    "/auth/register", json={"username": "oncall", "password": PASSWORD}
                )
                signed_up.raise_for_status()
            rest = await measure(url, min(seconds, 5.0), ())
            rss_rest = rss_mib(server.pid)
            flooded = await measure(url, seconds, scenario.flood_addresses)
            peak = vm_hwm_mib([server.pid])
        finally:
            stop(server)
    print(f"{scenario.name}:")
    print(summary("rest", rest))
    print(summary("flood", flooded))
    print(f"  server RSS at rest {rss_rest:.0f} MiB, peak {peak:.0f} MiB")


async def amain(args: argparse.Namespace) -> None:
    print(f"{args.clients} flood clients for {args.seconds:.0f} s, {os.cpu_count()} CPUs")
    for scenario in scenarios(args.clients):
        await run(scenario, args.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=12)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
