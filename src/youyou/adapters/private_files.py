"""Where youyou keeps its own files, and how they are made: conversations, memories and
runbooks are for their owner only, so a directory made here is 0700 and a file 0600, whatever
the umask (SQLite gives its ``-wal`` and ``-shm`` files the mode of the database file)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import platformdirs

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def data_dir() -> Path:
    """The per-user data directory (the default database, the CLI's history and log)."""
    return Path(platformdirs.user_data_dir("youyou"))


def private_directory(path: Path) -> Path:
    """``path`` created if missing (0700). youyou's own data directory is made 0700 even when
    an earlier version left it readable; another existing directory keeps its mode."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if path.resolve() == data_dir().resolve():
        path.chmod(PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty (0600) if missing; an existing file is left as it is and not
    opened (it may sit on a disk that is read-only now)."""
    if path.exists():
        return path
    with contextlib.suppress(FileExistsError):  # made by another process just now
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    return path
