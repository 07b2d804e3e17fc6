"""A built agent: creates and resumes sessions, shuts down.

See docs/architecture.md, 'Cancellation and shutdown'.
"""

from __future__ import annotations

import asyncio
import logging

from youyou.api.catalog import SessionCatalog
from youyou.api.session import SessionHandle
from youyou.application.compaction import Compactor
from youyou.application.kernel import Kernel
from youyou.application.session_runtime import SessionRuntime
from youyou.application.session_service import SessionService
from youyou.application.turn_engine import TurnEngine
from youyou.domain.config import SessionConfig
from youyou.domain.hooks import SessionTerminationMode
from youyou.domain.lifecycle import LifecycleState
from youyou.domain.model import ModelInfo

logger = logging.getLogger(__name__)


class Agent:
    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._sessions = SessionService(kernel)
        self._engine = TurnEngine(kernel, self._sessions)
        self._compactor = Compactor(kernel, self._sessions)
        storage = kernel.session_storage
        self._catalog = (
            SessionCatalog(storage, kernel.control, self.resume_session)
            if storage is not None
            else None
        )

    @property
    def lifecycle(self) -> LifecycleState:
        return self._kernel.control.lifecycle

    def models(self) -> list[ModelInfo]:
        return self._kernel.models.infos()

    def session_catalog(self) -> SessionCatalog | None:
        """Only with a registered session storage."""
        return self._catalog

    async def request_cancel(self, session_id: str) -> bool:
        """Cancel what runs in the session in whichever process writes it (this one or
        another), at that process's next lease renewal; False when no process holds the
        session's lease, and always without session leases (cancel through the handle)."""
        writers = self._kernel.writers
        return await writers.request_cancel(session_id) if writers is not None else False

    async def writer_elsewhere(self, session_id: str) -> str | None:
        """The other process writing the session now (as its lease names it), or None: the
        session is free, or this agent writes it, or there are no session leases."""
        writers = self._kernel.writers
        return await writers.writer_elsewhere(session_id) if writers is not None else None

    @property
    def writer(self) -> str | None:
        """This agent as a session writer (its lease holder), with session leases."""
        writers = self._kernel.writers
        return writers.holder if writers is not None else None

    def _handle(self, runtime: SessionRuntime) -> SessionHandle:
        return SessionHandle(runtime, self._engine, self._sessions, self._compactor)

    async def new_session(self, config: SessionConfig | None = None) -> SessionHandle:
        return self._handle(await self._sessions.create(config or SessionConfig()))

    async def resume_session(self, session_id: str) -> SessionHandle:
        return self._handle(await self._sessions.resume(session_id))

    async def shutdown(self) -> None:
        """Refuse new work, wait for creates and resumes in flight, close every session
        (SessionEnd cannot veto), shut plugins down in reverse: no session outlives it."""
        control = self._kernel.control
        if not control.begin_shutdown():
            return
        await self._sessions.settle_openings()
        runtimes = control.active_runtimes()
        # Sessions close concurrently: each may wait for its turn and a memory extraction.
        results = await asyncio.gather(
            *(self._sessions.close(r, SessionTerminationMode.SHUTDOWN) for r in runtimes),
            return_exceptions=True,
        )
        for runtime, result in zip(runtimes, results, strict=True):
            if isinstance(result, BaseException):
                logger.warning(
                    "closing session %s during shutdown failed",
                    runtime.session_id,
                    exc_info=result,
                )
                self._sessions.mark_closed(runtime)
        await self._kernel.plugins.shutdown()
        control.finish_shutdown()
