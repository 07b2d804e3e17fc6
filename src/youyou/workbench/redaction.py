"""Credentials out of text that leaves the process: log lines and error details.

A provider's error text may echo the request (a gateway that repeats its headers), and a URL
may carry a password. Whatever looks like a credential is replaced by ``[redacted]`` before a
line is written or a detail is sent; the rest of the text stays, so the log still says what
failed.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

# Each pattern's group 1 stays; what follows it is the credential.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    # an Authorization header, whatever its scheme
    re.compile(r"""(authorization["']?\s*[:=]\s*["']?)[^"'\n,;}]+""", re.IGNORECASE),
    # a bearer token anywhere
    re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/=-]{3,}[A-Za-z0-9_~+/=-]", re.IGNORECASE),
    # provider keys: OpenAI "sk-…", "sk-proj-…", Anthropic "sk-ant-…"
    re.compile(r"\b(sk-)[A-Za-z0-9_-]{4,}"),
    # key=value, "key": "value", key: value for names that hold secrets
    re.compile(
        r"""((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)"""
        r"""["']?\s*[:=]\s*["']?)[^\s"'&,;}]+""",
        re.IGNORECASE,
    ),
    # a password in a URL: scheme://user:password@host
    re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?=@)", re.IGNORECASE),
)


def redact(text: str) -> str:
    """``text`` with every credential-looking part replaced by ``[redacted]``."""
    for pattern in _PATTERNS:
        text = pattern.sub(rf"\1{REDACTED}", text)
    return text


class RedactSecrets(logging.Filter):
    """A handler filter: the record's message and traceback are redacted once, before any
    formatter sees them (the traceback is kept as ``exc_text``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None
        return True
