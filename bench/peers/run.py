"""Run the peer comparison: YouYou against openai-agents, LangChain and pydantic-ai.

    bash bench/peers/run.sh [--reps 3] [--frameworks youyou,langchain] [--scenarios s1-memory,s3]

Installs the peers into bench/peers/.venv (from requirements.txt; again when it changes), then
runs every scenario ``--reps`` times per framework, each run a fresh subprocess with an empty
scratch folder (YouYou from the project's .venv, peers from theirs). Repetitions are interleaved
(rep 1 of everything, then rep 2...) so a burst of load on the shared machine spreads over all
frameworks. Prints a Markdown table of medians with YouYou / peer ratios and writes every run to
bench/peers/results/peers-<time>.json. A run whose checks fail (the framework did not send the
whole history or the tool results) is reported as failed, never as a number.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEER_VENV = HERE / ".venv"
PEER_PYTHON = PEER_VENV / "bin" / "python"
REQUIREMENTS = HERE / "requirements.txt"
STAMP = PEER_VENV / "requirements.sha256"
RESULTS = HERE / "results"
SCENARIOS = ("s1-memory", "s1-sqlite", "s2", "s3", "s4")
FRAMEWORKS = {  # name -> (driver script, runs in the peers' venv)
    "youyou": ("youyou_bench.py", False),
    "openai-agents": ("openai_agents_bench.py", True),
    "langchain": ("langchain_bench.py", True),
    "pydantic-ai": ("pydantic_ai_bench.py", True),
}
PEERS = ("openai-agents", "langchain", "pydantic-ai")
TITLES = {"openai-agents": "openai-agents", "langchain": "LangChain", "pydantic-ai": "pydantic-ai"}


@dataclass(frozen=True)
class Row:
    """One table row: where its number sits in a driver's JSON, for YouYou and for the peers."""

    label: str
    unit: str
    scenario: str
    peer_path: tuple[str, ...]
    youyou_path: tuple[str, ...] | None = None


def history_rows() -> list[Row]:
    rows = []
    for size in ("100", "1000", "10000"):
        path = ("turn_ms", size, "median")
        label = f"S4 turn at {int(size):,} messages"
        rows.append(Row(f"{label} (YouYou: default compaction)", "ms/turn", "s4", path))
        full = ("turn_ms_full_history", size, "median")
        rows.append(Row(f"{label} (YouYou: full history)", "ms/turn", "s4", path, full))
    return rows


ROWS = [
    Row(
        "S1 streamed chat turn, in memory (200 turns)",
        "ms/turn",
        "s1-memory",
        ("turn_ms", "median"),
    ),
    Row("S1 streamed chat turn, SQLite (200 turns)", "ms/turn", "s1-sqlite", ("turn_ms", "median")),
    Row(
        "S1 the same, YouYou with synchronous=FULL (as openai-agents, LangGraph)",
        "ms/turn",
        "s1-sqlite",
        ("turn_ms", "median"),
        ("turn_ms_sync_full", "median"),
    ),
    Row("S2 5 rounds × 4 parallel 50 ms tools (floor 0.250 s)", "s", "s2", ("wall_s",)),
    Row("S2 the same, first run in a fresh process", "s", "s2", ("cold_wall_s",)),
    Row(
        "S3 reopen a 2,000-message SQLite session + answer",
        "ms",
        "s3",
        ("reopen_answer_ms", "median"),
    ),
    *history_rows(),
]


