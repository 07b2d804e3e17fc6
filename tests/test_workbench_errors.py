"""The error catalog: kernel failures become API codes without leaking their details; a
provider's failure reaches the user as the catalog's message and the log, redacted."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fakes.openai_server import openai_error
from server_kit import MODEL, Workbench
from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.errors import (
    ApiCode,
    ApiError,
    Localized,
    catalog_message,
    from_agent_error,
    language_of,
)
from youyou.workbench.redaction import redact


def test_a_storage_failure_is_503_with_retry_after_and_no_sql() -> None:
    error = from_agent_error(
        AgentError(ErrorCode.STORAGE_ERROR, "OperationalError: database is locked [SQL: UPDATE x]")
    )
    assert error.code is ApiCode.SERVICE_UNAVAILABLE
    assert error.status == 503
    assert error.detail is None
    assert error.headers == {"Retry-After": "1"}


def test_an_unexpected_kernel_failure_is_500_without_its_message() -> None:
    error = from_agent_error(AgentError(ErrorCode.INTERNAL_PANIC, "KeyError at /srv/app.py:12"))
    assert (error.code, error.status, error.detail) == (ApiCode.INTERNAL_ERROR, 500, None)


def test_client_refusals_keep_their_reason() -> None:
    error = from_agent_error(AgentError(ErrorCode.SKILL_NOT_FOUND, "skill /nope is not registered"))
    assert (error.code, error.status) == (ApiCode.VALIDATION_INVALID_ARGUMENT, 400)
    assert error.detail == "skill /nope is not registered"


def test_messages_are_english_unless_chinese_is_preferred() -> None:
    assert language_of(None) == "en" and language_of("") == "en"
    assert language_of("fr-FR,de;q=0.9") == "en"
    assert language_of("en-US,en;q=0.9") == "en"
    assert language_of("zh-CN,en;q=0.8") == "zh-CN"
    assert language_of("zh") == "zh-CN" and language_of("zh-TW") == "zh-CN"
    assert language_of("fr, zh;q=0.5, en;q=0.4") == "zh-CN"
    assert language_of("en;q=0.3, zh-CN;q=0.9") == "zh-CN"
    assert language_of("zh;q=0, en;q=0.1") == "en"
    assert language_of("zh;q=bogus, en") == "en"
    assert catalog_message(ApiCode.NOT_FOUND, "en") == "Not found"
    assert catalog_message(ApiCode.NOT_FOUND, "zh-CN", "x") == "资源不存在：x"


# -- over real HTTP: a provider's failure reaches the user as the catalog's message -------------

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"
PROVIDER_TEXT = f"Incorrect API key provided: Bearer {SECRET}."


def test_a_provider_failure_shows_the_catalog_message_and_logs_the_details_redacted(
    start_workbench: Callable[..., Workbench],
) -> None:
    wb = start_workbench()
    api = wb.user("alice")
    sid = api.new_session()["id"]
    assert api.send(sid, "hello")[-1].event == "turn_complete"

    wb.model.enqueue(openai_error(401, PROVIDER_TEXT, code="invalid_api_key"))
    headers = {"X-Request-ID": "rid-model-401", "Accept-Language": "en"}
    [frame] = [f for f in api.send(sid, "again", headers=headers) if f.event == "error"]
    assert frame.data["code"] == "MODEL_ERROR"
    message = frame.data["message"]
    assert message.startswith(f"The model call failed ({MODEL}); try again")
    for leaked in ("127.0.0.1", "/v1", "sk-live", "Incorrect API key", "401"):
        assert leaked not in message

    wb.model.enqueue(openai_error(401, PROVIDER_TEXT, code="invalid_api_key"))
    compact = api.error(
        "POST", f"/chat/sessions/{sid}/memory:compact", 502, headers={"Accept-Language": "zh-CN"}
    )
    assert compact["code"] == "MODEL_ERROR"
    assert compact["message"].startswith(f"模型调用失败（{MODEL}）")
    assert "127.0.0.1" not in compact["message"] and "sk-live" not in compact["message"]

    log = wb.server.log()
    [line] = [line for line in log.splitlines() if "[rid-model-401]" in line and "failed" in line]
    assert f"model {MODEL} failed" in line and "HTTP 401: Incorrect API key" in line
    assert line.endswith("Incorrect API key provided: Bearer [redacted].")
    assert SECRET not in log and SECRET[8:] not in log


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (f"HTTP 401: {PROVIDER_TEXT}", "HTTP 401: Incorrect API key provided: Bearer [redacted]."),
        (f"key {SECRET} rejected", "key sk-[redacted] rejected"),
        ("postgresql://bob:hunter2@db:5432/x", "postgresql://bob:[redacted]@db:5432/x"),
        ('{"api_key": "abc123", "x": 1}', '{"api_key": "[redacted]", "x": 1}'),
        ("url?password=pw1&user=bob", "url?password=[redacted]&user=bob"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: [redacted]"),
        ("Token expired; basic auth failed", "Token expired; basic auth failed"),
    ],
)
def test_credentials_are_redacted_and_the_rest_kept(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_a_client_refusal_keeps_its_reason_without_credentials() -> None:
    error = from_agent_error(AgentError(ErrorCode.INPUT_VALIDATION, f"bad key {SECRET}"))
    assert error.detail == "bad key sk-[redacted]"


def test_details_and_announced_waits_are_in_the_asked_language() -> None:
    busy = ApiError(ApiCode.TURN_BUSY, Localized("busy elsewhere", "在别处运行"))
    assert busy.message("en") == "A turn is already running in this session: busy elsewhere"
    assert busy.message("zh-CN") == "该会话正在生成回答，请稍后再试：在别处运行"
    limited = ApiError(ApiCode.AUTH_RATE_LIMITED, headers={"Retry-After": "42"})
    assert limited.retry_after_s == 42
    assert limited.message("en") == "Too many attempts from here; try again in 42 s"
    assert limited.message("zh-CN") == "尝试次数过多，请在 42 秒后再试"
    # a wait the catalog's wording does not mention is left to the header
    down = ApiError(ApiCode.SERVICE_UNAVAILABLE, headers={"Retry-After": "1"})
    assert down.message("en") == "The database is not answering; try again shortly"


def test_the_context_limit_refusal_says_its_numbers_once_in_either_language() -> None:
    kernel = AgentError(
        ErrorCode.CHAT_CONTEXT_LIMIT_REACHED,
        "the request would use 4321 of 4000 tokens (limit 95%); compact or shorten the message",
    )
    error = from_agent_error(kernel)
    assert error.message("en") == (
        "The conversation has reached the context limit (4,321 of 4,000 tokens, 108 %; the "
        "limit is 95 %); compact the session memory or shorten the message, then send again."
    )
    assert error.message("zh-CN") == (
        "当前会话上下文已达到上限（4,321 / 4,000 个 token，108%；上限 95%），"
        "请先压缩会话记忆或缩短消息后再发送。"
    )
    unknown = from_agent_error(AgentError(ErrorCode.CHAT_CONTEXT_LIMIT_REACHED, "too big"))
    assert unknown.message("en").endswith("shorten the message, then send again.")
    assert "too big" not in unknown.message("en")
