"""The agent's lifecycle: running, then shutting down (nothing new starts), then shut down."""

from __future__ import annotations

from enum import StrEnum


class LifecycleState(StrEnum):
    RUNNING = "running"
    SHUTTING_DOWN = "shutting_down"
    SHUTDOWN = "shutdown"
