"""Side-by-side server benchmark: YouYou, Open WebUI and the LangGraph Agent Server in front
of one fake OpenAI-compatible model, measured by the same client.

Run with the project's environment, after ``bash bench/peer_servers/setup.sh`` installed the
peers into their own ones: ``.venv/bin/python bench/peer_servers/run.py [--servers youyou
open-webui langgraph] [--rounds 3] [--users 200] [--answer-seconds 2] [--quick]``.

One fake model process (``bench/fake_openai.py``) serves the whole run. Each round starts every
server afresh in a new data folder (the order rotates from round to round; the floor, the
client talking to the fake directly, runs in each round too) and measures two phases with
fresh users and conversations:

1. one user, turns one after the other, answers at once: the median time from sending the
   message to the first answer text, and the server's CPU time per turn (utime + stime of its
   process tree, from /proc, over the measured turns, after a few unmeasured warm-up turns);
2. ``--users`` users at once, each sending ``--turns`` messages back to back, every answer
   streamed over ``--answer-seconds`` seconds, the users' first messages spread over one answer
   time: turns per second, first-token p99, errors, the peak RSS of the server's process tree.

Every answer is checked word for word against the fake's, and the fake counts the chat
completions it served, so a server that calls the model more than once a turn shows. The table
gives the medians over the rounds; "added first-token time" is the server's median minus the
floor's in the same round. ``--profile DIR`` records YouYou's server with py-spy during the
many-users phase (see ``profile.sh``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: fake, server_load

import httpx
from fake_alone import FakeAlone
from harness import PEERS, Adapter, Phase, many_users, one_user, peak_rss_mib
from harness import percentile as pct
from langgraph_server import LangGraphDev
from open_webui_server import OpenWebUI, OpenWebUIApi
from server_load import start_fake_model
from server_load import stop as stop_process
from youyou_server import YouYou

SERVERS: dict[str, type[Adapter]] = {
    "youyou": YouYou,
    "open-webui": OpenWebUI,
    "langgraph": LangGraphDev,
    "open-webui-api": OpenWebUIApi,
}
DEFAULT_SERVERS = ["youyou", "open-webui", "langgraph"]
WARMUP_TURNS = 5


@dataclass
class Measure:
    """One server in one round."""

    server: str
    round: int
    load_average: float
    ttft_1_ms: float
    cpu_1_ms: float
    turns_per_s: float
    ttft_p99_ms: float
    errors: int
    unkept: int
    rss_mib: float
    model_calls_per_turn: float
    error_kinds: dict[str, int] = field(default_factory=dict)
    unkept_kinds: dict[str, int] = field(default_factory=dict)


@contextlib.contextmanager
def py_spy(pid: int | None, out: Path | None) -> Iterator[None]:
    """py-spy recording ``pid`` (all its threads) into ``out`` for the duration, if asked."""
    binary = shutil.which("py-spy") or str(PEERS / "tools" / "bin" / "py-spy")
    if out is None or pid is None:
        yield
        return
    command = [binary, "record", "--nonblocking", "--rate", "200"]  # sampling, not pausing
    command += ["--pid", str(pid), "--output", str(out)]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1)  # attach before the load starts
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        _, problems = recorder.communicate(timeout=120)
        print(f"  py-spy: {out} ({problems.decode(errors='replace').strip()[-200:]})")


def measure(
    adapter: Adapter, number: int, solo: Phase, load: Phase, rss: float, load_average: float
) -> Measure:
    attempted = load.tally.turns + sum(load.tally.errors.values())
    errors = solo.tally.errors + load.tally.errors
    unkept = solo.tally.unkept + load.tally.unkept
    return Measure(
        server=adapter.name,
        round=number,
        load_average=load_average,
        ttft_1_ms=statistics.median(solo.tally.ttft_ms) if solo.tally.ttft_ms else float("nan"),
        cpu_1_ms=solo.server_cpu_s / solo.tally.turns * 1000 if solo.tally.turns else 0.0,
        turns_per_s=load.tally.turns / load.wall_s,
        ttft_p99_ms=pct(load.tally.ttft_ms, 0.99),
        errors=sum(errors.values()),
        unkept=sum(unkept.values()),
        rss_mib=rss,
        model_calls_per_turn=load.model_calls / attempted if attempted else 0.0,
        error_kinds=dict(errors),
        unkept_kinds=dict(unkept),
    )


async def one_round(
    adapter: Adapter,
    number: int,
    model_url: str,
    fake: httpx.AsyncClient,
    args: argparse.Namespace,
) -> Measure:
    async def model_calls() -> int:
        return int((await fake.get("/bench/calls")).json())

    load_average = os.getloadavg()[0]
    slug = "-".join(re.findall(r"[a-z]+", adapter.name.lower())[:3])
    with tempfile.TemporaryDirectory(prefix=f"peer-{slug}-") as tmp:
        started = await asyncio.to_thread(adapter.start, Path(tmp), model_url)
        pid = started.process.pid if started.process else None
        try:
            await fake.post("/bench/pace", json=0)
            solo = await one_user(
                adapter,
                started.base_url,
                args.solo_turns,
                WARMUP_TURNS,
                pid,
                model_calls,
                f"r{number}-solo",
            )
            await fake.post("/bench/pace", json=args.answer_seconds)
            profile = args.profile / f"youyou-round{number}.svg" if args.profile else None
            with py_spy(pid if isinstance(adapter, YouYou) else None, profile):
                load = await many_users(
                    adapter,
                    started.base_url,
                    args.users,
                    args.accounts,
                    args.turns,
                    args.answer_seconds,
                    pid,
                    model_calls,
                    f"r{number}-load",
                )
            rss = peak_rss_mib(started)
        finally:
            await asyncio.to_thread(adapter.stop, started)
            log = Path(tmp) / "server.log"
            if args.logs and log.exists():
                shutil.copy(log, args.logs / f"{slug}-round{number}.log")
    return measure(adapter, number, solo, load, rss, load_average)


def show(row: Measure) -> None:
    kinds = ", ".join(f"{kind} ×{n}" for kind, n in Counter(row.error_kinds).most_common())
    unkept = ", ".join(f"{kind} ×{n}" for kind, n in Counter(row.unkept_kinds).most_common(5))
    print(
        f"  {row.server}: 1 user first token {row.ttft_1_ms:.1f} ms, CPU {row.cpu_1_ms:.1f} "
        f"ms/turn; {row.turns_per_s:.1f} turns/s, first token p99 {row.ttft_p99_ms:.0f} ms, "
        f"{row.errors} failed turns{' (' + kinds + ')' if kinds else ''}, "
        f"{row.unkept} conversations missing checked turns{' (' + unkept + ')' if unkept else ''}"
        f", peak RSS {row.rss_mib:.0f} MiB, model calls per turn {row.model_calls_per_turn:.2f}",
        flush=True,
    )


def table(rows: list[Measure], names: list[str], args: argparse.Namespace) -> str:
    def median(name: str, attribute: str) -> float:
        values = [getattr(r, attribute) for r in rows if r.server == name]
        return statistics.median(values) if values else float("nan")

    floor = FakeAlone.name

    def added(name: str) -> float:
        floors = {r.round: r.ttft_1_ms for r in rows if r.server == floor}
        deltas = [r.ttft_1_ms - floors[r.round] for r in rows if r.server == name]
        return statistics.median(deltas) if deltas else float("nan")

    def of(attribute: str, form: str) -> Callable[[str], str]:
        return lambda name: format(median(name, attribute), form)

    users, seconds = args.users, f"{args.answer_seconds:g}"
    measures: list[tuple[str, Callable[[str], str]]] = [
        ("added time to first token, 1 user, ms", lambda name: f"{added(name):.1f}"),
        ("server CPU per turn, 1 user, ms", of("cpu_1_ms", ".1f")),
        (f"{users} users, {seconds} s answers: turns/s", of("turns_per_s", ".1f")),
        (f"{users} users: first token p99, ms", of("ttft_p99_ms", ",.0f")),
        (f"{users} users: failed turns", of("errors", "g")),
        (f"{users} users: conversations missing a checked turn", of("unkept", "g")),
        (f"peak RSS at {users} users, MiB", of("rss_mib", ",.0f")),
    ]
    columns = [*names, floor]
    lines = [
        "| measure | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for label, cell in measures:
        values = []
        for name in columns:
            if name == floor and ("CPU" in label or "RSS" in label):
                values.append("–")
            else:
                values.append(cell(name))
        lines.append(f"| {label} | " + " | ".join(values) + " |")
    return "\n".join(lines)


async def amain(args: argparse.Namespace) -> None:
    adapters: list[Adapter] = [SERVERS[name]() for name in args.servers]
    model, port = start_fake_model()
    model_url = f"http://127.0.0.1:{port}/v1"
    rows: list[Measure] = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", trust_env=False) as fake:
            for number in range(1, args.rounds + 1):
                shift = (number - 1) % len(adapters)
                order: list[Adapter] = [FakeAlone(), *adapters[shift:], *adapters[:shift]]
                print(f"\n== round {number}: {', '.join(a.name for a in order)}", flush=True)
                for adapter in order:
                    try:
                        row = await one_round(adapter, number, model_url, fake, args)
                    except (RuntimeError, httpx.HTTPError) as exc:
                        print(f"  {adapter.name}: round failed: {str(exc)[:1500]}", flush=True)
                        continue
                    show(row)
                    rows.append(row)
    finally:
        stop_process(model)
    print(
        f"\nmedians of {args.rounds} round(s); {args.users} users on {args.accounts} accounts × "
        f"{args.turns} turns, "
        f"1 user × {args.solo_turns} turns; 1-minute load average as each server's round began: "
        + ", ".join(f"{r.load_average:.1f}" for r in rows)
        + "\n"
    )
    print(table(rows, [a.name for a in adapters], args))
    print("\nwhat each server stores per turn:")
    for adapter in adapters:
        print(f"- {adapter.name}: {adapter.stores}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--servers", nargs="+", choices=list(SERVERS), default=DEFAULT_SERVERS, metavar="NAME"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--users", type=int, default=200, help="users at once (default 200)")
    parser.add_argument(
        "--accounts", type=int, default=50, help="accounts the users are spread over (50)"
    )
    parser.add_argument("--turns", type=int, default=5, help="turns per user at once (5)")
    parser.add_argument(
        "--answer-seconds", type=float, default=2.0, help="answer time with many users (2)"
    )
    parser.add_argument("--solo-turns", type=int, default=30, help="measured 1-user turns (30)")
    parser.add_argument(
        "--quick", action="store_true", help="harness check: 1 round, 5 users, short answers"
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy YouYou under load")
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep the servers' logs")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every round's numbers")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.users, args.accounts, args.turns, args.solo_turns = 1, 5, 2, 2, 5
        args.answer_seconds = 0.5
    for folder in (args.profile, args.logs):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    try:
        import uvloop
    except ImportError:
        asyncio.run(amain(args))
    else:
        uvloop.run(amain(args))


if __name__ == "__main__":
    main()
