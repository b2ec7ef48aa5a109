"""The JSON Schema subset sent as strict tool input schemas and `output_config.format`."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.core.errors import UserError
from ferrule.providers.anthropic.codec import strict_schema
from tests.support.provtests import nested_arrays


def test_objects_are_closed_and_unsupported_keywords_move_to_the_description() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Order",
        "type": "object",
        "description": "An order.",
        "properties": {
            "id": {"type": "string", "format": "uuid", "title": "Id"},
            "note": {"type": "string", "format": "markdown", "maxLength": 200},
            "qty": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
            "parts": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "flag": {"type": "boolean", "default": True},
        },
        "required": ["id"],
        "additionalProperties": True,
    }
    assert strict_schema(schema) == {
        "type": "object",
        "description": "An order.",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "note": {"type": "string", "description": "{maxLength: 200, format: markdown}"},
            "qty": {"type": "integer", "description": "{minimum: 1, exclusiveMaximum: 100}"},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "{maxItems: 5}",
            },
            "parts": {"type": "array", "items": {"type": "string"}, "description": "{minItems: 2}"},
            "flag": {"type": "boolean", "description": "{default: true}"},
        },
        "additionalProperties": False,
        "required": ["id"],
    }
    assert schema["additionalProperties"] is True  # the input is not modified


def test_unions_references_enums_and_constants() -> None:
    schema = {
        "$defs": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "pet": {"$ref": "#/$defs/Pet", "description": "the pet"},
            "kind": {"enum": ["cat", "dog"]},
            "fixed": {"const": 3},
            "either": {"oneOf": [{"type": "string"}, {"type": "null"}]},
            "both": {"allOf": [{"$ref": "#/$defs/Pet"}]},
            "nullable": {"type": ["integer", "null"], "minimum": 0},
        },
    }
    out = strict_schema(schema)
    assert out["$defs"] == {
        "Pet": {"type": "object", "properties": {"name": {"type": "string"}}, "additionalProperties": False}
    }
    props = out["properties"]
    assert props["pet"] == {"$ref": "#/$defs/Pet", "description": "the pet"}
    assert props["kind"] == {"enum": ["cat", "dog"]}
    assert props["fixed"] == {"const": 3}
    assert props["either"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["both"] == {"allOf": [{"$ref": "#/$defs/Pet"}]}
    assert props["nullable"] == {
        "anyOf": [
            {"type": "integer", "description": "{minimum: 0}"},
            {"type": "null", "description": "{minimum: 0}"},
        ]
    }


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"description": "anything"}, "no type"),
        ({"type": "tuple"}, "unsupported type"),
        ({"type": ["string", "tuple"]}, "unsupported type"),
        ({"type": "object", "properties": []}, "non-object properties"),
        ([], "must be an object"),
    ],
)
def test_schemas_the_api_cannot_enforce_are_refused(schema: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        strict_schema(schema)


def test_nesting_at_the_limit_and_one_past_it() -> None:
    assert strict_schema(nested_arrays(64))["type"] == "array"
    with pytest.raises(UserError, match="deeper than 64"):
        strict_schema(nested_arrays(65))
