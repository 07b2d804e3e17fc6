"""The workbench's one error catalog: API code → HTTP status and message (English, zh-CN).

Exception tree of the server::

    Exception
     ├── AgentError        kernel failures, mapped by ``from_agent_error``
     └── ApiError(code)    everything a route refuses; rendered as the error envelope

Messages never carry stack traces, SQL or file paths: a response says what is wrong with the
request, the log line (with the same request id) says why.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, TypeVar

from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.redaction import redact

T = TypeVar("T")

logger = logging.getLogger(__name__)

Language = Literal["zh-CN", "en"]


class ApiCode(StrEnum):
    VALIDATION_INVALID_ARGUMENT = "VALIDATION_INVALID_ARGUMENT"
    VALIDATION_UNPROCESSABLE = "VALIDATION_UNPROCESSABLE"
    AUTH_UNAUTHENTICATED = "AUTH_UNAUTHENTICATED"
    AUTH_INVALID_CREDENTIALS = "AUTH_INVALID_CREDENTIALS"
    AUTH_USERNAME_TAKEN = "AUTH_USERNAME_TAKEN"
    AUTH_REGISTRATION_DISABLED = "AUTH_REGISTRATION_DISABLED"
    AUTH_RATE_LIMITED = "AUTH_RATE_LIMITED"
    AUTH_PASSWORD_REJECTED = "AUTH_PASSWORD_REJECTED"
    AUTH_BUSY = "AUTH_BUSY"
    AUTH_ACCOUNT_DISABLED = "AUTH_ACCOUNT_DISABLED"
    AUTH_INVITE_INVALID = "AUTH_INVITE_INVALID"
    AUTH_SSO_FAILED = "AUTH_SSO_FAILED"
    AUTH_PASSWORD_LOGIN_DISABLED = "AUTH_PASSWORD_LOGIN_DISABLED"
    ADMIN_OWN_ACCOUNT = "ADMIN_OWN_ACCOUNT"
    GROUP_NAME_TAKEN = "GROUP_NAME_TAKEN"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    SKILL_NAME_CONFLICT = "SKILL_NAME_CONFLICT"
    TURN_BUSY = "TURN_BUSY"
    APPROVAL_NOT_FOUND = "APPROVAL_NOT_FOUND"
    APPROVAL_ALREADY_DECIDED = "APPROVAL_ALREADY_DECIDED"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    USER_LIMIT_REACHED = "USER_LIMIT_REACHED"
    SERVER_AT_CAPACITY = "SERVER_AT_CAPACITY"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    CHAT_CONTEXT_LIMIT_REACHED = "CHAT_CONTEXT_LIMIT_REACHED"
    MODEL_ERROR = "MODEL_ERROR"
    SERVER_SHUTTING_DOWN = "SERVER_SHUTTING_DOWN"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    INTERNAL_ERROR = "INTERNAL_ERROR"


@dataclass(frozen=True, slots=True)
class _Entry:
    """``zh_about``/``en_about``: the message when a detail is given, which fills ``{detail}``;
    without them a detail follows the message after a colon. ``zh_wait``/``en_wait``: the
    message when the response says how long to wait (``Retry-After``), filling ``{seconds}``."""

    status: int
    zh: str
    en: str
    zh_about: str | None = None
    en_about: str | None = None
    zh_wait: str | None = None
    en_wait: str | None = None


@dataclass(frozen=True, slots=True)
class Localized:
    """A detail of a refusal in both languages; the response carries the client's."""

    en: str
    zh: str

    def text(self, language: Language) -> str:
        return self.en if language == "en" else self.zh


