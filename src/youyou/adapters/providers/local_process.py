"""The parent's side of the local model worker: start it, wait until it serves, notice that it
died and why, stop it. The worker itself is ``local_worker.py``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

WORKER_MODULE = "youyou.adapters.providers.local_worker"
_STDERR_TAIL_BYTES = 2000
_STOP_GRACE_S = 5.0


class WorkerStartError(Exception):
    """The worker exited, or did not announce itself, before serving."""


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    model_path: Path
    n_ctx: int
    n_threads: int | None
    start_timeout_s: float

    def command(self) -> list[str]:
        argv = [sys.executable, "-m", WORKER_MODULE, "--model", str(self.model_path)]
        argv += ["--n-ctx", str(self.n_ctx)]
        if self.n_threads is not None:
            argv += ["--n-threads", str(self.n_threads)]
        return argv


def _spawn(options: WorkerOptions) -> WorkerProcess:
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop(); a pipe could fill up)
    try:
        process = subprocess.Popen(
            options.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            # Its own process group: a Ctrl+C meant to cancel a turn must not reach it.
            start_new_session=True,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
    except OSError as exc:
        stderr.close()
        raise WorkerStartError(f"the local model worker could not be started: {exc}") from exc
    return WorkerProcess(process, stderr, secrets.token_urlsafe(24))


class WorkerProcess:
    """One running worker: its address, its bearer token and its captured stderr."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: IO[bytes], token: str) -> None:
        self._process = process
        self._stderr = stderr
        self._report: str | None = None
        self._stopping = asyncio.Lock()
        self.token = token
        self.port = 0

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @staticmethod
    async def start(options: WorkerOptions) -> WorkerProcess:
        """Spawn the worker and wait, at most ``start_timeout_s``, for it to listen."""
        # Spawning takes milliseconds; done here, no cancel can come between it and the try.
        worker = _spawn(options)
        try:
            worker.port = await worker._announced_port(options.start_timeout_s)
        except WorkerStartError as exc:
            raise WorkerStartError(f"{exc}: {await worker.stop()}") from None
        except BaseException:  # cancelled while it started
            await worker.stop()
            raise
        return worker

    async def _announced_port(self, timeout_s: float) -> int:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(self.token.encode() + b"\n")
            stdin.flush()
            async with asyncio.timeout(timeout_s):
                line = await asyncio.to_thread(stdout.readline)
        except TimeoutError:
            raise WorkerStartError(
                f"the local model worker did not get ready within {timeout_s:g} s"
            ) from None
        except OSError:  # its stdin is closed: it has already exited
            line = b""
        try:
            return int(json.loads(line)["port"])
        except (ValueError, TypeError, KeyError):
            raise WorkerStartError("the local model worker ended before serving") from None

    def exit_code(self) -> int | None:
        """None while it runs."""
        return self._process.poll()

    async def wait_exit(self, timeout_s: float) -> int | None:
        """The exit code once the process is gone, or None if it still runs after the wait."""
        try:
            return await asyncio.to_thread(self._process.wait, timeout_s)
        except subprocess.TimeoutExpired:
            return None

    async def stop(self) -> str:
        """Close its stdin (the worker then exits at once), terminate or kill it if it lingers.

        Returns how it ended and the end of its stderr, for error messages."""
        async with self._stopping:
            if self._report is None:
                self._report = await self._stop()
            return self._report

    async def _stop(self) -> str:
        process = self._process
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if await self.wait_exit(_STOP_GRACE_S) is None:
            process.terminate()
            if await self.wait_exit(_STOP_GRACE_S) is None:
                process.kill()
                await self.wait_exit(_STOP_GRACE_S)
        report = f"it {self._describe_exit()}; {self._stderr_tail()}"
        if process.stdout is not None:
            process.stdout.close()
        self._stderr.close()
        return report

    def _describe_exit(self) -> str:
        code = self._process.poll()
        if code is None:
            return "did not exit"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"was killed by {signal.Signals(-code).name}"
            return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def _stderr_tail(self) -> str:
        self._stderr.seek(0, 2)
        self._stderr.seek(max(self._stderr.tell() - _STDERR_TAIL_BYTES, 0))
        tail = self._stderr.read().decode(errors="replace").strip()
        return f"its stderr ends with: {tail}" if tail else "its stderr is empty"
