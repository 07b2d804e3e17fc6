"""Server load: N concurrent users streaming turns through a real ``youyou serve``.

Each run starts ``youyou serve`` as a subprocess (a free port, a temporary ``youyou.toml``, a
fresh database, long-term memory off) in front of ``bench/fake_openai.py``, a zero-latency fake
OpenAI endpoint in its own process. Then N users, each with its own ``httpx.AsyncClient``:

1. setup (timed apart, never mixed into the turn numbers): register, log in — both hash with
   Argon2id, slow on purpose — and create one session;
2. all users start together and stream ``--turns`` turns back to back, each read from the wire
   until ``turn_complete`` and then to the end of the response.

Per run: turns/s, time to first event (from sending the POST to the first ``data:`` frame)
p50/p99, p99 gap between consecutive events of a turn, errors by kind (HTTP status + error
code, ``error`` frames, transport failures), peak RSS of the server process tree (the sum of
``VmHWM`` of the server and its worker processes) and CPU used during the turns by the
server, the load client, the fake model and PostgreSQL. The machine has 2 cores that all of
them share, so the CPU columns say who had them.

Run: ``.venv/bin/python bench/server_load.py [--users 50 200] [--turns 20]
[--backends sqlite postgresql] [--workers 1 2] [--think S] [--answer-s S] [--ramp S] [--quick]``.
``--answer-s`` makes the fake model stream each answer over S seconds, as a real model does, so
N users back to back hold N streams open at once; with 0 every turn ends at once and the run
measures throughput at saturation. Users that all start at once and get answers of the same
length stay in lockstep (every answer ends, and the next message arrives, at the same moment);
``--ramp S`` spreads their first turns over S seconds, as real users are. ``--workers 2`` runs on
PostgreSQL only (SQLite has one writer). PostgreSQL uses ``YOUYOU_BENCH_PG_DSN`` (default the
local ``postgres@127.0.0.1:5432/test``) to create and drop a scratch database per run. The
client uses uvloop when it is importable, else the default asyncio loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from storage_scale import database

BENCH = Path(__file__).resolve().parent
_SCRIPT = Path(sys.executable).with_name("youyou")
SERVE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "youyou"]
CLK_TCK = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 60
PASSWORD = "correct horse battery staple"
# Sign-ups and logins run this many at a time: each hashes with Argon2id (about 64 MiB and
# ~0.3 s of CPU on purpose), and the server lets one client address hash or wait for two at a
# time (more get 429 at once); every user here signs up from the same address.
SETUP_CONCURRENCY = 2
TERMINAL = {"turn_complete", "turn_cancelled"}
# ``youyou serve`` with pyinstrument sampling the event loop's thread (wall clock, idle included)
# every millisecond from SIGUSR1 to SIGUSR2 (the turns); writes REPORT.txt, REPORT.html and
# REPORT.pyisession (``pyinstrument --load REPORT.pyisession -r pstats`` gives a flat view).
# argv: REPORT serve ...
PROFILED_SERVE = """
import signal, sys
from pyinstrument import Profiler
from youyou.cli.main import app
report = sys.argv[1]
profiler = Profiler(interval=0.001, async_mode="disabled")
signal.signal(signal.SIGUSR1, lambda *_: profiler.start())
signal.signal(signal.SIGUSR2, lambda *_: profiler.stop())
try:
    app(args=sys.argv[2:], prog_name="youyou")
except SystemExit:
    pass
finally:
    if profiler.is_running:
        profiler.stop()
    if profiler.last_session is not None:
        with open(report + ".txt", "w") as out:
            out.write(profiler.output_text(unicode=True))
        with open(report + ".html", "w") as out:
            out.write(profiler.output_html())
        profiler.last_session.save(report + ".pyisession")
"""

try:
    import uvloop  # noqa: F401

    LOOP = "uvloop"
except ImportError:
    LOOP = "asyncio"


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` fields after the command name (field 3 onwards)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (uvicorn's worker processes)."""
    children: dict[int, list[int]] = {}
    for pid in _all_pids():
        fields = _stat(pid)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


MACHINE = -1  # a pseudo process id: the whole machine's busy time (/proc/stat)


def cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """utime + stime of each process that still exists."""
    times = {}
    for pid in pids:
        if pid == MACHINE:
            busy = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
            # user nice system idle iowait irq softirq steal: all but idle and iowait
            times[pid] = sum(int(v) for i, v in enumerate(busy[:8]) if i not in (3, 4)) / CLK_TCK
            continue
        fields = _stat(pid)
        if fields is not None:
            times[pid] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return times


