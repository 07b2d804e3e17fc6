"""Driving the real ``youyou`` executable: a temp ``youyou.toml`` with a scripted model.

Interactive tests run it in a pseudo-terminal (pexpect); ``-m`` tests also through pipes.
HOME and the XDG directories point into the test's tmp dir, so history and logs stay there.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pexpect
import yaml

from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.ledger import LedgerEvent, UserMessage
from youyou.domain.session import SessionListQuery

_SCRIPT = Path(sys.executable).with_name("youyou")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "youyou"]
TIMEOUT_S = 30
# A fresh prompt: "you>" then prompt_toolkit's reset code and the lines it reserves below.
PROMPT = re.compile(r"you>\x1b\[0m\r")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
T = TypeVar("T")


def loose(text: str) -> re.Pattern[str]:
    """Match ``text`` on screen even where styles (escape codes) sit between its words."""
    return re.compile(r"(?:\s|\x1b\[[0-9;]*m)+".join(re.escape(w) for w in text.split()))


def plain(text: str) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return _ANSI.sub("", text).replace("\r", "")


@dataclass
class Cli:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "youyou.toml"

    @property
    def db_url(self) -> str:
        return f"sqlite+aiosqlite:///{self.root / 'youyou.db'}"

    @property
    def data_dir(self) -> Path:
        return self.root / "xdg-data" / "youyou"

    def write_config(self, responses: Sequence[dict[str, Any]] = (), extra: str = "") -> None:
        script = self.root / "script.yaml"
        script.write_text(yaml.safe_dump({"responses": list(responses)}), encoding="utf-8")
        self.config.write_text(
            f'[database]\nurl = "{self.db_url}"\n\n'
            f'[[providers]]\nid = "scripted"\ntype = "scripted"\nscript_path = "{script}"\n'
            f"{extra}",
            encoding="utf-8",
        )

    def env(self, *, with_config: bool = True) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("YOUYOU_")}
        env.update(
            HOME=str(self.root),
            XDG_DATA_HOME=str(self.root / "xdg-data"),
            XDG_CONFIG_HOME=str(self.root / "xdg-config"),
            XDG_STATE_HOME=str(self.root / "xdg-state"),
            XDG_CACHE_HOME=str(self.root / "xdg-cache"),
            PROMPT_TOOLKIT_NO_CPR="1",
            TERM="xterm",
            COLUMNS="100",
            LINES="30",
        )
        if with_config:
            env["YOUYOU_CONFIG"] = str(self.config)
        return env

    def spawn(self, *args: str) -> pexpect.spawn:
        child = pexpect.spawn(
            COMMAND[0],
            [*COMMAND[1:], "chat", *args],
            env=self.env(),
            cwd=str(self.root),
            encoding="utf-8",
            timeout=TIMEOUT_S,
            dimensions=(30, 100),
        )
        child.logfile_read = io.StringIO()
        child.expect(PROMPT)
        return child

    def run(
        self, *args: str, stdin: str | None = None, with_config: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*COMMAND, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(with_config=with_config),
            cwd=str(self.root),
            timeout=TIMEOUT_S,
            check=False,
        )

    def with_storage(self, action: Callable[[SqlSessionStorage], Awaitable[T]]) -> T:
        """Run ``action`` on the CLI's session store, opened for it and closed after."""

        async def go() -> T:
            storage = await SqlSessionStorage.open(self.db_url)
            try:
                return await action(storage)
            finally:
                await storage.close()

        return asyncio.run(go())

    def stored(self, session_id: str) -> list[LedgerEvent]:
        return list(self.with_storage(lambda storage: storage.load_events(session_id)))

    def user_messages(self) -> list[UserMessage]:
        """User messages of every stored session, oldest session last."""
        return [
            e.payload
            for session_id in self.session_ids()
            for e in self.stored(session_id)
            if isinstance(e.payload, UserMessage)
        ]

    def session_ids(self) -> list[str]:
        page = self.with_storage(lambda storage: storage.list_sessions(SessionListQuery(limit=50)))
        return [s.session_id for s in page.items]


def screen(child: pexpect.spawn) -> str:
    """Everything the child printed so far, as plain text."""
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return plain(log.getvalue())


def quit_chat(child: pexpect.spawn) -> str:
    """Ctrl+D at the empty prompt; returns everything printed until the process ended."""
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, screen(child)
    return screen(child)
