"""Memory extractions a closing ``youyou chat`` could not finish in time, done by the next one.

A slow model (a local one on CPU) may need longer than ``[memory] close_timeout_s`` to extract
a session's long-term memories. Closing keeps its bound but does not drop the work: it leaves a
marker (an empty file named after the session) in the data directory, and the next
``youyou chat`` extracts those sessions in the background while it runs: it resumes each one
and closes it with extraction. The ledger's memory checkpoint says what is still to extract,
so a marker whose session was extracted meanwhile costs one read and nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from pathlib import Path

from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.bootstrap import BuiltApp
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.ledger import Metadata
from youyou.domain.ledger_metadata import MemoryCheckpoint, read_metadata
from youyou.domain.session import SessionHead

PENDING_DIR = "pending-memories"
logger = logging.getLogger(__name__)


class PendingExtractions:
    """One marker file per session whose extraction is handed to the next start."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def add(self, session_id: str) -> bool:
        """False when the marker cannot be written: then the extraction is really lost."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            (self.directory / session_id).touch()
        except OSError as exc:
            logger.warning("cannot hand the memory extraction of %s on: %s", session_id, exc)
            return False
        return True

    def remove(self, session_id: str) -> None:
        with suppress(OSError):
            (self.directory / session_id).unlink(missing_ok=True)

    def session_ids(self) -> list[str]:
        try:
            return sorted(p.name for p in self.directory.iterdir() if p.is_file())
        except OSError:
            return []


def _checkpoint_seq(head: SessionHead) -> int:
    found = read_metadata(head.latest_memory_checkpoint, MemoryCheckpoint)
    return found.last_seq if found else 0


async def still_to_extract(storage: SqlSessionStorage, session_id: str) -> bool:
    """Whether the session has events after its memory checkpoint that extraction reads."""
    head, events = await storage.load_session(session_id, _checkpoint_seq)
    after = _checkpoint_seq(head)
    return any(e.seq > after and not isinstance(e.payload, Metadata) for e in events)


async def extract_pending(app: BuiltApp, pending: PendingExtractions, skip: str) -> None:
    """Extract every marked session but ``skip`` (the chat's own, which its close extracts);
    a marker goes once its session has nothing left to extract (or is gone). A session
    another process writes right now, or whose extraction fails, keeps its marker."""
    for session_id in pending.session_ids():
        if session_id == skip:
            continue
        try:
            await _resume_and_close(app, session_id)
            if await still_to_extract(app.session_storage, session_id):
                continue  # the extraction failed (logged by the kernel): try next time
        except AgentError as error:
            if error.code is not ErrorCode.SESSION_NOT_FOUND:
                logger.warning("memory extraction of session %s: %s", session_id, error.message)
                continue
        pending.remove(session_id)


async def _resume_and_close(app: BuiltApp, session_id: str) -> None:
    """Resume and close with extraction; cancelled, the session is closed without it (an
    open session would be extracted again, without a bound, when the agent shuts down)."""
    opening = asyncio.ensure_future(app.agent.resume_session(session_id))
    try:
        session = await asyncio.shield(opening)
    except asyncio.CancelledError:
        with suppress(Exception):
            await (await opening).close(extract_memories=False)
        raise
    await session.close()
