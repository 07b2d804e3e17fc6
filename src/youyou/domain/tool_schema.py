"""Tool arguments checked against the tool's JSON schema (docs/architecture.md, 'Tool dispatch').

Checking a schema costs far more than validating one call against it, and every call is
validated, so the compiled validator is cached per schema (keyed by its canonical JSON, so
equal schemas share one whatever their key order).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

# Enough for every registered tool plus per-turn tools; past it the oldest entry is dropped.
_CACHE_SIZE = 512
# A model that sends a long array of wrong items needs the first few reasons, not all of them.
MAX_REPORTED_PROBLEMS = 10

_compiled: dict[str, Validator] = {}


def compiled_schema(tool_name: str, schema: Mapping[str, Any]) -> Validator:
    """The validator of ``schema`` (``$schema`` picks the draft, else 2020-12), cached.

    An invalid schema is INVALID_CONFIG naming the tool and the problem.
    """
    try:
        key = json.dumps(schema, sort_keys=True, allow_nan=False)
        validator = _compiled.get(key)
        if validator is None:
            validator = _compile(tool_name, copy.deepcopy(dict(schema)))
            if len(_compiled) >= _CACHE_SIZE:
                del _compiled[next(iter(_compiled))]
            _compiled[key] = validator
        return validator
    except (TypeError, ValueError) as exc:
        problem = f"it is not JSON ({exc})"
    raise _invalid_schema(tool_name, problem)


def _compile(tool_name: str, schema: dict[str, Any]) -> Validator:
    """Compiled from the schema as written, so problems come in the author's order.

    jsonschema (~0.04 s to import) is loaded here, when the first schema is checked.
    """
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for

    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        problem = f"{_where(err.absolute_path, 'at')}{err.message}"
    else:
        validator: Validator = cls(schema)
        return validator
    raise _invalid_schema(tool_name, problem)


def _invalid_schema(tool_name: str, problem: str) -> AgentError:
    return AgentError(
        ErrorCode.INVALID_CONFIG,
        f"tool {tool_name!r} has an invalid parameters_schema: {problem}",
        source=ErrorSource.TOOL,
    )


def argument_problems(validator: Validator, arguments: Mapping[str, Any]) -> list[str]:
    """One line per violation, naming the argument: "argument 'limit': 'ten' is not of ..."."""
    problems: list[str] = []
    for error in validator.iter_errors(arguments):
        if len(problems) == MAX_REPORTED_PROBLEMS:
            problems.append("(more problems not shown)")
            break
        problems.append(_describe(error))
    return problems


def _describe(error: ValidationError) -> str:
    return f"{_where(error.absolute_path, 'argument') or 'arguments: '}{error.message}"


def _where(path: Iterable[str | int], label: str) -> str:
    """``label 'a.b[0]': `` for a path inside the document, nothing for its root."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return f"{label} {text!r}: " if text else ""
