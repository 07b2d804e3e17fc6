"""The error catalog: kernel failures become API codes without leaking their details."""

from __future__ import annotations

from youyou.domain.errors import AgentError, ErrorCode
from youyou.workbench.errors import ApiCode, catalog_message, from_agent_error, language_of


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


def test_messages_are_chinese_unless_english_comes_first() -> None:
    assert language_of(None) == "zh-CN"
    assert language_of("en-US,en;q=0.9") == "en"
    assert language_of("zh-CN,en;q=0.8") == "zh-CN"
    assert catalog_message(ApiCode.NOT_FOUND, "en") == "Not found"
    assert catalog_message(ApiCode.NOT_FOUND, "zh-CN", "x") == "资源不存在：x"
