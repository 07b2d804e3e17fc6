"""``cli/process.py``: logging never takes a command down: no log file means stderr, a failing
one means silence.

The data directory (log file, prompt history) is unusable when it sits under a regular file:
that fails for root too, which a read-only directory would not.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_kit import Cli


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path)
    # The memory extraction when the session closes gets no usable answer: that is logged.
    cli.write_config([{"text": "the disk is full"}])
    return cli


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("youyou: warning:")]


def test_an_unusable_data_directory_logs_to_stderr_with_one_warning(cli: Cli) -> None:
    blocker = cli.root / "not-a-directory"
    blocker.write_text("", encoding="utf-8")
    env = {**cli.env(), "XDG_DATA_HOME": str(blocker / "data")}
    cli.env = lambda *, with_config=True: env  # type: ignore[method-assign]

    listed = cli.run("sessions", "list")
    answered = cli.run("chat", "-m", "why did checkout fail?")

    assert listed.returncode == 0, listed.stderr
    assert [w.split(" (")[0] for w in _warnings(listed.stderr)] == [
        "youyou: warning: cannot open the log file"
    ]
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "the disk is full\n"
    assert len(_warnings(answered.stderr)) == 1
    assert "youyou: WARNING youyou." in answered.stderr  # log lines, on stderr
    assert "Traceback" not in listed.stderr + answered.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_log_file_that_cannot_be_written_costs_one_warning(cli: Cli) -> None:
    cli.data_dir.mkdir(parents=True)
    (cli.data_dir / "youyou.log").symlink_to("/dev/full")  # every write: ENOSPC

    answered = cli.run("chat", "-m", "why did checkout fail?")

    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "the disk is full\n"
    assert "Traceback" not in answered.stderr
    [warning] = _warnings(answered.stderr)
    assert "cannot write" in warning and "No space left on device" in warning
