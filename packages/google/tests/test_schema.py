"""The JSON Schema → Gemini dialect transforms (`_schema.py`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ferrule.core.errors import UserError
from ferrule.providers.google._schema import MAX_SCHEMA_DEPTH
from ferrule.providers.google._schema import MAX_SCHEMA_NODES
from ferrule.providers.google.codec import to_json_schema
from ferrule.providers.google.codec import to_openapi_schema
from tests.support.provtests import nested_arrays

PYDANTIC_NESTED: dict[str, Any] = {
    "$defs": {
        "Address": {
            "properties": {
                "street": {"type": "string"},
                "zip": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["street"],
            "title": "Address",
            "type": "object",
        }
    },
    "additionalProperties": False,
    "properties": {
        "address": {"$ref": "#/$defs/Address", "description": "Where they live."},
        "kind": {"const": "person"},
        "tags": {"items": {"type": "string"}, "type": "array", "uniqueItems": True},
        "coordinate": {
            "maxItems": 2,
            "minItems": 2,
            "prefixItems": [{"type": "number"}, {"type": "number"}],
            "type": "array",
        },
        "metadata": {"additionalProperties": {"type": "string"}, "type": "object"},
        "level": {"enum": [1, 2, 3], "type": "integer", "description": "Level."},
        "when": {"format": "date-time", "type": "string"},
        "homepage": {"format": "uri", "minLength": 1, "type": "string"},
        "score": {"exclusiveMinimum": 0, "maximum": 10, "type": "number"},
    },
    "required": ["address", "kind"],
    "title": "Person",
    "type": "object",
}


def test_openapi_rewrites_pydantic_schema() -> None:
    before = copy.deepcopy(PYDANTIC_NESTED)
    out = to_openapi_schema(PYDANTIC_NESTED)
    assert before == PYDANTIC_NESTED  # the input is never modified
    assert out == {
        "type": "OBJECT",
        "title": "Person",
        "properties": {
            "address": {
                "type": "OBJECT",
                "title": "Address",
                "description": "Where they live.",
                "properties": {"street": {"type": "STRING"}, "zip": {"type": "STRING", "nullable": True}},
                "propertyOrdering": ["street", "zip"],
                "required": ["street"],
            },
            "kind": {"enum": ["person"], "type": "STRING"},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
            "coordinate": {"type": "ARRAY", "minItems": 2, "maxItems": 2, "items": {"type": "NUMBER"}},
            "metadata": {"type": "OBJECT"},
            "level": {"type": "INTEGER", "description": "Level. One of: 1, 2, 3."},
            "when": {"type": "STRING", "format": "date-time"},
            "homepage": {"type": "STRING", "minLength": 1},
            "score": {"type": "NUMBER", "maximum": 10},
        },
        "propertyOrdering": [
            "address",
            "kind",
            "tags",
            "coordinate",
            "metadata",
            "level",
            "when",
            "homepage",
            "score",
        ],
        "required": ["address", "kind"],
    }


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["string", "null"]}, {"type": "STRING", "nullable": True}),
        ({"type": "null"}, {"nullable": True}),
        (
            {"oneOf": [{"type": "integer"}, {"type": "string"}]},
            {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
        ),
        (
            {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}], "description": "x"},
            {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}], "description": "x", "nullable": True},
        ),
        ({"type": ["integer", "boolean"]}, {"anyOf": [{"type": "INTEGER"}, {"type": "BOOLEAN"}]}),
        ({"allOf": [{"type": "string"}], "description": "d"}, {"type": "STRING", "description": "d"}),
        ({"enum": ["a", None]}, {"enum": ["a"], "type": "STRING", "nullable": True}),
        ({"const": 3, "type": "integer"}, {"type": "INTEGER", "description": "One of: 3."}),
        ({"type": "string", "examples": ["x", "y"]}, {"type": "STRING", "example": "x"}),
        ({"type": "number", "format": "double"}, {"type": "NUMBER", "format": "double"}),
        ({"type": "integer", "format": "int32", "multipleOf": 2}, {"type": "INTEGER", "format": "int32"}),
        (
            {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
            {"type": "ARRAY", "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}, "maxItems": 2},
        ),
        (
            {"properties": {"a": {}}, "required": ["a", "ghost"]},
            {"type": "OBJECT", "properties": {"a": {}}, "required": ["a"]},
        ),
        (
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "boolean", "not": {}},
            {"type": "BOOLEAN"},
        ),
    ],
)
def test_openapi_keyword_rewrites(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert to_openapi_schema(schema) == expected


def test_openapi_refuses_recursion_and_bad_refs() -> None:
    recursive = {
        "$defs": {
            "Node": {
                "properties": {"children": {"items": {"$ref": "#/$defs/Node"}, "type": "array"}},
                "type": "object",
            }
        },
        "$ref": "#/$defs/Node",
    }
    with pytest.raises(UserError, match=r"refers to itself.*json_schema"):
        to_openapi_schema(recursive)
    with pytest.raises(UserError, match="does not point into"):
        to_openapi_schema({"$ref": "#/$defs/Missing"})
    with pytest.raises(UserError, match="allOf with several"):
        to_openapi_schema({"allOf": [{"type": "string"}, {"minLength": 1}]})
    with pytest.raises(UserError, match="unknown type"):
        to_openapi_schema({"type": "decimal"})


def test_openapi_reused_definition_is_inlined_twice() -> None:
    schema = {
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {"a": {"$ref": "#/$defs/P"}, "b": {"$ref": "#/$defs/P"}},
        "type": "object",
    }
    out = to_openapi_schema(schema)
    assert (
        out["properties"]["a"]
        == out["properties"]["b"]
        == {"type": "OBJECT", "properties": {"x": {"type": "NUMBER"}}}
    )


def test_depth_limit_exactly_and_one_past() -> None:
    # Depth counts schema objects below the root: `depth` wrappers nest the leaf at depth `depth`.
    to_openapi_schema(nested_arrays(MAX_SCHEMA_DEPTH))
    with pytest.raises(UserError, match="deeper than"):
        to_openapi_schema(nested_arrays(MAX_SCHEMA_DEPTH + 1))


def test_node_limit_exactly_and_one_past() -> None:
    def wide(count: int) -> dict[str, Any]:
        # The root plus `count - 1` property schemas.
        return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(count - 1)}}

    to_openapi_schema(wide(MAX_SCHEMA_NODES))
    with pytest.raises(UserError, match="more than"):
        to_openapi_schema(wide(MAX_SCHEMA_NODES + 1))


def test_json_schema_dialect_keeps_refs_and_rewrites_const() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {
            "Node": {
                "properties": {"next": {"$ref": "#/$defs/Node"}, "const": {"const": 1}},
                "type": "object",
            }
        },
        "$ref": "#/$defs/Node",
        "properties": {"kind": {"const": "a"}, "both": {"const": "b", "enum": ["b"]}},
        "discriminator": {"propertyName": "kind"},
        "additionalProperties": False,
    }
    before = copy.deepcopy(schema)
    out = to_json_schema(schema)
    assert schema == before
    assert out == {
        "$defs": {
            "Node": {
                "properties": {"next": {"$ref": "#/$defs/Node"}, "const": {"enum": [1]}},
                "type": "object",
            }
        },
        "$ref": "#/$defs/Node",
        "properties": {"kind": {"enum": ["a"]}, "both": {"enum": ["b"]}},
        "additionalProperties": False,
    }


def test_json_schema_dialect_depth_limit() -> None:
    to_json_schema(nested_arrays(MAX_SCHEMA_DEPTH))
    with pytest.raises(UserError, match="deeper than"):
        to_json_schema(nested_arrays(MAX_SCHEMA_DEPTH + 1))
