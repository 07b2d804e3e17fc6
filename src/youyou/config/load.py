"""Reading ``youyou.toml``: the one resolve step from a file, the environment and the
command line's server options to validated ``Settings``."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from youyou.config.providers import PROVIDER_TYPES, ProviderType
from youyou.config.schema import Settings
from youyou.domain.config import config_error, describe_problem

CONFIG_ENV = "YOUYOU_CONFIG"
DATABASE_URL_ENV = "YOUYOU_DATABASE_URL"
MAX_CONFIG_BYTES = 1024 * 1024


def _as_written(error: ErrorDetails) -> ErrorDetails:
    """A ``[[providers]]`` problem named as the file spells it: the path without the type that
    picked the entry's model, and a key of another type saying which types have it."""
    loc = error["loc"]
    if len(loc) < 2 or loc[0] != "providers" or not isinstance(loc[1], int):
        return error
    fixed = error.copy()
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        fixed["loc"] = (*loc[:2], "type")
        fixed["msg"] = "must be one of " + ", ".join(repr(t.value) for t in ProviderType)
        return fixed
    if len(loc) < 3 or loc[2] not in set(ProviderType):
        return error
    fixed["loc"] = key = (*loc[:2], *loc[3:])
    if error["type"] == "extra_forbidden" and len(key) == 3:
        owners = [t for t, model in PROVIDER_TYPES.items() if key[2] in model.model_fields]
        if owners:
            fixed["msg"] = "applies only to type = " + " or ".join(repr(t.value) for t in owners)
    if key[2:] == ("models",) and error["type"] in ("missing", "too_short"):
        fixed["msg"] = "at least one [[providers.models]] entry is required"
    return fixed


def _only_for_its_entries(error: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A list "too short" only because its entries failed on their own: pydantic counts the
    valid entries alone, so the entries' own problems are the ones to report."""
    loc = error["loc"]
    return error["type"] == "too_short" and any(
        len(other["loc"]) > len(loc) and other["loc"][: len(loc)] == loc for other in errors
    )


def _read_file(path: Path) -> dict[str, Any]:
    """Parse the file; every way it can be unusable (missing, a directory, unreadable, binary,
    endless like ``/dev/zero``) is INVALID_CONFIG naming it."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise config_error(f"{path} is larger than 1 MiB: is it really youyou.toml?")
        return tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError as exc:
        raise config_error(f"configuration file not found: {path}") from exc
    except IsADirectoryError as exc:
        raise config_error(f"{path} is a directory, not a configuration file") from exc
    except OSError as exc:
        raise config_error(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise config_error(
            f"{path} is not UTF-8 text (byte {exc.start}): is it really youyou.toml?"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise config_error(f"{path} is not valid TOML: {exc}") from exc


def parse_settings(data: Mapping[str, Any], *, source: str = "configuration") -> Settings:
    """Validate already-parsed TOML data; errors name each offending key path."""
    try:
        return Settings.model_validate(dict(data))
    except ValidationError as exc:
        errors = exc.errors()
        problems = [
            describe_problem(_as_written(error))
            for error in errors
            if not _only_for_its_entries(error, errors)
        ]
        # Not chained: the validation error repeats the input values, secrets included.
        raise config_error(f"invalid {source}: " + "; ".join(problems)) from None


@dataclass(frozen=True, slots=True)
class ServerOverrides:
    """``[server]`` keys given on the command line (``youyou serve --host/--port/--workers``);
    None keeps the file's value."""

    host: str | None = None
    port: int | None = None
    workers: int | None = None

    def values(self) -> dict[str, Any]:
        """The keys actually given, as ``[server]`` spells them."""
        return {key: value for key, value in asdict(self).items() if value is not None}


def load_settings(
    path: str | Path | None = None,
    *,
    server: ServerOverrides | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The one resolve step: the TOML file (``path`` or ``$YOUYOU_CONFIG``, else none), then
    ``$YOUYOU_DATABASE_URL`` over ``[database].url``, then the command line's ``server``
    options over ``[server]``. Everything is validated together, so an override is checked
    like the file's value and a value derived from it (registration open only on a loopback
    address) follows the override."""
    env = os.environ if environ is None else environ
    chosen = path or env.get(CONFIG_ENV) or None
    data: dict[str, Any] = _read_file(Path(chosen)) if chosen else {}
    if database_url := env.get(DATABASE_URL_ENV):
        _override(data, "database", {"url": database_url})
    if server is not None:
        _override(data, "server", server.values())
    return parse_settings(data, source=str(chosen) if chosen else "configuration")


def _override(data: dict[str, Any], section: str, values: dict[str, Any]) -> None:
    """``values`` over the keys of table ``section``; a ``section`` that is not a table is
    left for validation to report."""
    table = data.get(section, {})
    if values and isinstance(table, dict):
        data[section] = {**table, **values}
