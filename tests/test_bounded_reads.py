"""Files the user points at are read only up to their limit plus one byte: an attachment or a
SKILL.md that is ``/dev/zero``, a pipe or a huge file is refused without filling the memory."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from youyou.adapters.skills_dir import load_skills_dir
from youyou.cli.attachments import load_attachment
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.skill_messages import MAX_SKILL_BYTES

OFFERED = 64 * 1024 * 1024  # what the pipe would deliver if the reader kept reading
CHUNK = 64 * 1024


class Pipe:
    """A named pipe fed with zeros by a thread until the reader closes it or ``OFFERED`` is
    reached; ``written`` is how much the reader took (plus at most one pipe buffer)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0
        os.mkfifo(path)
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        with self.path.open("wb", buffering=0) as out:
            try:
                while self.written < OFFERED:
                    self.written += out.write(bytes(CHUNK))
            except BrokenPipeError:
                pass

    def join(self) -> None:
        self._thread.join(timeout=30)


@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[Pipe]:
    fed = Pipe(tmp_path / "stream.txt")
    yield fed
    fed.join()


def _refused(path: Path) -> str:
    with pytest.raises(AgentError) as info:
        load_attachment(str(path))
    assert info.value.code is ErrorCode.INPUT_VALIDATION
    return info.value.message


def test_an_attachment_from_a_pipe_stops_at_its_limit(pipe: Pipe) -> None:
    message = _refused(pipe.path)
    pipe.join()
    assert message == f"{pipe.path} is larger than 1 MB; text attachments are limited to 1 MB"
    assert pipe.written <= 2 * 1024 * 1024 + 1  # 1 MB and a byte, and one pipe buffer


def test_dev_zero_as_an_attachment_is_refused() -> None:
    assert "is larger than 1 MB" in _refused(Path("/dev/zero"))


def test_a_skill_file_linked_to_a_pipe_is_too_large(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "endless"
    folder.mkdir(parents=True)
    fed = Pipe(tmp_path / "stream.md")
    (folder / "SKILL.md").symlink_to(fed.path)
    result = load_skills_dir(tmp_path / "skills")
    fed.join()
    [(path, error)] = result.errors
    assert path == folder / "SKILL.md"
    assert "skill.too_large" in [v.rule_id for v in error.violations]
    assert fed.written <= MAX_SKILL_BYTES + 1 + 1024 * 1024


def test_a_skill_file_linked_to_dev_zero_is_too_large(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "zero"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to("/dev/zero")
    [(_, error)] = load_skills_dir(tmp_path / "skills").errors
    assert "skill.too_large" in [v.rule_id for v in error.violations]
