"""Agent lifecycle and session slots, guarded by one lock.

See docs/architecture.md, 'Cancellation and shutdown'.

State machine::

    lifecycle: RUNNING --shutdown()--> SHUTTING_DOWN --finish--> SHUTDOWN
    slot:      (empty) --claim--> RESERVED --commit--> ACTIVE --release--> (empty)
                                  RESERVED --rollback(reservation_id)--> (empty)

``claim`` checks lifecycle and capacity in the same critical section, so a session can never
be claimed once shutdown has begun; shutdown waits for the reservations made before that to
commit or roll back (``SessionService.settle_openings``), then closes every active session.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Generic, TypeVar

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.lifecycle import LifecycleState

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Reserved:
    reservation_id: str
    session_id: str


@dataclass(frozen=True, slots=True)
class Active(Generic[R]):
    session_id: str
    runtime: R


def shutting_down() -> AgentError:
    """The refusal of anything new once shutdown has begun: a session, or work on a handle."""
    return AgentError(
        ErrorCode.AGENT_SHUTDOWN, "the agent is shutting down", source=ErrorSource.AGENT
    )


class AgentControl(Generic[R]):
    def __init__(self, max_active_sessions: int = 1) -> None:
        self._lock = threading.Lock()
        self._max = max_active_sessions
        self._lifecycle = LifecycleState.RUNNING
        self._slots: dict[str, Reserved | Active[R]] = {}

    @property
    def lifecycle(self) -> LifecycleState:
        return self._lifecycle

    def claim(self, session_id: str) -> str:
        """Reserve a slot for ``session_id``; returns the reservation id."""
        with self._lock:
            if self._lifecycle is not LifecycleState.RUNNING:
                raise shutting_down()
            if session_id in self._slots:
                raise AgentError(
                    ErrorCode.SESSION_BUSY,
                    f"session {session_id} is already active",
                    source=ErrorSource.SESSION_SERVICE,
                )
            if len(self._slots) >= self._max:
                raise AgentError(
                    ErrorCode.SESSION_BUSY,
                    f"{len(self._slots)} of {self._max} session slots are in use",
                    source=ErrorSource.SESSION_SERVICE,
                )
            reservation = Reserved(uuid.uuid4().hex, session_id)
            self._slots[session_id] = reservation
            return reservation.reservation_id

    def commit(self, reservation_id: str, runtime: R) -> None:
        with self._lock:
            slot = self._find_reservation(reservation_id)
            self._slots[slot.session_id] = Active(slot.session_id, runtime)

    def rollback(self, reservation_id: str) -> None:
        """Free only the slot this reservation holds, never a concurrent one."""
        with self._lock:
            for key, slot in list(self._slots.items()):
                if isinstance(slot, Reserved) and slot.reservation_id == reservation_id:
                    del self._slots[key]

    def release(self, session_id: str) -> None:
        with self._lock:
            self._slots.pop(session_id, None)

    def is_claimed(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._slots

    def active_runtimes(self) -> list[R]:
        with self._lock:
            return [s.runtime for s in self._slots.values() if isinstance(s, Active)]

    def begin_shutdown(self) -> bool:
        """Switch RUNNING → SHUTTING_DOWN; False if shutdown had already begun."""
        with self._lock:
            if self._lifecycle is not LifecycleState.RUNNING:
                return False
            self._lifecycle = LifecycleState.SHUTTING_DOWN
            return True

    def finish_shutdown(self) -> None:
        with self._lock:
            self._lifecycle = LifecycleState.SHUTDOWN

    def _find_reservation(self, reservation_id: str) -> Reserved:
        for slot in self._slots.values():
            if isinstance(slot, Reserved) and slot.reservation_id == reservation_id:
                return slot
        raise AgentError(
            ErrorCode.INTERNAL_PANIC,
            f"reservation {reservation_id} does not exist",
            source=ErrorSource.AGENT,
        )
