"""Turn-scoped protocol objects: the outcome, skill augmentation, the request context."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from youyou.domain.context import VisibleMessage
from youyou.domain.errors import AgentError


class OutcomeStatus(StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    PANICKED = "panicked"


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    status: OutcomeStatus
    error: AgentError | None = None

    @classmethod
    def completed(cls) -> TurnOutcome:
        return cls(OutcomeStatus.COMPLETED)

    @classmethod
    def cancelled(cls) -> TurnOutcome:
        return cls(OutcomeStatus.CANCELLED)

    @classmethod
    def failed(cls, error: AgentError) -> TurnOutcome:
        return cls(OutcomeStatus.FAILED, error)

    @classmethod
    def panicked(cls, error: AgentError) -> TurnOutcome:
        return cls(OutcomeStatus.PANICKED, error)


@dataclass(frozen=True, slots=True)
class ResolvedSkillInjection:
    skill_name: str
    rendered_xml: str


@dataclass(frozen=True, slots=True)
class TurnAugmentation:
    """Lives only as long as its turn; never written to the ledger."""

    origin_user_seq: int
    skill_injections: tuple[ResolvedSkillInjection, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The visible history split at the current turn's anchor, its user message.

    It keeps the history list itself and the anchor's index: the parts are views, so building a
    request does not copy the whole history each time.
    """

    visible: list[VisibleMessage]
    anchor_index: int
    post_anchor_augmentations: tuple[str, ...]

    @property
    def pre_anchor_messages(self) -> list[VisibleMessage]:
        return self.visible[: self.anchor_index]

    @property
    def anchor_message(self) -> VisibleMessage:
        return self.visible[self.anchor_index]

    @property
    def post_anchor_messages(self) -> list[VisibleMessage]:
        return self.visible[self.anchor_index + 1 :]
