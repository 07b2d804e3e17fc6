"""HTTP payloads: camelCase JSON, unknown fields refused, every response in one envelope."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel

T = TypeVar("T")

MAX_PROMPT_LABEL = 160
MAX_PROMPT_CONTENT = 12_000
MAX_SESSION_TITLE = 200
MAX_MESSAGE_BLOCKS = 50
MIN_PASSWORD = 8
MAX_PASSWORD = 256
MAX_USERNAME = 64
MemoryModeName = Literal["every_30_turns", "context_70_percent", "manual"]


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class Envelope(ApiModel, Generic[T]):
    data: T
    request_id: str


class ErrorBody(ApiModel):
    code: str
    message: str


class ErrorEnvelope(ApiModel):
    error: ErrorBody
    request_id: str


# -- auth --------------------------------------------------------------------------------------

USERNAME_PATTERN = rf"^[A-Za-z0-9_.@-]{{1,{MAX_USERNAME}}}$"
Username = Annotated[str, StringConstraints(strip_whitespace=True, pattern=USERNAME_PATTERN)]
Password = Annotated[str, StringConstraints(min_length=MIN_PASSWORD, max_length=MAX_PASSWORD)]


class Credentials(ApiModel):
    username: Username
    password: Password
    invite: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = None
    """The token of a one-time invite link (needed when registration is by invite)."""


class LoginBody(ApiModel):
    """Login checks the stored hash only: length rules apply at registration."""

    username: Annotated[str, StringConstraints(min_length=1, max_length=MAX_USERNAME)]
    password: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PASSWORD)]


class PasswordChange(ApiModel):
    current_password: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PASSWORD)]
    new_password: Password


class UserOut(ApiModel):
    id: str
    username: str
    created_at: datetime
    role: Literal["admin", "member"]
    disabled: bool


class LoginOut(ApiModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_at: datetime
    user: UserOut


# -- prompts, skills, configuration -----------------------------------------------------------

Label = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_PROMPT_LABEL)
]
PromptText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_PROMPT_CONTENT)
]


class PromptBody(ApiModel):
    label: Label
    content: PromptText


class PromptOut(ApiModel):
    id: str
    label: str
    content: str
    is_default: bool
    created_at: datetime
    updated_at: datetime


class SkillOut(ApiModel):
    id: str
    filename: str
    name: str
    description: str
    label: str
    content_preview: str
    size_bytes: int
    created_at: datetime
    updated_at: datetime


class Selection(ApiModel):
    system_prompt_id: str
    skill_ids: list[str]


class SelectionBody(ApiModel):
    system_prompt_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    skill_ids: Annotated[
        list[Annotated[str, StringConstraints(max_length=64)]], Field(max_length=200)
    ]


class ConfigurationOut(ApiModel):
    prompts: list[PromptOut]
    skills: list[SkillOut]
    selection: Selection


class ModelOut(ApiModel):
    id: str
    display_name: str
    context_window: int
    capabilities: list[str]


# -- sessions and messages ----------------------------------------------------------------------


class MemoryOut(ApiModel):
    mode: MemoryModeName
    summary: str | None
    compacted_message_count: int
    context_tokens: int
    context_window_tokens: int
    context_usage_percent: float
    can_compact: bool
    last_compacted_at: datetime | None


class PendingApprovalOut(ApiModel):
    """A tool call that waits for the session owner's decision."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    server_id: str | None
    requested_at: datetime
    expires_at: datetime | None


class UsageOut(ApiModel):
    """Tokens of completed turns, and their cost when the models have prices configured
    (``null`` when none of them was priced). ``modelId`` is null for a sum over models."""

    model_id: str | None
    turns: int
    input_tokens: int
    output_tokens: int
    cost: float | None


class UserUsageOut(ApiModel):
    total: UsageOut
    by_model: list[UsageOut]


class SessionOut(ApiModel):
    id: str
    title: str
    model_id: str
    created_at: datetime
    updated_at: datetime
    message_count: int
    memory: MemoryOut
    running: bool = False
    awaiting_approval: bool = False
    pending_approvals: list[PendingApprovalOut] = Field(default_factory=list)
    usage: UsageOut | None = None
    """What the session's turns used (cleared turns too): in ``GET /chat/sessions/{id}``
    only, null in lists."""


class SessionPage(ApiModel):
    items: list[SessionOut]
    next_cursor: str | None


class NewSessionBody(ApiModel):
    title: (
        Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_SESSION_TITLE)]
        | None
    ) = None
    model_id: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = None


class RenameBody(ApiModel):
    """Surrounding whitespace is dropped; what is left must not be empty."""

    title: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_SESSION_TITLE)
    ]


class MemoryModeBody(ApiModel):
    mode: MemoryModeName


class TextBlockIn(ApiModel):
    type: Literal["text"]
    text: str


class ImageBlockIn(ApiModel):
    type: Literal["image"]
    mime_type: str
    data_base64: str


class FileBlockIn(ApiModel):
    type: Literal["file"]
    file_name: str | None = None
    media_type: str | None = None
    text: str


BlockIn = Annotated[TextBlockIn | ImageBlockIn | FileBlockIn, Field(discriminator="type")]


class SendBody(ApiModel):
    content: (
        Annotated[str, StringConstraints(min_length=1)]
        | Annotated[list[BlockIn], Field(min_length=1, max_length=MAX_MESSAGE_BLOCKS)]
    )


class ApprovalBody(ApiModel):
    decision: Literal["approve", "deny"]
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)] | None = None
    remember: Literal["session"] | None = None


class ApprovalOut(ApiModel):
    """A decision on a tool call: by whom (a username, or ``timeout``), when, why."""

    call_id: str
    tool_name: str
    decision: Literal["approve", "deny"]
    decided_by: str
    decided_at: datetime
    reason: str | None
    remember: Literal["session"] | None


class CallApprovalOut(ApiModel):
    """The approval story of one tool call in the history; ``decision`` None while it waits."""

    requested_at: datetime
    reason: str | None
    decision: Literal["approve", "deny"] | None
    decided_by: str | None
    decided_at: datetime | None
    decision_reason: str | None


class ToolCallOut(ApiModel):
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    output: str | None
    is_error: bool | None
    approval: CallApprovalOut | None = None
    duration_ms: int | None = None
    """How long the call ran; None for calls recorded before durations were kept."""


class MessageOut(ApiModel):
    seq: int
    id: str
    role: Literal["user", "assistant", "system"]
    content: list[dict[str, Any]]
    status: Literal["complete", "incomplete"]
    tool_calls: list[ToolCallOut]
    created_at: datetime
    compacted: bool
    usage: UsageOut | None = None
    """On the answer that ended a completed turn: what the whole turn used."""


class MemoryItemOut(ApiModel):
    id: str
    content: str
    created_at: datetime
    updated_at: datetime
    source_session_id: str | None


class Health(ApiModel):
    status: Literal["ok"]
