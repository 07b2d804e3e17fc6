"""What every configuration section shares: frozen, and a key it does not have is an error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A table of ``youyou.toml``: immutable once read; an unknown key is refused, so a typo
    is an error instead of a silently ignored setting."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def check_http_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL with a host: without a scheme the SDKs take
    ``localhost:8080/v1`` for a relative path and every request fails far from here."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "must be an absolute http:// or https:// URL with a host, e.g. "
            '"http://127.0.0.1:8080/v1"'
        )
    return url


def refuse_key(table: Any, key: str, message: str) -> Any:
    """``table`` (a section's raw keys, before validation) unless it holds ``key``, a key that
    must not be there (a secret written inline, a key that moved): then ``message`` says why."""
    if isinstance(table, Mapping) and key in table:
        raise ValueError(message)
    return table