CATALOG: dict[str, _Entry] = {
    ApiCode.VALIDATION_INVALID_ARGUMENT: _Entry(400, "请求参数无效", "Invalid request argument"),
    ApiCode.VALIDATION_UNPROCESSABLE: _Entry(
        422, "请求无法处理", "The request cannot be processed"
    ),
    ApiCode.AUTH_UNAUTHENTICATED: _Entry(
        401, "未登录或登录已失效", "Not signed in, or the session token is no longer valid"
    ),
    ApiCode.AUTH_INVALID_CREDENTIALS: _Entry(401, "用户名或密码错误", "Wrong username or password"),
    ApiCode.AUTH_USERNAME_TAKEN: _Entry(409, "用户名已被占用", "This username is already taken"),
    ApiCode.AUTH_REGISTRATION_DISABLED: _Entry(
        403, "此服务器已关闭注册", "Registration is disabled on this server"
    ),
    ApiCode.AUTH_RATE_LIMITED: _Entry(
        429,
        "尝试次数过多，请稍后再试",
        "Too many attempts from here; try again later",
        zh_wait="尝试次数过多，请在 {seconds} 秒后再试",
        en_wait="Too many attempts from here; try again in {seconds} s",
    ),
    ApiCode.AUTH_PASSWORD_REJECTED: _Entry(
        400,
        "密码太常见或与用户名过于相近，请换一个",
        "This password is too common or too close to the username; choose another",
    ),
    ApiCode.AUTH_BUSY: _Entry(
        503, "登录请求过多，请稍后重试", "Too many sign-ins at once; try again in a moment"
    ),
    ApiCode.AUTH_ACCOUNT_DISABLED: _Entry(
        403,
        "此账号已被管理员停用",
        "This account has been disabled by an administrator",
    ),
    ApiCode.AUTH_INVITE_INVALID: _Entry(
        403,
        "此服务器仅凭邀请注册，该邀请链接无效、已使用或已过期，请向管理员索取新的链接",
        "Registration here is by invitation, and this invite link is unknown, used or "
        "expired; ask an administrator for a new one",
    ),
    ApiCode.AUTH_SSO_FAILED: _Entry(
        401,
        "单点登录失败，请重新登录",
        "Single sign-on failed; sign in again",
    ),
    ApiCode.AUTH_PASSWORD_LOGIN_DISABLED: _Entry(
        403,
        "此服务器仅支持单点登录",
        "This server signs in through single sign-on only",
    ),
    ApiCode.ADMIN_OWN_ACCOUNT: _Entry(
        409,
        "管理员不能在这里停用、降级或删除自己的账号，请让另一位管理员操作",
        "An administrator cannot disable, demote or delete their own account here; ask "
        "another administrator",
    ),
    ApiCode.GROUP_NAME_TAKEN: _Entry(409, "已存在同名用户组", "A group with this name exists"),
    ApiCode.FORBIDDEN: _Entry(403, "无权访问该资源", "You may not access this resource"),
    ApiCode.NOT_FOUND: _Entry(404, "资源不存在", "Not found"),
    ApiCode.SKILL_NAME_CONFLICT: _Entry(
        409, "已存在同名 Skill", "You already have a skill with this name"
    ),
    ApiCode.TURN_BUSY: _Entry(
        409, "该会话正在生成回答，请稍后再试", "A turn is already running in this session"
    ),
    ApiCode.APPROVAL_NOT_FOUND: _Entry(
        404, "没有等待审批的这个工具调用", "No tool call with this id asked for approval"
    ),
    ApiCode.APPROVAL_ALREADY_DECIDED: _Entry(
        409,
        "这个工具调用已有决定（他人决定、已超时或回合已结束）",
        "This tool call is already decided (by someone else, by the timeout, or the turn ended)",
    ),
    ApiCode.REQUEST_TIMEOUT: _Entry(
        408, "请求体发送超时", "The request body did not arrive in time"
    ),
    ApiCode.USER_LIMIT_REACHED: _Entry(
        429,
        "已达到你在此服务器上的使用上限",
        "You have reached one of your limits on this server",
    ),
    ApiCode.SERVER_AT_CAPACITY: _Entry(
        503, "服务器繁忙，请稍后重试", "The server is at capacity; try again shortly"
    ),
    ApiCode.PAYLOAD_TOO_LARGE: _Entry(413, "请求体过大", "The request body is too large"),
    ApiCode.CHAT_CONTEXT_LIMIT_REACHED: _Entry(
        400,
        "当前会话上下文已达到上限，请先压缩会话记忆或缩短消息后再发送。",
        "The conversation has reached the context limit; compact the session memory or "
        "shorten the message, then send again.",
        "当前会话上下文已达到上限（{detail}），请先压缩会话记忆或缩短消息后再发送。",
        "The conversation has reached the context limit ({detail}); compact the session "
        "memory or shorten the message, then send again.",
    ),
    ApiCode.MODEL_ERROR: _Entry(
        502,
        "模型调用失败，请稍后重试或换用其他模型；如果一直失败，请把请求 ID 告诉管理员",
        "The model call failed; try again shortly or switch to another model, and if it keeps "
        "failing, give the server's operator the request id",
        "模型调用失败（{detail}），请稍后重试或换用其他模型；如果一直失败，请把请求 ID 告诉管理员",
        "The model call failed ({detail}); try again shortly or switch to another model, and "
        "if it keeps failing, give the server's operator the request id",
    ),
    ApiCode.SERVER_SHUTTING_DOWN: _Entry(503, "服务器正在关闭", "The server is shutting down"),
    ApiCode.SERVICE_UNAVAILABLE: _Entry(
        503, "数据库暂时不可用，请稍后重试", "The database is not answering; try again shortly"
    ),
    ApiCode.INTERNAL_ERROR: _Entry(500, "服务器内部错误", "Internal server error"),
}


