"""Secrets stay in the environment: the file names variables, and a value that looks like a
key is refused without being repeated (configuration errors end up in terminals and CI logs)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import Field, field_validator

from youyou.config.base import Section
from youyou.domain.config import config_error

# Headers that carry credentials whatever their value looks like.
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"}
)
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_PREFIXES = ("sk-", "sk_", "pk-", "rk-", "ghp_", "gho_", "github_pat_", "xox", "AIza", "hf_")
_KEY_SCHEMES = ("bearer ", "basic ", "token ")


def looks_like_secret(value: str) -> bool:
    """An API key, a token or a credential header value rather than a name or plain text:
    a vendor key prefix, an auth scheme, or a long random-looking word."""
    text = value.strip()
    if text.startswith(_KEY_PREFIXES) or text.lower().startswith(_KEY_SCHEMES):
        return True
    random_looking = (
        any(c.islower() for c in text)
        and any(c.isupper() for c in text)
        and any(c.isdigit() for c in text)
    )
    return len(text) >= 20 and " " not in text and random_looking


def check_variable_name(name: str, where: str = "") -> str:
    """``name`` if it can name an environment variable; otherwise an error that does not
    repeat it, since what was written there is most likely the secret itself."""
    if looks_like_secret(name) or _VARIABLE_NAME.fullmatch(name) is None:
        raise ValueError(
            f"{where}this looks like a key, not a variable name (the value is not shown): "
            "put the secret in an environment variable and write that variable's name here"
        )
    return name


class SecretsFromEnvironment(Section):
    """Extra HTTP headers: plain values in ``headers``, secret ones read from the environment
    variables named in ``headers_env``. A secret written into the file is refused, and never
    repeated in the error (configuration errors end up in terminals and CI logs)."""

    headers: dict[str, str] = Field(default_factory=dict)
    headers_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if name.lower() in SECRET_HEADERS or looks_like_secret(value):
                raise ValueError(
                    f"{name}: secrets are read from the environment only; set "
                    f'headers_env = {{ "{name}" = "NAME_OF_THE_VARIABLE" }} instead '
                    "(the value is not shown)"
                )
        return headers

    @field_validator("headers_env")
    @classmethod
    def _variable_names(cls, names: dict[str, str]) -> dict[str, str]:
        for header, variable in names.items():
            check_variable_name(variable, f"{header}: ")
        return names

    def resolved_headers(self, environ: Mapping[str, str], where: str) -> dict[str, str]:
        """``headers`` plus each ``headers_env`` header read from its variable (which must be
        set); ``where`` names this entry in the error, e.g. ``providers[0]``."""
        resolved = dict(self.headers)
        for header, variable in self.headers_env.items():
            value = environ.get(variable)
            if not value:
                raise config_error(
                    f"{where}.headers_env.{header}: environment variable {variable} is not set"
                )
            resolved[header] = value
        return resolved
