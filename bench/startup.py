"""Start-up time and peak memory of whole ``youyou`` processes.

    .venv/bin/python bench/startup.py [--runs 5]

Scenarios, each run as a fresh process with HOME and XDG_DATA_HOME in a temporary directory
(SQLite there, no configuration of the user's): ``youyou --help``; ``youyou chat -m hi`` with
the offline demo model; the same with a model of a real family (``gpt-4o``, served by the
scripted provider) whose exact tokenizer is o200k. One untimed run per scenario first creates
the database and the bytecode caches, so the timed runs open a schema already at head and
import compiled modules, as every run after a user's first does. Prints the median wall time
and peak RSS (the child's ``ru_maxrss``) and the load average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

YOUYOU = Path(sys.executable).with_name("youyou")
REAL_FAMILY_CONFIG = """\
[agent]
default_model = "gpt-4o"

[[providers]]
id = "scripted"
type = "scripted"

[[providers.models]]
id = "gpt-4o"
context_window = 128000
"""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    args: tuple[str, ...]
    goal_s: float | None = None
    goal_mb: float | None = None


@dataclass(frozen=True, slots=True)
class Run:
    wall_s: float
    peak_mb: float


def run_once(args: tuple[str, ...], env: dict[str, str]) -> Run:
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(YOUYOU), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"youyou {' '.join(args)} exited with {process.returncode}")
    return Run(wall, usage.ru_maxrss / 1024)  # kB on Linux


def measure(scenario: Scenario, runs: int, home: Path) -> list[Run]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    env.pop("YOUYOU_CONFIG", None)
    # As on a user's machine, the first run leaves bytecode caches behind (pip writes those of
    # an installed package at install). With PYTHONDONTWRITEBYTECODE set, as in some shells
    # and containers, every run of an editable install compiled all of youyou again: 0.3 s of
    # CPU on the 2-core machine, a fifth of `chat -m hi`, that no installed copy pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run_once(scenario.args, env)  # creates the database, the log file and bytecode caches
    return [run_once(scenario.args, env) for _ in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="youyou-startup-") as tmp:
        home = Path(tmp)
        config = home / "youyou.toml"
        config.write_text(REAL_FAMILY_CONFIG, encoding="utf-8")
        scenarios = (
            Scenario("youyou --help", ("--help",), goal_s=0.2),
            Scenario("youyou chat -m hi (demo model)", ("chat", "-m", "hi"), goal_s=0.4),
            Scenario(
                "youyou chat -m hi (gpt-4o, o200k)",
                ("chat", "-c", str(config), "-m", "hi"),
                goal_mb=100,
            ),
        )
        before = os.getloadavg()[0]
        results = [(s, measure(s, runs, home)) for s in scenarios]
        after = os.getloadavg()[0]
    print(f"median of {runs} runs; load average {before:.2f} before, {after:.2f} after\n")
    print(f"| {'scenario':<34} | wall (s) | peak RSS (MB) | goal |")
    print(f"|{'-' * 36}|---------:|--------------:|------|")
    for scenario, measured in results:
        wall = statistics.median(r.wall_s for r in measured)
        peak = statistics.median(r.peak_mb for r in measured)
        goals = [f"≤ {scenario.goal_s} s"] if scenario.goal_s else []
        goals += [f"≤ {scenario.goal_mb:.0f} MB"] if scenario.goal_mb else []
        print(f"| {scenario.name:<34} | {wall:8.3f} | {peak:13.1f} | {', '.join(goals)} |")


if __name__ == "__main__":
    main()
