"""Container smoke test: build the image with Podman and use it as a deployment would.

1. the base image: Debian bookworm with Python from Debian's packages, built once by
   ``base-image.sh`` (no container registry is reachable here) and reused afterwards;
2. the image, from the repository's ``Dockerfile`` with ``--build-arg BASE_IMAGE=`` that base,
   pip reaching the package index the way this machine's pip does;
3. the container, on the host network, its configuration mounted as a file: it migrates its
   database in the volume, answers ``/healthz`` (and its own HEALTHCHECK), runs as a non-root
   user, a user registers, logs in and streams an answer from the fake OpenAI model running on
   the host (``bench/fake_openai.py``), ``youyou db backup`` works inside it, and ``podman
   stop`` (SIGTERM) ends it with exit code 0 within a few seconds.

Run from the repository root: ``.venv/bin/python tests/container/smoke.py`` (as root, with
podman, runc and debootstrap installed; ``.ci/run`` does this). Prints how long each step took;
exits non-zero on the first failure, with the container's log.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from youyou.adapters.storage.tables import VERSION_TABLE as SESSIONS_VERSION_TABLE
from youyou.workbench.store.tables import VERSION_TABLE as WORKBENCH_VERSION_TABLE

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PODMAN = ("podman", "--storage-driver=vfs", "--runtime=runc", "--cgroup-manager=cgroupfs")
# Podman's defaults for these limits do not work on this kind of machine: set them explicitly.
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096")
BASE_IMAGE = os.environ.get("YOUYOU_SMOKE_BASE_IMAGE", "localhost/youyou-base:bookworm")
IMAGE = "localhost/youyou:smoke"
PASSWORD = "correct horse battery staple"
START_TIMEOUT_S = 90
STOP_LIMIT_S = 5.0
# pip settings passed into the build as build arguments when this machine's pip has them.
PIP_SETTINGS = {
    "PIP_INDEX_URL": "index-url",
    "PIP_TRUSTED_HOST": "trusted-host",
    "PIP_CERT": "cert",
}


class SmokeError(Exception):
    pass


def podman(
    *args: str, check: bool = True, capture: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*PODMAN, *args], capture_output=capture, text=True, check=False)
    if check and done.returncode != 0:
        raise SmokeError(f"podman {' '.join(args[:2])} failed ({done.returncode}): {done.stderr}")
    return done


@contextmanager
def step(name: str, timings: dict[str, float]) -> Iterator[None]:
    print(f"-- {name}", flush=True)
    started = time.monotonic()
    yield
    timings[name] = time.monotonic() - started
    print(f"   {name}: {timings[name]:.1f} s", flush=True)


def pip_build_args() -> list[str]:
    """``--build-arg`` for each pip setting this machine has (environment first, then pip's
    configuration files), so pip in the build reaches the index as pip here does."""
    args: list[str] = []
    for variable, key in PIP_SETTINGS.items():
        value = os.environ.get(variable) or _pip_config(key)
        if value:
            args += ["--build-arg", f"{variable}={value}"]
    return args


def _pip_config(key: str) -> str:
    for scope in ("global", "user", "site"):
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", f"{scope}.{key}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_fake_model() -> tuple[subprocess.Popen[str], int]:
    model = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "fake_openai.py"), "--answer-s", "0.5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert model.stdout is not None
    line = model.stdout.readline()
    if not line.startswith("ready "):
        model.kill()
        raise SmokeError(f"the fake model did not start: {line!r}")
    return model, int(line.split()[1])


def write_config(directory: Path, model_port: int) -> Path:
    config = directory / "youyou.toml"
    config.write_text(
        '[server]\nregistration = "open"\n\n'
        "[memory]\nenabled = false\n\n"
        f'[[providers]]\nid = "fake"\ntype = "openai"\n'
        f'base_url = "http://127.0.0.1:{model_port}/v1"\nmax_attempts = 1\n\n'
        '[[providers.models]]\nid = "fake-model"\ncontext_window = 128000\n'
        'capabilities = ["tool_use", "streaming"]\n',
        encoding="utf-8",
    )
    config.chmod(0o644)  # read by the container's own user
    return config


def wait_healthy(http: httpx.Client, container: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = podman("inspect", "--format", "{{.State.Running}}", container).stdout.strip()
        if state != "true":
            raise SmokeError("the container stopped while starting")
        try:
            if http.get("/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SmokeError(f"/healthz did not answer within {START_TIMEOUT_S} s")


def exec_in(container: str, *command: str) -> str:
    return podman("exec", container, *command).stdout


def check_migrated(container: str) -> None:
    """Both schema chains have a revision in the database file in the volume."""
    script = (
        "import sqlite3, sys; db = sqlite3.connect('/data/youyou/youyou.db'); "
        "print(*(db.execute(f'SELECT version_num FROM {t}').fetchone()[0] for t in sys.argv[1:]))"
    )
    tables = (SESSIONS_VERSION_TABLE, WORKBENCH_VERSION_TABLE)
    revisions = exec_in(container, "python3", "-c", script, *tables).split()
    if len(revisions) != len(tables):
        raise SmokeError(f"the volume's database is not migrated: {revisions}")
    print(f"   migrated to {' and '.join(revisions)}")


def chat(http: httpx.Client) -> str:
    """Register, log in, open a session and stream one answer; returns the answer's text."""
    credentials = {"username": "oncall", "password": PASSWORD}
    response = http.post("/auth/register", json=credentials)
    if response.status_code != 201:
        raise SmokeError(f"register: {response.status_code} {response.text}")
    response = http.post("/auth/login", json=credentials)
    if response.status_code != 200:
        raise SmokeError(f"login: {response.status_code} {response.text}")
    http.headers["Authorization"] = f"Bearer {response.json()['data']['accessToken']}"
    response = http.post("/chat/sessions", json={})
    if response.status_code != 201:
        raise SmokeError(f"new session: {response.status_code} {response.text}")
    url = f"/chat/sessions/{response.json()['data']['id']}/messages"
    events: list[tuple[str, str]] = []
    with http.stream("POST", url, json={"content": "is checkout healthy?"}) as stream:
        if stream.status_code != 200:
            raise SmokeError(f"message: {stream.status_code} {stream.read()!r}")
        for frame in stream.iter_text():
            events += _frames(frame)
    names = [name for name, _ in events]
    if "turn_complete" not in names:
        raise SmokeError(f"the stream ended without turn_complete: {names}")
    return "".join(data for _, data in events)


