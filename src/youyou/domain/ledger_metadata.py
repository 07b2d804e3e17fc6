"""Typed values of the ledger's metadata events.

Each metadata key has one model (the session profile is ``SessionPinnedConfig``, a compaction
boundary ``CompactionRecord``, the others are below): events are written with
``metadata_event(key, record)`` and read back with ``read_metadata(event, Model)``, so no code
picks dictionary keys out of a payload, and a malformed value fails loudly where it is read.
The records of tool approvals (``PendingApproval``, ``ApprovalDecision``, ``RememberedTools``)
live with their rules in ``domain/approvals.py``.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, RootModel

from youyou.domain.config import MemoryMode
from youyou.domain.ledger import LedgerEvent, Metadata

Record = TypeVar("Record", bound=BaseModel)


class MemoryCheckpoint(BaseModel):
    """``memory_checkpoint``: long-term memories were extracted from every event up to
    ``last_seq``, after user turn ``turn_index``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    last_seq: int
    turn_index: int = 0


class MemoryModeChange(BaseModel):
    """``memory_mode``: the compaction trigger chosen for this session from here on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: MemoryMode


class SkillInvocation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    skill_name: str


class SkillInvocations(RootModel[tuple[SkillInvocation, ...]]):
    """``skill_invocations``: the ``/name`` skills of one turn, an audit record only (resume
    never turns it back into a message)."""

    model_config = ConfigDict(frozen=True)


def metadata_event(key: str, record: BaseModel) -> Metadata:
    return Metadata(key=key, value=record.model_dump(mode="json"))


def read_metadata(event: LedgerEvent | None, model: type[Record]) -> Record | None:
    """The typed value of a metadata event (None for no event)."""
    if event is None:
        return None
    payload = event.payload
    if not isinstance(payload, Metadata):
        raise TypeError(f"event {event.seq} is {payload.kind}, not metadata")
    return model.model_validate(payload.value)
