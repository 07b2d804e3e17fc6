"""Heavy requests must not freeze the server: ``/healthz`` latency while one user sends big
messages and uploads a big knowledge document.

One ``youyou serve`` (SQLite, long-term memory off) in front of ``bench/fake_openai.py``. A
prober reads ``GET /healthz`` every 20 ms for the whole run; meanwhile one signed-in user, one
request at a time:

1. sends ``--messages`` chat messages of ``--message-mib`` MiB of text each (the largest the
   default ``max_message_chars`` accepts), each read to the end of its answer;
2. sends one message over the limit (``--oversize-mib``), which must be refused with 413
   before any work;
3. uploads a ``--upload-mib`` MiB Markdown knowledge document of unique words (every word a
   new index term: the most indexing work per byte).

Printed: ``/healthz`` p50/p99/max in ms for a quiet baseline and during each phase, the time
each heavy request took, and the oversize message's status.

Run: ``.venv/bin/python bench/heavy_requests.py [--messages 3] [--message-mib 1]
[--upload-mib 2] [--oversize-mib 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import string
import sys
import tempfile
import time
from pathlib import Path

import httpx
from server_load import (
    free_port,
    percentile,
    start_fake_model,
    start_server,
    stop,
    write_config,
)

PASSWORD = "correct horse battery staple"
PROBE_EVERY_S = 0.02
MIB = 1024 * 1024


def pasted_log(size: int) -> str:
    """Text like a pasted log: numbered lines of mixed words, ``size`` characters."""
    line = "2026-12-04T10:00:00Z ERROR checkout-7f9 pod evicted: memory pressure on node-3 {}\n"
    lines: list[str] = []
    total = 0
    number = 0
    while total < size:
        text = line.format(number)
        lines.append(text)
        total += len(text)
        number += 1
    return "".join(lines)[:size]


def unique_words(size: int) -> str:
    """Markdown of ``size`` bytes whose words are all different."""
    rng = random.Random(7)
    out: list[str] = ["# Runbook\n\n"]
    total = len(out[0])
    while total < size:
        word = "".join(rng.choices(string.ascii_lowercase, k=9))
        out.append(word + (" " if rng.random() > 0.05 else "\n\n"))
        total += 10
    return "".join(out)[:size]


class Prober:
    """``GET /healthz`` every ``PROBE_EVERY_S``; latencies in ms, labelled by phase."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.phase = "baseline"
        self.samples: dict[str, list[float]] = {}
        self.stopped = False

    async def run(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=60) as client:
            while not self.stopped:
                phase = self.phase
                started = time.perf_counter()
                response = await client.get("/healthz")
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200:
                    print(f"healthz {response.status_code}", file=sys.stderr)
                self.samples.setdefault(phase, []).append(elapsed)
                await asyncio.sleep(PROBE_EVERY_S)


async def signed_in(url: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=url, timeout=120)
    body = {"username": "heavy", "password": PASSWORD}
    assert (await client.post("/auth/register", json=body)).status_code == 201
    login = await client.post("/auth/login", json=body)
    client.headers["Authorization"] = f"Bearer {login.json()['data']['accessToken']}"
    return client


async def send(client: httpx.AsyncClient, session_id: str, text: str) -> tuple[int, float]:
    started = time.perf_counter()
    path = f"/chat/sessions/{session_id}/messages"
    async with client.stream("POST", path, json={"content": text}) as response:
        await response.aread()
    return response.status_code, time.perf_counter() - started


async def amain(args: argparse.Namespace) -> None:
    model, model_port = start_fake_model()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        database = f"sqlite+aiosqlite:///{root / 'bench.db'}"
        config = write_config(root, database, f"http://127.0.0.1:{model_port}/v1")
        port = free_port()
        server = start_server(root, config, port, 1)
        url = f"http://127.0.0.1:{port}"
        prober = Prober(url)
        probing = asyncio.create_task(prober.run())
        timings: list[tuple[str, float, int]] = []
        try:
            await asyncio.sleep(2)
            client = await signed_in(url)
            session = (await client.post("/chat/sessions", json={})).json()["data"]["id"]
            message = pasted_log(int(args.message_mib * MIB))
            prober.phase = f"{args.message_mib:g} MiB messages"
            for _ in range(args.messages):
                status, took = await send(client, session, message)
                timings.append((prober.phase, took, status))
            prober.phase = f"{args.oversize_mib:g} MiB message (refused)"
            status, took = await send(client, session, pasted_log(int(args.oversize_mib * MIB)))
            timings.append((prober.phase, took, status))
            prober.phase = f"{args.upload_mib:g} MiB knowledge upload"
            document = unique_words(int(args.upload_mib * MIB))
            started = time.perf_counter()
            upload = await client.post(
                "/chat/knowledge", json={"name": "runbook.md", "content": document}
            )
            timings.append((prober.phase, time.perf_counter() - started, upload.status_code))
            prober.phase = "after"
            await asyncio.sleep(1)
            await client.aclose()
        finally:
            prober.stopped = True
            await probing
            stop(server)
            model.kill()
    print(f"{'phase':<34} {'probes':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for phase, values in prober.samples.items():
        print(
            f"{phase:<34} {len(values):>6} {percentile(values, 0.5):>8.1f} "
            f"{percentile(values, 0.99):>8.1f} {max(values):>8.1f}"
        )
    print()
    for phase, took, status in timings:
        print(f"{phase:<34} request {took:6.2f} s  HTTP {status}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--message-mib", type=float, default=1.0)
    parser.add_argument("--oversize-mib", type=float, default=30.0)
    parser.add_argument("--upload-mib", type=float, default=2.0)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