def postgres_pids() -> list[int]:
    return [pid for pid in _all_pids() if _comm(pid) == "postgres"]


def vm_hwm_mib(pids: Iterable[int]) -> float:
    total_kb = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        total_kb += int(found.group(1)) if found else 0
    return total_kb / 1024


@dataclass
class CpuMeter:
    """CPU seconds used by a set of processes between ``start()`` and ``stop()``."""

    pids: Callable[[], Iterable[int]]
    before: dict[int, float] = field(default_factory=dict)
    used: float = 0.0

    def start(self) -> None:
        self.before = cpu_seconds(self.pids())

    def stop(self) -> float:
        after = cpu_seconds(self.pids())
        self.used = sum(t - self.before.get(pid, 0.0) for pid, t in after.items())
        return self.used


def start_fake_model(answer_s: float = 0.0) -> tuple[subprocess.Popen[str], int]:
    model = subprocess.Popen(
        [sys.executable, str(BENCH / "fake_openai.py"), "--answer-s", str(answer_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert model.stdout is not None
    line = model.stdout.readline()
    if not line.startswith("ready "):
        model.kill()
        raise RuntimeError(f"fake model did not start: {line!r}")
    return model, int(line.split()[1])


def write_config(root: Path, database_url: str, model_url: str) -> Path:
    config = root / "youyou.toml"
    config.write_text(
        f'[database]\nurl = "{database_url}"\n\n'
        "[memory]\nenabled = false\n\n"
        "[server]\nregistration_attempts = 1000000\n\n"  # every user signs up from here
        f'[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{model_url}"\n'
        "max_attempts = 1\ntimeout_s = 60\n\n"
        '[[providers.models]]\nid = "fake-model"\ncontext_window = 128000\n'
        'capabilities = ["tool_use", "streaming"]\n',
        encoding="utf-8",
    )
    return config


def start_server(
    root: Path, config: Path, port: int, workers: int, profile: Path | None = None
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YOUYOU_")}
    env.update(HOME=str(root), XDG_DATA_HOME=str(root / "xdg"), NO_PROXY="127.0.0.1,localhost")
    args = ["serve", "--config", str(config), "--port", str(port)]
    if workers > 1:
        args += ["--workers", str(workers)]
    command = [*SERVE, *args]
    if profile is not None:  # pyinstrument writes the reports when the server exits
        command = [sys.executable, "-c", PROFILED_SERVE, str(profile), *args]
    health = f"http://127.0.0.1:{port}/healthz"

    def ready(http: httpx.Client) -> bool:
        healthy = http.get(health).status_code == 200
        return healthy and (workers == 1 or _ready_workers(root) >= workers)

    return launch_and_wait(command, env, root, ready, START_TIMEOUT_S)


def launch_and_wait(
    command: list[str],
    env: dict[str, str],
    root: Path,
    ready: Callable[[httpx.Client], bool],
    timeout_s: float,
) -> subprocess.Popen[str]:
    """Start ``command`` in ``root`` (its output in ``root/server.log``) and poll ``ready``
    (through one client) until it holds; the log's tail in the error when the process exits
    or is not ready within ``timeout_s``."""
    log_path = root / "server.log"
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root, text=True
        )
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2, trust_env=False) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("server exited:\n" + log_path.read_text()[-3000:])
            try:
                if ready(http):
                    return process
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    stop(process)
    raise RuntimeError("server did not start:\n" + log_path.read_text()[-3000:])


def _ready_workers(root: Path) -> int:
    return (root / "server.log").read_text(errors="replace").count("workbench ready")


def stop(process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            for pid in reversed(process_tree(process.pid)):
                os.kill(pid, signal.SIGKILL)
            process.wait(10)


# -- the load client ----------------------------------------------------------------------


@dataclass
class Results:
    register_ms: list[float] = field(default_factory=list)
    login_ms: list[float] = field(default_factory=list)
    create_ms: list[float] = field(default_factory=list)
    ttfe_ms: list[float] = field(default_factory=list)
    gap_ms: list[float] = field(default_factory=list)
    turn_ms: list[float] = field(default_factory=list)
    turns: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    ready_users: int = 0


async def _timed(into: list[float], call: Awaitable[httpx.Response]) -> httpx.Response:
    began = time.perf_counter()
    response = await call
    into.append((time.perf_counter() - began) * 1000)
    return response


def _error_kind(response: httpx.Response) -> str:
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = "?"
    return f"HTTP {response.status_code} {code}"


class User:
    def __init__(self, base_url: str, name: str, results: Results) -> None:
        self.http = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(120, connect=30), trust_env=False
        )
        self.name = name
        self.results = results
        self.session_id = ""

    async def setup(self, gate: asyncio.Semaphore) -> bool:
        async with gate:
            return await self._setup()

    async def _setup(self) -> bool:
        r = self.results
        credentials = {"username": self.name, "password": PASSWORD}
        try:
            response = await _timed(
                r.register_ms, self.http.post("/auth/register", json=credentials)
            )
            if response.status_code != 201:
                r.errors["setup: register " + _error_kind(response)] += 1
                return False
            response = await _timed(r.login_ms, self.http.post("/auth/login", json=credentials))
            if response.status_code != 200:
                r.errors["setup: login " + _error_kind(response)] += 1
                return False
            self.http.headers["Authorization"] = f"Bearer {response.json()['data']['accessToken']}"
            response = await _timed(r.create_ms, self.http.post("/chat/sessions", json={}))
            if response.status_code != 201:
                r.errors["setup: session " + _error_kind(response)] += 1
                return False
        except httpx.HTTPError as exc:
            r.errors[f"setup: {type(exc).__name__}"] += 1
            return False
        self.session_id = response.json()["data"]["id"]
        r.ready_users += 1
        return True

    async def chat(
        self, turns: int, start: asyncio.Event, think_s: float, ramp_s: float = 0.0
    ) -> None:
        """Turns back to back, or with a pause of ``think_s`` ± 50 % before each one; the first
        one at a random point of the first ``ramp_s`` seconds."""
        await start.wait()
        if ramp_s:
            await asyncio.sleep(random.uniform(0, ramp_s))
        for number in range(turns):
            if think_s:
                await asyncio.sleep(random.uniform(0.5, 1.5) * think_s)
            try:
                await self.turn(f"Turn {number}: is the checkout service healthy?")
            except httpx.HTTPError as exc:
                self.results.errors[f"transport {type(exc).__name__}"] += 1

    async def turn(self, text: str) -> None:
        r = self.results
        url = f"/chat/sessions/{self.session_id}/messages"
        sent = time.perf_counter()
        async with self.http.stream("POST", url, json={"content": text}) as response:
            if response.status_code != 200:
                await response.aread()
                r.errors[_error_kind(response)] += 1
                return
            last: float | None = None
            ended = ""
            buffer = b""
            async for chunk in response.aiter_raw():
                now = time.perf_counter()
                buffer += chunk
                *frames, buffer = buffer.split(b"\n\n")
                for frame in frames:
                    event, data = "message", b""
                    for line in frame.split(b"\n"):
                        if line.startswith(b"event:"):
                            event = line[6:].strip().decode()
                        elif line.startswith(b"data:"):
                            data = line[5:].strip()
                    if not data or ended:
                        continue  # keep-alive comment, or after the end of the turn
                    if last is None:
                        r.ttfe_ms.append((now - sent) * 1000)
                    else:
                        r.gap_ms.append((now - last) * 1000)
                    last = now
                    if event == "error":
                        r.errors[f"error frame {json.loads(data).get('code', '?')}"] += 1
                        ended = event
                    elif event in TERMINAL:
                        ended = event
                        r.turn_ms.append((now - sent) * 1000)
                        if event == "turn_complete":
                            r.turns += 1
                        else:
                            r.errors["turn_cancelled"] += 1
            if not ended:
                r.errors["stream ended without turn_complete"] += 1

    async def close(self) -> None:
        await self.http.aclose()


@dataclass
class Phase:
    wall_s: float
    client_cpu_s: float


async def load(
    base_url: str,
    users: int,
    turns: int,
    results: Results,
    meters: list[CpuMeter],
    think_s: float = 0.0,
    profiled: int | None = None,
    ramp_s: float = 0.0,
) -> Phase:
    """Setup first (Argon2 included), then every user's turns from one common start.
    ``profiled``: the pid of a server run under ``PROFILED_SERVE``."""
    people = [User(base_url, f"bench-user-{i:04d}", results) for i in range(users)]
    try:
        began = time.perf_counter()
        gate = asyncio.Semaphore(SETUP_CONCURRENCY)
        ready = await asyncio.gather(*(person.setup(gate) for person in people))
        setup_s = time.perf_counter() - began
        print(
            f"  setup of {users} users ({SETUP_CONCURRENCY} at a time): {setup_s:.1f} s = "
            f"{users / setup_s:.1f} users/s",
            flush=True,
        )
        if not any(ready):
            raise RuntimeError("no user could sign up")
        start = asyncio.Event()
        tasks = [
            asyncio.create_task(person.chat(turns, start, think_s, ramp_s))
            for person, ok in zip(people, ready, strict=True)
            if ok
        ]
        await asyncio.sleep(0.5)  # let the setup's stragglers (threads, pools) settle
        if profiled is not None:
            os.kill(profiled, signal.SIGUSR1)  # start sampling the turns
        for meter in meters:
            meter.start()
        cpu = time.process_time()
        began = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - began
        client_cpu = time.process_time() - cpu
        for meter in meters:
            meter.stop()
        if profiled is not None:
            os.kill(profiled, signal.SIGUSR2)
        return Phase(wall, client_cpu)
    finally:
        await asyncio.gather(*(person.close() for person in people))


# -- one run ------------------------------------------------------------------------------


@dataclass
class Row:
    users: int
    backend: str
    workers: int
    turns: int
    wall_s: float
    ttfe_p50: float
    ttfe_p99: float
    gap_p99: float
    turn_p50: float
    errors: Counter[str]
    rss_mib: float
    cpu: dict[str, float]
    register: tuple[float, float]
    login: tuple[float, float]
    think_s: float = 0.0
    answer_s: float = 0.0

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.wall_s if self.wall_s else 0.0

    @property
    def server_cpu_ms_per_turn(self) -> float:
        return self.cpu["server"] / 100 * self.wall_s / self.turns * 1000 if self.turns else 0.0

    @property
    def passed(self) -> bool:
        return self.ttfe_p99 < 100 and not self.errors


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


async def one_run(
    users: int,
    backend: str,
    workers: int,
    turns: int,
    think_s: float = 0.0,
    profile: Path | None = None,
    logs: Path | None = None,
    answer_s: float = 0.0,
    ramp_s: float = 0.0,
) -> Row:
    pause = f", {think_s:g} s ± 50 % before each" if think_s else " back to back"
    answer = f", answers streamed over {answer_s:g} s" if answer_s else ""
    answer += f", first turns spread over {ramp_s:g} s" if ramp_s else ""
    run = f"{users} users, {backend}, {workers} process(es), {turns} turns each"
    print(f"\n== {run}{pause}{answer}", flush=True)
    model, model_port = start_fake_model(answer_s)
    try:
        async with database(backend) as url:
            with tempfile.TemporaryDirectory(prefix="youyou-load-") as tmp:
                root = Path(tmp)
                config = write_config(root, url, f"http://127.0.0.1:{model_port}/v1")
                port = free_port()
                report = profile / f"server-{users}-{backend}" if profile else None
                server = start_server(root, config, port, workers, report)
                results = Results()
                try:
                    meters = {
                        "server": CpuMeter(lambda: process_tree(server.pid)),
                        "model": CpuMeter(lambda: [model.pid]),
                        "postgres": CpuMeter(postgres_pids),
                        "machine": CpuMeter(lambda: [MACHINE]),
                    }
                    base = f"http://127.0.0.1:{port}"
                    phase = await load(
                        base,
                        users,
                        turns,
                        results,
                        list(meters.values()),
                        think_s,
                        server.pid if report else None,
                        ramp_s,
                    )
                    rss = vm_hwm_mib(process_tree(server.pid))
                finally:
                    stop(server)
                    log = (root / "server.log").read_text(errors="replace")
                report_log(log)
                if logs is not None:
                    (logs / f"server-{users}-{backend}-{workers}.log").write_text(log)
    finally:
        stop(model)
    cpu = {name: meter.used / phase.wall_s * 100 for name, meter in meters.items()}
    cpu["client"] = phase.client_cpu_s / phase.wall_s * 100
    cpu["other"] = cpu.pop("machine") - sum(cpu.values())
    if backend != "postgresql":
        cpu.pop("postgres")
    row = Row(
        users=users,
        backend=backend,
        workers=workers,
        turns=results.turns,
        wall_s=phase.wall_s,
        ttfe_p50=percentile(results.ttfe_ms, 0.50),
        ttfe_p99=percentile(results.ttfe_ms, 0.99),
        gap_p99=percentile(results.gap_ms, 0.99),
        turn_p50=percentile(results.turn_ms, 0.50),
        errors=results.errors,
        rss_mib=rss,
        cpu=cpu,
        register=(percentile(results.register_ms, 0.5), percentile(results.register_ms, 0.99)),
        login=(percentile(results.login_ms, 0.5), percentile(results.login_ms, 0.99)),
        think_s=think_s,
        answer_s=answer_s,
    )
    print_details(row, results)
    return row


def report_log(log: str) -> None:
    problems = [line for line in log.splitlines() if " ERROR " in line or " WARNING " in line]
    if problems:
        print(f"  server log: {len(problems)} warning/error lines, e.g.:")
        for line in problems[:5]:
            print("   ", line[:300])


def print_details(row: Row, results: Results) -> None:
    print(
        f"  setup: register p50/p99 {row.register[0]:.0f}/{row.register[1]:.0f} ms, login "
        f"p50/p99 {row.login[0]:.0f}/{row.login[1]:.0f} ms, new session p50/p99 "
        f"{percentile(results.create_ms, 0.5):.0f}/{percentile(results.create_ms, 0.99):.0f} ms"
    )
    print(
        f"  turns: {row.turns} in {row.wall_s:.1f} s = {row.turns_per_s:.1f}/s; time to first "
        f"event p50 {row.ttfe_p50:.1f} ms, p99 {row.ttfe_p99:.1f} ms; gap p99 "
        f"{row.gap_p99:.1f} ms; whole turn p50 {row.turn_p50:.0f} ms"
    )
    print(f"  errors: {dict(row.errors) if row.errors else 'none'}")
    cpu = ", ".join(f"{name} {share:.0f} %" for name, share in row.cpu.items())
    print(f"  CPU during the turns (200 % = both cores): {cpu}; peak RSS {row.rss_mib:.0f} MiB")
    print(f"  server CPU per completed turn: {row.server_cpu_ms_per_turn:.1f} ms")


def print_table(rows: list[Row]) -> None:
    print(
        f"\nclient loop: {LOOP}; client, server, fake model, PostgreSQL and anything else "
        f"running share the machine's {os.cpu_count()} cores (CPU: 200 % = both)\n"
    )
    columns = (
        "users",
        "pause s",
        "answer s",
        "backend",
        "procs",
        "turns/s",
        "TTFE p50 ms",
        "TTFE p99 ms",
        "gap p99 ms",
        "errors",
        "server CPU ms/turn",
        "peak RSS MiB",
        "CPU % server / client / model / pg / other",
        "goal",
    )
    print("| " + " | ".join(columns) + " |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|")
    for row in rows:
        errors = ", ".join(f"{kind} ×{n}" for kind, n in row.errors.most_common()) or "0"
        cpu = " / ".join(
            f"{row.cpu[name]:.0f}" if name in row.cpu else "–"
            for name in ("server", "client", "model", "postgres", "other")
        )
        cells = (
            row.users,
            f"{row.think_s:g}",
            f"{row.answer_s:g}",
            row.backend,
            row.workers,
            f"{row.turns_per_s:.1f}",
            f"{row.ttfe_p50:.0f}",
            f"{row.ttfe_p99:.0f}",
            f"{row.gap_p99:.0f}",
            errors,
            f"{row.server_cpu_ms_per_turn:.0f}",
            f"{row.rss_mib:.0f}",
            cpu,
            "met" if row.passed else "missed",
        )
        print("| " + " | ".join(str(cell) for cell in cells) + " |")
    print("\ngoal: time to first event p99 < 100 ms and no errors")


async def amain(args: argparse.Namespace) -> None:
    print(f"client event loop: {LOOP}")
    for folder in (args.profile, args.logs):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for users in args.users:
        for backend in args.backends:
            for workers in args.workers:
                if workers > 1 and backend == "sqlite":
                    continue  # refused by the server: SQLite has one writer
                profile = args.profile if workers == 1 else None
                try:
                    row = await one_run(
                        users,
                        backend,
                        workers,
                        args.turns,
                        args.think,
                        profile,
                        args.logs,
                        args.answer_s,
                        args.ramp,
                    )
                except RuntimeError as exc:  # a server that did not start, no user signed up
                    print(f"  run failed: {str(exc)[:2000]}", flush=True)
                    continue
                rows.append(row)
    print_table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        metavar="S",
        help="pause S seconds (± 50 %%) before each turn; 0 (default): back to back, saturating",
    )
    parser.add_argument(
        "--answer-s",
        type=float,
        default=0.0,
        metavar="S",
        help="the fake model streams each answer over S seconds (0, default: at once), so "
        "that the users' streams stay open together as with a real model",
    )
    parser.add_argument(
        "--ramp",
        type=float,
        default=0.0,
        metavar="S",
        help="start each user's first turn at a random point of the first S seconds (0, "
        "default: all at once); with --answer-s the users otherwise stay in lockstep",
    )
    parser.add_argument("--quick", action="store_true", help="smoke check: 10 users, 3 turns")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="run one-process servers under pyinstrument; text and HTML reports go to DIR",
    )
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep the server logs in DIR")
    args = parser.parse_args()
    if args.quick:
        args.users, args.turns = [10], 3
    if LOOP == "uvloop":
        import uvloop

        uvloop.run(amain(args))
    else:
        asyncio.run(amain(args))


if __name__ == "__main__":
    main()
