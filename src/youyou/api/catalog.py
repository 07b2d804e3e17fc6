"""Session discovery and management over a session storage (see docs/sessions.md, 'Catalog')."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from youyou.api.session import SessionHandle
from youyou.application.agent_control import AgentControl
from youyou.application.session_runtime import SessionRuntime
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.session import SessionListQuery, SessionPage, SessionSearchQuery, SessionSummary
from youyou.ports.session_storage import SessionStorage


class SessionCatalog:
    def __init__(
        self,
        storage: SessionStorage,
        control: AgentControl[SessionRuntime],
        resume: Callable[[str], Awaitable[SessionHandle]],
    ) -> None:
        self._storage = storage
        self._control = control
        self._resume = resume

    async def list(self, query: SessionListQuery | None = None) -> SessionPage:
        return await self._storage.list_sessions(query or SessionListQuery())

    async def find(self, query: SessionSearchQuery, limit: int = 20) -> Sequence[SessionSummary]:
        return await self._storage.find_sessions(query, limit)

    async def resume(self, session_id: str) -> SessionHandle:
        return await self._resume(session_id)

    async def delete(self, session_id: str) -> None:
        """The active session cannot be deleted: close it first."""
        if self._control.is_claimed(session_id):
            raise AgentError(
                ErrorCode.SESSION_BUSY,
                f"session {session_id} is active; close it before deleting",
                source=ErrorSource.SESSION_SERVICE,
            )
        await self._storage.delete_session(session_id)