def language_of(accept_language: str | None) -> Language:
    """The client's most preferred of English and Chinese (``Accept-Language`` with its
    q-values, ties in the order given); English when it names neither."""
    ranked: list[tuple[float, int, Language]] = []
    for position, item in enumerate((accept_language or "").split(",")):
        tag, _, params = item.strip().lower().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        primary = tag.strip().split("-")[0]
        if quality > 0 and primary in ("en", "zh"):
            ranked.append((-quality, position, "en" if primary == "en" else "zh-CN"))
    return min(ranked)[2] if ranked else "en"


def catalog_message(
    code: str,
    language: Language,
    detail: str | Localized | None = None,
    retry_after_s: int | None = None,
) -> str:
    entry = CATALOG.get(code)
    text = detail.text(language) if isinstance(detail, Localized) else detail
    if entry is None:
        return text or code
    english = language == "en"
    base = entry.en if english else entry.zh
    wait = entry.en_wait if english else entry.zh_wait
    if retry_after_s is not None and wait is not None:
        base = wait.format(seconds=retry_after_s)
    if not text:
        return base
    about = entry.en_about if english else entry.zh_about
    if about is not None:
        return about.format(detail=text)
    return f"{base}: {text}" if english else f"{base}：{text}"


class ApiError(Exception):
    """A refusal with a catalog code; ``detail`` names the field or rule (already localized)."""

    def __init__(
        self,
        code: ApiCode,
        detail: str | Localized | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        shown = detail.en if isinstance(detail, Localized) else detail
        super().__init__(f"{code}: {shown or ''}")
        self.code = code
        self.detail = detail
        self.headers = headers or {}

    @property
    def status(self) -> int:
        return CATALOG[self.code].status

    @property
    def retry_after_s(self) -> int | None:
        """The wait the response announces (``Retry-After`` in seconds), if any."""
        value = self.headers.get("Retry-After")
        return int(value) if value is not None and value.isdigit() else None

    def message(self, language: Language) -> str:
        return catalog_message(self.code, language, self.detail, self.retry_after_s)


# Kernel refusals a client can cause; anything else is the server's or the model's fault.
_KERNEL_TO_API: dict[ErrorCode, ApiCode] = {
    ErrorCode.INPUT_VALIDATION: ApiCode.VALIDATION_INVALID_ARGUMENT,
    ErrorCode.SKILL_NOT_FOUND: ApiCode.VALIDATION_INVALID_ARGUMENT,
    ErrorCode.MODEL_NOT_SUPPORTED: ApiCode.VALIDATION_INVALID_ARGUMENT,
    ErrorCode.TURN_BUSY: ApiCode.TURN_BUSY,
    ErrorCode.SESSION_BUSY: ApiCode.TURN_BUSY,
    ErrorCode.CHAT_CONTEXT_LIMIT_REACHED: ApiCode.CHAT_CONTEXT_LIMIT_REACHED,
    ErrorCode.PROVIDER_ERROR: ApiCode.MODEL_ERROR,
    ErrorCode.COMPACT_ERROR: ApiCode.MODEL_ERROR,
    ErrorCode.AGENT_SHUTDOWN: ApiCode.SERVER_SHUTTING_DOWN,
    ErrorCode.SESSION_NOT_FOUND: ApiCode.NOT_FOUND,
    ErrorCode.APPROVAL_NOT_FOUND: ApiCode.APPROVAL_NOT_FOUND,
    ErrorCode.APPROVAL_ALREADY_DECIDED: ApiCode.APPROVAL_ALREADY_DECIDED,
    ErrorCode.STORAGE_ERROR: ApiCode.SERVICE_UNAVAILABLE,
}


def from_agent_error(error: AgentError, model_id: str | None = None) -> ApiError:
    """A model's failure names the model (``model_id``) and no more: the provider's text (its
    URL, an echoed key) is logged under the request id. A client's refusal keeps its reason,
    credential-looking parts redacted."""
    code = _KERNEL_TO_API.get(error.code, ApiCode.INTERNAL_ERROR)
    if code is ApiCode.SERVICE_UNAVAILABLE:  # the details (SQL, paths) stay in the log
        return ApiError(code, headers={"Retry-After": "1"})
    if code is ApiCode.INTERNAL_ERROR:
        return ApiError(code)
    if code is ApiCode.MODEL_ERROR:
        logger.warning("model %s failed: %s: %s", model_id, error.code, error.message)
        return ApiError(code, model_id)
    if code is ApiCode.CHAT_CONTEXT_LIMIT_REACHED:
        return ApiError(code, _context_use(error.message))
    if error.code is ErrorCode.SESSION_BUSY:  # the kernel's message names the other process
        logger.info("%s", error.message)
        return ApiError(code, _BUSY_ELSEWHERE)
    return ApiError(code, redact(error.message))


# The kernel's hard-limit refusal: "the request would use N of M tokens (limit P%); …"
_CONTEXT_USE = re.compile(r"would use (\d+) of (\d+) tokens \(limit (\d+)%\)")


def _context_use(message: str) -> Localized | None:
    """The numbers of a hard-limit refusal in either language; the catalog's sentence says
    the rest (the kernel's own advice would repeat it)."""
    found = _CONTEXT_USE.search(message)
    if found is None:
        return None
    used, window, limit = (int(n) for n in found.groups())
    percent = used * 100 // window if window else 0
    return Localized(
        f"{used:,} of {window:,} tokens, {percent} %; the limit is {limit} %",
        f"{used:,} / {window:,} 个 token，{percent}%；上限 {limit}%",
    )


async def agent_call(call: Awaitable[T], model_id: str | None = None) -> T:
    """Kernel refusals become API errors with the catalog's code; ``model_id`` is the model a
    failed model call is reported for."""
    try:
        return await call
    except AgentError as err:
        raise from_agent_error(err, model_id) from err


def busy_elsewhere(ledger_id: str, holder: str) -> ApiError:
    """``TURN_BUSY`` for a session another server process holds: which process (host, pid)
    goes to the log, never to the client."""
    logger.info("session %s is held by %s", ledger_id, holder)
    return ApiError(ApiCode.TURN_BUSY, _BUSY_ELSEWHERE)


_BUSY_ELSEWHERE = Localized("busy on another server process", "正在另一个服务器进程上运行")


def check_user_limit(used: int, limit: int, what: Localized, setting: str) -> None:
    """``USER_LIMIT_REACHED`` when one more of ``what`` would pass the user's ``[server]``
    ``setting``; the message names only the user's own use."""
    if used >= limit:
        raise ApiError(
            ApiCode.USER_LIMIT_REACHED,
            Localized(
                f"you have {used} of your {limit} {what.en} ({setting})",
                f"你已有 {used} 个{what.zh}，上限 {limit}（{setting}）",
            ),
        )
