"""``GET /ui/settings``: the configured values a client shows or checks before sending (memory
thresholds, length limits, the password rule, upload sizes), so the web UI copies none of
them into its code. Public: the sign-in page needs the password rule."""

from __future__ import annotations

from fastapi import APIRouter

from youyou.adapters.knowledge.base import MAX_NAME_CHARS
from youyou.adapters.knowledge.sources import MAX_DOCUMENT_BYTES
from youyou.config import MEMORY_MODE_NAMES, Settings, memory_mode_name
from youyou.domain.skill_messages import MAX_SKILL_BYTES
from youyou.workbench.context import RequestIdDep, WorkbenchDep
from youyou.workbench.intake import SIGNED_IN_BODY_BYTES
from youyou.workbench.passwords import AROUND_USERNAME
from youyou.workbench.routes import COMMON_ERRORS
from youyou.workbench.schemas import (
    MAX_MESSAGE_BLOCKS,
    MAX_PASSWORD,
    MAX_PROMPT_CONTENT,
    MAX_PROMPT_LABEL,
    MAX_SESSION_TITLE,
    MAX_USERNAME,
    MIN_PASSWORD,
    USERNAME_PATTERN,
    ApiModel,
    Envelope,
    MemoryModeName,
)

router = APIRouter(prefix="/ui", tags=["settings"], responses=COMMON_ERRORS)


class MemorySettingsOut(ApiModel):
    default_mode: MemoryModeName
    modes: list[MemoryModeName]
    every_n_turns: int
    """``every_30_turns`` compacts after this many completed turns."""
    context_percent: float
    """``context_70_percent`` compacts once the context is this full (0–100)."""
    hard_limit_percent: float
    """A message that would fill the context past this share (0–100) is refused."""


class LengthsOut(ApiModel):
    prompt_label_max_chars: int
    prompt_content_max_chars: int
    session_title_max_chars: int
    username_max_chars: int
    username_pattern: str
    knowledge_name_max_chars: int


class PasswordRuleOut(ApiModel):
    min_length: int
    max_length: int
    rejects_common: bool
    """Passwords of the shipped list of common passwords are refused."""
    username_around_chars: int
    """The username with at most this many characters around it is refused."""


class UploadsOut(ApiModel):
    max_body_bytes: int
    """A message or an upload (SKILL.md, knowledge document) as sent."""
    max_other_body_bytes: int
    max_message_chars: int
    max_message_blocks: int
    skill_max_bytes: int
    knowledge_document_max_bytes: int


class UiSettingsOut(ApiModel):
    registration: bool
    memory: MemorySettingsOut
    lengths: LengthsOut
    password: PasswordRuleOut
    uploads: UploadsOut


def ui_settings(settings: Settings) -> UiSettingsOut:
    compaction, server = settings.compaction, settings.server
    return UiSettingsOut(
        registration=server.registration_open,
        memory=MemorySettingsOut(
            default_mode=memory_mode_name(compaction.mode),
            modes=list(MEMORY_MODE_NAMES),
            every_n_turns=compaction.every_n_turns,
            context_percent=round(compaction.context_percent * 100, 2),
            hard_limit_percent=round(compaction.hard_limit * 100, 2),
        ),
        lengths=LengthsOut(
            prompt_label_max_chars=MAX_PROMPT_LABEL,
            prompt_content_max_chars=MAX_PROMPT_CONTENT,
            session_title_max_chars=MAX_SESSION_TITLE,
            username_max_chars=MAX_USERNAME,
            username_pattern=USERNAME_PATTERN,
            knowledge_name_max_chars=MAX_NAME_CHARS,
        ),
        password=PasswordRuleOut(
            min_length=MIN_PASSWORD,
            max_length=MAX_PASSWORD,
            rejects_common=True,
            username_around_chars=AROUND_USERNAME,
        ),
        uploads=UploadsOut(
            max_body_bytes=server.max_body_bytes,
            max_other_body_bytes=min(SIGNED_IN_BODY_BYTES, server.max_body_bytes),
            max_message_chars=server.max_message_chars,
            max_message_blocks=MAX_MESSAGE_BLOCKS,
            skill_max_bytes=MAX_SKILL_BYTES,
            knowledge_document_max_bytes=MAX_DOCUMENT_BYTES,
        ),
    )


@router.get("/settings")
async def get_ui_settings(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[UiSettingsOut]:
    """One source for what the UI shows: read from the server's configuration."""
    return Envelope(data=ui_settings(wb.settings), request_id=rid)
