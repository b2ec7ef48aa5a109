"""OpenAI's strict JSON Schema dialect as a transformation."""

from __future__ import annotations

import copy

import pytest

from ferrule.providers.openai.strict_schema import StrictSchemaError
from ferrule.providers.openai.strict_schema import is_strict_compatible
from ferrule.providers.openai.strict_schema import prepare
from ferrule.providers.openai.strict_schema import to_strict

PERSON = {
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "Full name"},
        "age": {"type": "integer", "default": 0},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["name"],
    "$defs": {"Cat": {"title": "Cat", "type": "object", "properties": {"lives": {"type": "integer"}}}},
}


def test_to_strict_closes_objects_requires_everything_and_makes_optionals_nullable() -> None:
    original = copy.deepcopy(PERSON)
    strict = to_strict(PERSON)
    assert original == PERSON  # never mutated
    assert strict["additionalProperties"] is False
    assert strict["required"] == ["name", "age", "email", "site", "pet", "tags"]
    assert "title" not in strict
    props = strict["properties"]
    assert props["name"] == {"type": "string", "description": "Full name (minLength=1)"}
    assert props["age"] == {"type": ["integer", "null"]}  # optional → nullable, default dropped
    assert props["email"] == {"type": ["string", "null"], "format": "email"}  # allowed format kept
    assert props["site"] == {"type": ["string", "null"], "description": "format=uri"}
    assert props["pet"] == {
        "anyOf": [{"$ref": "#/$defs/Cat"}, {"type": "null"}]
    }  # oneOf → anyOf, already nullable
    assert props["tags"] == {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "description": "uniqueItems=True",
    }
    cat = strict["$defs"]["Cat"]
    assert cat["additionalProperties"] is False
    assert cat["required"] == ["lives"]
    assert cat["properties"]["lives"] == {"type": ["integer", "null"]}


def test_ref_with_siblings_moves_into_anyof() -> None:
    strict = to_strict(
        {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/X", "description": "d"}},
            "required": ["p"],
            "$defs": {"X": {"type": "string"}},
        }
    )
    assert strict["properties"]["p"] == {"description": "d", "anyOf": [{"$ref": "#/$defs/X"}]}


def test_untyped_array_cannot_be_strict() -> None:
    with pytest.raises(StrictSchemaError, match="list\\[str\\]"):
        to_strict({"type": "object", "properties": {"xs": {"type": "array"}}, "required": ["xs"]})
    with pytest.raises(StrictSchemaError):
        to_strict(
            {"type": "object", "properties": {"xs": {"type": "array", "items": {}}}, "required": ["xs"]}
        )


def test_lookahead_pattern_is_moved_to_the_description() -> None:
    strict = to_strict(
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?!x)"}}, "required": ["p"]}
    )
    assert strict["properties"]["p"] == {"type": "string", "description": "pattern=^(?!x)"}
    kept = to_strict(
        {"type": "object", "properties": {"p": {"type": "string", "pattern": "^\\(?!x"}}, "required": ["p"]}
    )
    assert kept["properties"]["p"]["pattern"] == "^\\(?!x"


def test_compatibility() -> None:
    good = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert is_strict_compatible(good)
    assert not is_strict_compatible({**good, "required": []})
    assert not is_strict_compatible({**good, "additionalProperties": True})
    assert not is_strict_compatible(
        {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}, "required": ["a"]}
    )
    assert not is_strict_compatible(
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}
    )
    assert not is_strict_compatible(
        {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}, "required": ["a"]}
    )
    assert is_strict_compatible({"type": "object", "properties": {}})


def test_prepare() -> None:
    good = {"title": "T", "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    schema, strict = prepare(good, None)
    assert strict is True
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema, strict = prepare(loose, None)
    assert strict is False
    assert schema["additionalProperties"] is False
    assert prepare(loose, False) == (loose, False)
    schema, strict = prepare(loose, True)
    assert strict is True
    assert schema["required"] == ["a"]
