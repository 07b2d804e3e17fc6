"""Tool argument schemas: compiled once per schema, invalid schemas refused, readable problems."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from youyou import AgentError, ErrorCode, ToolDescriptor
from youyou.domain.tool_schema import MAX_REPORTED_PROBLEMS, argument_problems, compiled_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer"},
        "hosts": {
            "type": "array",
            "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
        },
    },
    "required": ["limit"],
}


def test_equal_schemas_share_one_compiled_validator() -> None:
    reordered = dict(reversed(list(copy.deepcopy(SCHEMA).items())))
    assert compiled_schema("a", SCHEMA) is compiled_schema("b", reordered)
    assert compiled_schema("a", SCHEMA) is not compiled_schema("a", {"type": "object"})


def test_the_draft_follows_dollar_schema_and_defaults_to_2020_12() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    assert isinstance(compiled_schema("t", draft7), Draft7Validator)
    assert isinstance(compiled_schema("t", {"type": "object"}), Draft202012Validator)


def test_problems_name_the_argument_by_its_path() -> None:
    validator = compiled_schema("t", SCHEMA)
    assert argument_problems(validator, {"limit": 5, "hosts": [{"port": 1}]}) == []
    assert argument_problems(
        validator, {"limit": "ten", "hosts": [{"port": 1}, {"port": "x"}]}
    ) == [
        "argument 'limit': 'ten' is not of type 'integer'",
        "argument 'hosts[1].port': 'x' is not of type 'integer'",
    ]
    assert argument_problems(validator, {}) == ["arguments: 'limit' is a required property"]


def test_a_flood_of_problems_is_cut_short() -> None:
    validator = compiled_schema("t", {"type": "array", "items": {"type": "integer"}})
    problems = argument_problems(validator, ["x"] * 50)  # type: ignore[arg-type]
    assert len(problems) == MAX_REPORTED_PROBLEMS + 1
    assert problems[-1] == "(more problems not shown)"


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "objekt"}, "at 'type': 'objekt' is not valid under any of the given schemas"),
        ({"type": "object", "required": "limit"}, "at 'required': 'limit' is not of type 'array'"),
        ({"type": "object", "default": {1, 2}}, "it is not JSON"),
    ],
)
def test_an_invalid_schema_is_invalid_config_naming_the_tool(
    schema: dict[str, Any], problem: str
) -> None:
    with pytest.raises(AgentError) as caught:
        ToolDescriptor(name="search", description="d", parameters_schema=schema)
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert caught.value.message.startswith(
        f"tool 'search' has an invalid parameters_schema: {problem}"
    )