def _frames(text: str) -> Sequence[tuple[str, str]]:
    found = []
    for frame in text.split("\n\n"):
        event, data = "message", ""
        for line in frame.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
        if data:
            found.append((event, data))
    return found


def stop_with_sigterm(container: str) -> float:
    started = time.monotonic()
    podman("stop", "--time=20", container)
    took = time.monotonic() - started
    code = podman("inspect", "--format", "{{.State.ExitCode}}", container).stdout.strip()
    if code != "0":
        raise SmokeError(f"SIGTERM ended the container with exit code {code}, not 0")
    if took > STOP_LIMIT_S:
        raise SmokeError(f"the container took {took:.1f} s to stop (limit {STOP_LIMIT_S} s)")
    return took


def build(timings: dict[str, float]) -> None:
    with step("base image", timings):
        subprocess.run(["bash", str(HERE / "base-image.sh"), BASE_IMAGE], check=True)
    with step("image build", timings):
        podman(
            "build",
            "--format=docker",  # HEALTHCHECK is part of Docker's image format, not OCI's
            # One commit per stage, not one per instruction: with the vfs driver each commit
            # copies the whole tree (13 minutes with a layer per instruction, 4 without).
            "--layers=false",
            "--network=host",
            *LIMITS,
            f"--build-arg=BASE_IMAGE={BASE_IMAGE}",
            *pip_build_args(),
            f"--tag={IMAGE}",
            str(ROOT),
            capture=False,
        )
    podman("image", "prune", "--force")  # the layers of earlier builds
    size = podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout.strip()
    print(f"   image size: {int(size) / 2**20:.0f} MiB", flush=True)


def start(name: str, config: Path, port: int) -> None:
    """The image's own entry point, its configuration as a read-only file, data in a volume."""
    podman(
        "run",
        "--detach",
        f"--name={name}",
        "--network=host",
        "--health-interval=disable",  # no systemd timer here: run by `healthcheck run`
        *LIMITS,
        f"--volume={name}:/data",
        f"--volume={config}:/etc/youyou/youyou.toml:ro",
        "--env=YOUYOU_CONFIG=/etc/youyou/youyou.toml",
        f"--env=YOUYOU_HEALTHCHECK_URL=http://127.0.0.1:{port}/healthz",
        IMAGE,
        "serve",
        "--host=127.0.0.1",
        f"--port={port}",
    )


def exercise(timings: dict[str, float], workdir: Path) -> None:
    model, model_port = start_fake_model()
    port = free_port()
    name = f"youyou-smoke-{os.getpid()}"
    base_url = f"http://127.0.0.1:{port}"
    try:
        with (
            step("start, migrate, /healthz", timings),
            httpx.Client(base_url=base_url, trust_env=False) as http,
        ):
            start(name, write_config(workdir, model_port), port)
            wait_healthy(http, name)
        check_migrated(name)
        user = exec_in(name, "id", "-u").strip()
        if user == "0":
            raise SmokeError("the server runs as root")
        print(f"   runs as uid {user}")
        health = podman("healthcheck", "run", name, check=False)
        if health.returncode != 0:
            raise SmokeError(f"the image's HEALTHCHECK failed: {health.stdout}{health.stderr}")
        with (
            step("register, log in, stream an answer", timings),
            httpx.Client(base_url=base_url, trust_env=False, timeout=60) as http,
        ):
            answer = chat(http)
        if "nothing is on fire" not in answer:
            raise SmokeError(f"the fake model's answer is not in the stream: {answer[:500]}")
        backup = exec_in(name, "youyou", "db", "backup", "/data/backup.db")
        print(f"   {' '.join(backup.split())}")
        with step("stop (SIGTERM)", timings):
            took = stop_with_sigterm(name)
        print(f"   stopped with exit code 0 in {took:.1f} s")
    except SmokeError:
        logs = podman("logs", name, check=False)
        print(f"container log:\n{logs.stdout}{logs.stderr}", file=sys.stderr)
        raise
    finally:
        model.terminate()
        model.wait(10)
        podman("rm", "--force", "--time=0", name, check=False)
        podman("volume", "rm", "--force", name, check=False)


def main() -> int:
    if shutil.which("podman") is None:
        print("podman is not installed (apt-get install podman runc debootstrap)", file=sys.stderr)
        return 1
    timings: dict[str, float] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="youyou-smoke-") as workdir:
        try:
            build(timings)
            exercise(timings, Path(workdir))
        except (SmokeError, subprocess.CalledProcessError) as exc:
            print(f"container smoke test FAILED: {exc}", file=sys.stderr)
            return 1
    total = time.monotonic() - started
    print(f"container smoke test passed in {total:.0f} s: {json.dumps(timings)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