def ensure_peer_venv() -> None:
    """Create bench/peers/.venv and install the peers; again whenever requirements.txt changes."""
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if PEER_PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    if not PEER_PYTHON.exists():
        print(f"creating {PEER_VENV.relative_to(ROOT)}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    print("installing the peer frameworks (pip, from the package index)", flush=True)
    pip = [str(PEER_PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    STAMP.write_text(wanted + "\n")


def run_once(framework: str, scenario: str) -> dict[str, Any]:
    script, in_peer_venv = FRAMEWORKS[framework]
    env = dict(os.environ)
    if in_peer_venv:
        python = str(PEER_PYTHON)
        env.pop("PYTHONPATH", None)
    else:
        project = ROOT / ".venv" / "bin" / "python"
        python = str(project) if project.exists() else sys.executable
        env["PYTHONPATH"] = str(ROOT / "bench")  # the driver reuses bench/resume.py
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
        start = time.perf_counter()
        proc = subprocess.run(
            [python, str(HERE / script), scenario, scratch],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"framework": framework, "scenario": scenario, "error": " | ".join(tail)}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**result, "load_1min_before": load, "process_s": elapsed}


def dig(data: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = data
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value)


def median_of(runs: list[dict[str, Any]], framework: str, row: Row) -> float | None:
    path = row.youyou_path if framework == "youyou" and row.youyou_path else row.peer_path
    values = [
        v
        for r in runs
        if r["framework"] == framework and r["scenario"] == row.scenario and "error" not in r
        for v in [dig(r, path)]
        if v is not None
    ]
    return statistics.median(values) if values else None


def cell(value: float | None, unit: str) -> str:
    if value is None:
        return "failed"
    return f"{value:.3f}" if unit == "s" or value < 10 else f"{value:.1f}"


def ratio(mine: float | None, theirs: float | None) -> str:
    if not mine or not theirs:
        return "–"
    value = mine / theirs
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def table(runs: list[dict[str, Any]], frameworks: list[str]) -> str:
    peers = [f for f in PEERS if f in frameworks]
    head = ["scenario", "unit", *(["YouYou"] if "youyou" in frameworks else [])]
    head += [TITLES[p] for p in peers]
    if "youyou" in frameworks:
        head += [f"YouYou / {TITLES[p]}" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for row in ROWS:
        if not any(r["scenario"] == row.scenario for r in runs):
            continue
        values = {f: median_of(runs, f, row) for f in frameworks}
        cells = [row.label, row.unit, *(cell(values[f], row.unit) for f in frameworks)]
        if "youyou" in frameworks:
            for peer in peers:
                mine, theirs = values["youyou"], values[peer]
                cells.append(ratio(mine, theirs))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    frameworks = [f for f in FRAMEWORKS if f in args.frameworks.split(",")]
    scenarios = [s for s in SCENARIOS if s in args.scenarios.split(",")]
    if any(FRAMEWORKS[f][1] for f in frameworks):
        ensure_peer_venv()
    runs: list[dict[str, Any]] = []
    started = time.strftime("%Y%m%d-%H%M%S")
    for rep in range(1, args.reps + 1):
        for scenario in scenarios:
            for framework in frameworks:
                result = {**run_once(framework, scenario), "rep": rep}
                runs.append(result)
                status = result.get("error") or f"{result['process_s']:.1f} s"
                print(f"rep {rep} {scenario:<10} {framework:<14} {status}", flush=True)
    loads = [r["load_1min_before"] for r in runs if "load_1min_before" in r]
    versions = {r["framework"]: r["version"] for r in runs if "version" in r}
    print()
    print(table(runs, frameworks))
    print()
    print(
        f"Medians of {args.reps} runs. Versions: "
        + ", ".join(f"{f} {v}" for f, v in versions.items())
        + f". Python {platform.python_version()}, {os.cpu_count()} CPUs, 1-min load average"
        + (
            f" {min(loads):.1f}–{max(loads):.1f} (median {statistics.median(loads):.1f})"
            if loads
            else ""
        )
        + " before the runs. Ratios under 1: YouYou is faster."
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"peers-{started}.json"
    out.write_text(
        json.dumps(
            {
                "started": started,
                "reps": args.reps,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "versions": versions,
                "medians": {
                    row.label: {f: median_of(runs, f, row) for f in frameworks} for row in ROWS
                },
                "runs": runs,
            },
            indent=1,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")
    if any("error" in r for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
