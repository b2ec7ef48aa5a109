"""The local JSON Schema dialect: the fail-closed checker, compiled validators and derived schemas."""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import subprocess
import sys
from typing import Annotated
from typing import Any
from typing import Literal
from typing import TypedDict
from typing import TypeVar

import msgspec
import pytest

from ferrule.core import bounded_json
from ferrule.core import json_schema as js
from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError
from ferrule.core.json_schema import InvalidJsonSchemaError
from ferrule.core.json_schema import JsonSchemaError
from ferrule.core.json_schema import SchemaValidationError
from ferrule.core.json_schema import UnsupportedJsonSchemaError
from ferrule.core.json_schema import check_schema
from ferrule.core.json_schema import compile_validator
from ferrule.core.json_schema import schema_for


def test_dialect() -> None:
    assert js.SUPPORTED_DIALECT == "https://json-schema.org/draft/2020-12/schema"
    check_schema({"$schema": js.SUPPORTED_DIALECT, "type": "string"})


def test_error_taxonomy() -> None:
    assert issubclass(InvalidJsonSchemaError, JsonSchemaError)
    assert issubclass(UnsupportedJsonSchemaError, JsonSchemaError)
    assert issubclass(JsonSchemaError, UserError)
    assert issubclass(SchemaValidationError, FerruleError)
    assert not issubclass(SchemaValidationError, UserError)


# --- the checker: supported vocabulary -----------------------------------------------------

SUPPORTED: list[Any] = [
    True,
    False,
    {},
    {"type": "null"},
    {"type": ["string", "integer"]},
    {"enum": [1, "a", None, [1], {"a": 1}]},
    {"enum": []},
    {"const": {"a": [1, 2]}},
    {"allOf": [{"type": "integer"}, {"minimum": 0}]},
    {"anyOf": [{"type": "integer"}, True]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"not": {"type": "null"}},
    {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
    {"then": {"minimum": 0}},
    {"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/a"},
    {"$defs": {"a/b": {}, "c~d": {}}, "anyOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}]},
    {"$defs": {"a b": {}}, "$ref": "#/$defs/a%20b"},
    {"properties": {"next": {"$ref": "#"}}},
    {"$defs": {"outer": {"$defs": {"unused": {"type": "string"}}}}},
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "pattern": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
        "propertyNames": {"maxLength": 3},
        "dependentRequired": {"a": ["b"]},
        "minProperties": 1,
        "maxProperties": 4,
    },
    {"additionalProperties": {"type": "integer"}},
    {"items": {"type": "integer"}, "minItems": 0, "maxItems": 3.0, "uniqueItems": True},
    {"prefixItems": [{"type": "integer"}], "items": False},
    {"contains": {"type": "integer"}, "minContains": 0, "maxContains": 2},
    {"type": "string", "minLength": 1, "maxLength": 5},
    {"minimum": -1.5, "maximum": 10, "exclusiveMinimum": -2, "exclusiveMaximum": 11, "multipleOf": 0.5},
    {
        "title": "t",
        "description": "d",
        "default": {"any": "thing"},
        "examples": [1, "two"],
        "format": "email",
        "readOnly": True,
        "writeOnly": False,
        "deprecated": False,
        "$comment": "c",
        "contentEncoding": "base64",
        "contentMediaType": "image/png",
    },
    {"$id": "https://example.com/schemas/thing", "$schema": js.SUPPORTED_DIALECT},
]


@pytest.mark.parametrize("schema", SUPPORTED, ids=lambda s: json.dumps(s)[:60])
def test_supported_vocabulary_is_accepted(schema: Any) -> None:
    check_schema(schema)
    check_schema(json.dumps(schema))
    check_schema(json.dumps(schema).encode())
    compile_validator(schema)


# --- the checker: unsupported vocabulary ----------------------------------------------------

UNSUPPORTED: list[tuple[Any, str]] = [
    ({"type": "string", "pattern": "^a"}, "/pattern"),
    ({"patternProperties": {"^a": {}}}, "/patternProperties"),
    ({"unevaluatedProperties": False}, "/unevaluatedProperties"),
    ({"unevaluatedItems": False}, "/unevaluatedItems"),
    ({"$dynamicRef": "#meta"}, "/$dynamicRef"),
    ({"$dynamicAnchor": "meta"}, "/$dynamicAnchor"),
    ({"$recursiveRef": "#"}, "/$recursiveRef"),
    ({"$recursiveAnchor": True}, "/$recursiveAnchor"),
    ({"$anchor": "here"}, "/$anchor"),
    ({"$vocabulary": {}}, "/$vocabulary"),
    ({"dependentSchemas": {"a": {}}}, "/dependentSchemas"),
    ({"dependencies": {"a": ["b"]}}, "/dependencies"),
    ({"additionalItems": False}, "/additionalItems"),
    ({"definitions": {"a": {}}}, "/definitions"),
    ({"contentSchema": {}}, "/contentSchema"),
    ({"anyOf": [{}], "discriminator": {"propertyName": "kind"}}, "/discriminator"),
    ({"x-vendor": 1}, "/x-vendor"),
    ({"properties": {"a": {"typo": "string"}}}, "/properties/a/typo"),
    ({"items": {"nullable": True}}, "/items/nullable"),
    ({"$ref": "https://example.com/schema.json"}, "/$ref"),
    ({"$ref": "other.json#/$defs/a"}, "/$ref"),
    ({"$ref": "#/properties/a"}, "/$ref"),
    ({"$ref": "#/$defs/a/properties/b", "$defs": {"a": {}}}, "/$ref"),
    ({"$ref": "#/$defs"}, "/$ref"),
    ({"$ref": "#anchor"}, "/$ref"),
    ({"$schema": "http://json-schema.org/draft-04/schema#"}, "/$schema"),
    ({"properties": {"a": {"$schema": js.SUPPORTED_DIALECT}}}, "/properties/a/$schema"),
    ({"properties": {"a": {"$id": "https://example.com/a"}}}, "/properties/a/$id"),
    ({"allOf": [{"prefixItems": [{"pattern": "x"}]}]}, "/allOf/0/prefixItems/0/pattern"),
    ({"properties": {"a/b": {"pattern": "x"}}}, "/properties/a~1b/pattern"),
]


_E = TypeVar("_E", bound=JsonSchemaError)


def _rejections(schema: Any, error: type[_E]) -> list[_E]:
    """The `error` that checking `schema` and compiling it each raise: both entry points reject alike."""
    raised: list[_E] = []
    for call in (check_schema, compile_validator):
        with pytest.raises(error) as info:
            call(schema)
        raised.append(info.value)
    return raised


@pytest.mark.parametrize(("schema", "pointer"), UNSUPPORTED, ids=lambda v: json.dumps(v)[:60])
def test_unsupported_vocabulary_is_rejected(schema: Any, pointer: str) -> None:
    for error in _rejections(schema, UnsupportedJsonSchemaError):
        assert error.pointer == pointer
        assert f"'#{pointer}'" in str(error)
        assert error.detail  # says what to do


# --- the checker: malformed vocabulary ------------------------------------------------------

INVALID: list[tuple[Any, str]] = [
    (["not", "a", "schema"], ""),
    (1, ""),
    ({"type": "str"}, "/type"),
    ({"type": []}, "/type"),
    ({"type": ["string", "string"]}, "/type"),
    ({"enum": "a"}, "/enum"),
    ({"allOf": []}, "/allOf"),
    ({"anyOf": {}}, "/anyOf"),
    ({"oneOf": [1]}, "/oneOf/0"),
    ({"not": "x"}, "/not"),
    ({"if": 1}, "/if"),
    ({"properties": []}, "/properties"),
    ({"properties": {"a": 3}}, "/properties/a"),
    ({"required": "a"}, "/required"),
    ({"required": ["a", "a"]}, "/required"),
    ({"required": [1]}, "/required"),
    ({"additionalProperties": "no"}, "/additionalProperties"),
    ({"propertyNames": None}, "/propertyNames"),
    ({"dependentRequired": {"a": "b"}}, "/dependentRequired/a"),
    ({"dependentRequired": []}, "/dependentRequired"),
    ({"minProperties": -1}, "/minProperties"),
    ({"maxProperties": 1.5}, "/maxProperties"),
    ({"items": [{}]}, "/items"),
    ({"prefixItems": []}, "/prefixItems"),
    ({"prefixItems": {}}, "/prefixItems"),
    ({"contains": []}, "/contains"),
    ({"minContains": -1}, "/minContains"),
    ({"maxContains": "2"}, "/maxContains"),
    ({"minItems": True}, "/minItems"),
    ({"maxItems": -3}, "/maxItems"),
    ({"uniqueItems": 1}, "/uniqueItems"),
    ({"minLength": -1}, "/minLength"),
    ({"maxLength": None}, "/maxLength"),
    ({"minimum": "0"}, "/minimum"),
    ({"maximum": True}, "/maximum"),
    ({"exclusiveMinimum": True}, "/exclusiveMinimum"),
    ({"exclusiveMaximum": None}, "/exclusiveMaximum"),
    ({"multipleOf": 0}, "/multipleOf"),
    ({"multipleOf": -2}, "/multipleOf"),
    ({"title": 1}, "/title"),
    ({"description": None}, "/description"),
    ({"format": 5}, "/format"),
    ({"readOnly": "yes"}, "/readOnly"),
    ({"examples": "x"}, "/examples"),
    ({"$comment": []}, "/$comment"),
    ({"$ref": 5}, "/$ref"),
    ({"$ref": "#/$defs/missing"}, "/$ref"),
    ({"$defs": {"a": {}}, "items": {"$ref": "#/$defs/b"}}, "/items/$ref"),
    ({"$ref": "#/$defs/a~2b", "$defs": {"a~2b": {}}}, "/$ref"),
    ({"$defs": []}, "/$defs"),
    ({"$defs": {"a": 1}}, "/$defs/a"),
    ({"$id": "https://example.com/a#frag"}, "/$id"),
]


@pytest.mark.parametrize(("schema", "pointer"), INVALID, ids=lambda v: json.dumps(v)[:60])
def test_malformed_vocabulary_is_invalid(schema: Any, pointer: str) -> None:
    for error in _rejections(schema, InvalidJsonSchemaError):
        assert error.pointer == pointer


def test_non_json_schema_values_are_invalid() -> None:
    with pytest.raises(InvalidJsonSchemaError, match="not plain JSON"):
        check_schema({"const": object()})
    with pytest.raises(InvalidJsonSchemaError):
        check_schema(b'{"type": ')


# --- bounds on the schema itself --------------------------------------------------------------


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(levels):
        schema = {"not": schema}
    return schema


def test_schema_depth_limit_for_text_and_mappings() -> None:
    limit = bounded_json.SCHEMA.max_depth
    exact = _nested(limit - 1)  # n `not` levels nest n + 1 JSON objects
    check_schema(exact)
    check_schema(json.dumps(exact))
    over = _nested(limit)
    with pytest.raises(InvalidJsonSchemaError, match="max_depth"):
        check_schema(over)
    with pytest.raises(InvalidJsonSchemaError, match="max_depth"):
        check_schema(json.dumps(over))
    with pytest.raises(InvalidJsonSchemaError, match="max_depth"):
        compile_validator(over)


def _schema_of_size(size: int) -> dict[str, Any]:
    """A schema whose canonical JSON is exactly `size` bytes, made of short strings."""
    examples = ["e" * 1000 for _ in range(size // 1003)]
    schema: dict[str, Any] = {"examples": examples}
    missing = size - len(msgspec.json.encode(schema, order="sorted"))
    while missing < 4:  # room for one more `,"…"` item
        examples.pop()
        missing = size - len(msgspec.json.encode(schema, order="sorted"))
    examples.append("f" * (missing - 3))
    assert len(msgspec.json.encode(schema, order="sorted")) == size
    return schema


def test_schema_size_limit() -> None:
    limit = bounded_json.SCHEMA.max_bytes
    exact = _schema_of_size(limit)
    check_schema(exact)
    check_schema(msgspec.json.encode(exact))
    over = _schema_of_size(limit + 1)
    with pytest.raises(InvalidJsonSchemaError, match="max_bytes"):
        check_schema(over)
    with pytest.raises(InvalidJsonSchemaError, match="max_bytes"):
        check_schema(msgspec.json.encode(over))


def test_self_containing_mapping_is_invalid() -> None:
    schema: dict[str, Any] = {"type": "object"}
    schema["properties"] = {"me": schema}
    with pytest.raises(InvalidJsonSchemaError):
        check_schema(schema)


# --- compiled validators: every keyword ------------------------------------------------------

CASES: list[tuple[Any, list[Any], list[Any]]] = [
    ({"type": "null"}, [None], [0, False, ""]),
    ({"type": "boolean"}, [True, False], [0, 1, None]),
    ({"type": "integer"}, [1, -3, 1.0, 10**30], [True, False, 1.5, "1"]),
    ({"type": "number"}, [1, 1.5, -2e300], [True, "1", None]),
    ({"type": "string"}, ["", "x"], [1, None]),
    ({"type": "array"}, [[], [1]], [{}, "[]"]),
    ({"type": "object"}, [{}, {"a": 1}], [[], None]),
    ({"type": ["string", "null"]}, ["a", None], [1]),
    ({"enum": [1, "a", None]}, [1, 1.0, "a", None], [True, "b", 2]),
    ({"enum": [True]}, [True], [1, 1.0]),
    (
        {"enum": [[1, {"a": 2}]]},
        [[1, {"a": 2}], [1.0, {"a": 2.0}]],
        [[True, {"a": 2}], [1, {"a": 2, "b": 3}]],
    ),
    ({"enum": []}, [], [1, None]),
    ({"const": 1}, [1, 1.0], [True, "1"]),
    ({"const": False}, [False], [0, None]),
    ({"const": None}, [None], [0, False, ""]),
    ({"const": {"a": [1, True]}}, [{"a": [1, True]}], [{"a": [1, 1]}, {"a": [True, True]}]),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, [2, 3], [1, "a"]),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [1.5, None]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2.5, "a"], [2, 3, 1.5]),
    ({"not": {"type": "string"}}, [1, None], ["a"]),
    (
        {"if": {"type": "integer"}, "then": {"minimum": 10}, "else": {"type": "string"}},
        [10, "a"],
        [5, None],
    ),
    ({"if": {"type": "integer"}, "then": {"minimum": 10}}, [10, "a", None], [5]),
    ({"then": {"minimum": 10}}, [5], []),  # `then` without `if` has no effect
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
        },
        [{"a": 1}, {"a": 1, "b": "x", "c": None}],
        [{}, {"a": "1"}, {"a": 1, "b": 2}, []],
    ),
    ({"properties": {"a": {"type": "integer"}}}, [[], "x", {"b": "not checked"}], [{"a": "x"}]),
    ({"properties": {"a": {}}, "additionalProperties": False}, [{}, {"a": 1}], [{"b": 1}]),
    (
        {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
        [{"a": "x", "b": 1}],
        [{"b": "x"}],
    ),
    ({"required": ["a"], "additionalProperties": False}, [1, "s"], [{}, {"a": 1}]),
    ({"propertyNames": {"maxLength": 2}}, [{"ab": 1}, {}], [{"abc": 1}]),
    ({"propertyNames": False}, [{}], [{"a": 1}]),
    ({"dependentRequired": {"a": ["b", "c"]}}, [{}, {"b": 1}, {"a": 1, "b": 1, "c": 1}], [{"a": 1, "b": 1}]),
    (
        {"minProperties": 1, "maxProperties": 2},
        [{"a": 1}, {"a": 1, "b": 2}, []],
        [{}, {"a": 1, "b": 2, "c": 3}],
    ),
    ({"items": {"type": "integer"}}, [[], [1, 2], {"a": "x"}], [[1, "2"]]),
    ({"items": False}, [[]], [[1]]),
    (
        {"prefixItems": [{"type": "integer"}, {"type": "string"}]},
        [[], [1], [1, "a"], [1, "a", None]],
        [["a"]],
    ),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [[], [1]], [[1, 2]]),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [[1, "a", "b"]], [[1, "a", 2]]),
    ({"contains": {"type": "integer"}}, [[1], ["a", 2]], [[], ["a"]]),
    ({"contains": {"type": "integer"}, "minContains": 2}, [[1, 2], [1, "a", 3]], [[1, "a"], []]),
    ({"contains": {"type": "integer"}, "maxContains": 1}, [[1, "a"]], [[1, 2], ["a"]]),
    ({"contains": {"type": "integer"}, "minContains": 0}, [[], ["a"], [1, 2]], []),
    ({"contains": {"type": "integer"}, "minContains": 0, "maxContains": 1}, [[], [1]], [[1, 2]]),
    (
        {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3},
        [[1, 2], [1, 2, 3, "a"]],
        [[1], [1, 2, 3, 4]],
    ),
    ({"minContains": 5, "maxContains": 0}, [[], [1]], []),  # without `contains` they have no effect
    ({"minItems": 1, "maxItems": 2}, [[1], [1, 2], "abc"], [[], [1, 2, 3]]),
    (
        {"uniqueItems": True},
        [[1, True], [[1], [True]], [{"a": 1}, {"a": True}], [0, False, None, ""]],
        [[1, 1.0], [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [[1], [1]]],
    ),
    ({"uniqueItems": False}, [[1, 1]], []),
    ({"minLength": 2, "maxLength": 3}, ["ab", "😀😀", "éèê", 5], ["a", "😀", "abcd"]),
    ({"minimum": 1, "maximum": 3}, [1, 3, 2.5, True, "x"], [0, 3.01]),
    ({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, [1.01, 2], [1, 3]),
    ({"multipleOf": 3}, [0, 9, -6, 9.0], [10, 1.5]),
    ({"multipleOf": 0.01}, [19.01, 0.3, 5], [0.001]),
    ({"format": "email"}, ["not an email", 1], []),
    ({"format": "date-time", "type": "string"}, ["yesterday"], [1]),
    ({"contentEncoding": "base64", "contentMediaType": "application/json"}, ["%%% not base64", "{"], []),
    ({"title": "t", "description": "d", "default": 1, "examples": [2], "deprecated": True}, [None, "x"], []),
    (True, [None, 1, {}], []),
    (False, [], [None, 1, {}]),
    ({"$defs": {"pos": {"minimum": 0}}, "$ref": "#/$defs/pos", "type": "integer"}, [1], [-1, 1.5]),
    (
        {
            "$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}},
            "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}},
        },
        [{"x": 1, "y": "s"}],
        [{"x": "s"}, {"y": 1}],
    ),
    ({"$defs": {"a b": {"type": "integer"}}, "$ref": "#/$defs/a%20b"}, [1], ["s"]),
    (
        {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#"}},
            },
            "required": ["value"],
            "additionalProperties": False,
        },
        [{"value": 1, "children": [{"value": 2, "children": []}, {"value": 3}]}],
        [{"value": 1, "children": [{"value": "2"}]}, {"value": 1, "children": [{}]}],
    ),
]


@pytest.mark.parametrize(("schema", "valid", "invalid"), CASES, ids=lambda v: json.dumps(v)[:70])
def test_keyword_semantics(schema: Any, valid: list[Any], invalid: list[Any]) -> None:
    validator = compile_validator(schema)
    for value in valid:
        before = copy.deepcopy(value)
        assert validator.is_valid(value), value
        validator.validate(value)
        assert value == before
        assert json.dumps(value) == json.dumps(before)
    for value in invalid:
        assert not validator.is_valid(value), value
        with pytest.raises(SchemaValidationError):
            validator.validate(value)


def test_defaults_are_not_inserted_and_content_not_decoded() -> None:
    validator = compile_validator(
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 5},
                "b": {"type": "string", "contentEncoding": "base64", "contentMediaType": "application/json"},
                "c": {"prefixItems": [{"default": 1}]},
            },
        }
    )
    value: dict[str, Any] = {"b": "e30=", "c": []}
    validator.validate(value)
    assert value == {"b": "e30=", "c": []}


# --- errors from validation ---------------------------------------------------------------------


def test_validation_error_path_and_message() -> None:
    validator = compile_validator(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                }
            },
        }
    )
    with pytest.raises(SchemaValidationError) as info:
        validator.validate({"items": [{"name": "a"}, {"name": 3}]})
    error = info.value
    assert error.path == ["items", 1, "name"]
    assert error.keyword == "type"
    assert error.message == "must be string"
    assert str(error) == "$.items[1].name: must be string"


def test_validation_error_path_with_awkward_keys() -> None:
    schema = {
        "properties": {
            "a.b": {"properties": {"c[0]": {"items": {"type": "integer"}}, "{x}": {"type": "string"}}}
        }
    }
    validator = compile_validator(schema)
    with pytest.raises(SchemaValidationError) as info:
        validator.validate({"a.b": {"c[0]": [1, 2, "x"]}})
    assert info.value.path == ["a.b", "c[0]", 2]
    assert str(info.value).startswith('$["a.b"]["c[0]"][2]: ')
    with pytest.raises(SchemaValidationError) as info:
        validator.validate({"a.b": {"{x}": 1}})
    assert info.value.path == ["a.b", "{x}"]


@pytest.mark.parametrize(
    ("schema", "value", "keyword", "text"),
    [
        ({"enum": ["a", "b"]}, "c", "enum", "must be one of ['a', 'b']"),
        ({"const": 1}, True, "const", "must be 1"),
        ({"uniqueItems": True}, [1, 2, 1.0], "uniqueItems", "items 0 and 2 are equal"),
        ({"contains": {"type": "string"}, "minContains": 2}, ["a"], "contains", "at least 2"),
        ({"required": ["a", "b"]}, {"a": 1}, "required", "'b'"),
    ],
)
def test_validation_error_messages(schema: Any, value: Any, keyword: str, text: str) -> None:
    with pytest.raises(SchemaValidationError) as info:
        compile_validator(schema).validate(value)
    assert info.value.keyword == keyword
    assert text in info.value.message


def test_special_property_names_compile_and_validate() -> None:
    names = ['a"b', "a\\b", "{x}", "{{", "}", "é", "😀", "a b", "1abc", "__class__", "", "a\nb", "%s", "data"]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "required": names}
    validator = compile_validator(schema)
    good: dict[str, Any] = {n: 1 for n in names}
    validator.validate(good)
    for name in names:
        bad = dict(good)
        bad[name] = "x"
        with pytest.raises(SchemaValidationError) as info:
            validator.validate(bad)
        assert info.value.path == [name]


# --- caching, immutability, laziness ------------------------------------------------------------


def test_cache_returns_same_validator_for_equal_schemas() -> None:
    first = compile_validator({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}})
    second = compile_validator({"properties": {"b": {}, "a": {"type": "integer"}}, "type": "object"})
    assert first is second
    assert (
        compile_validator(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}}))
        is first
    )
    assert compile_validator({"const": 1}) is not compile_validator({"const": 1.0})
    assert compile_validator({"const": 1}) is not compile_validator({"const": True})


def test_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(js, "_CACHE_SIZE", 3)
    first = compile_validator({"maxLength": 1001})
    for n in range(1002, 1006):
        compile_validator({"maxLength": n})
    assert len(js._cache) <= 3
    assert compile_validator({"maxLength": 1001}) is not first


def test_schema_property_is_a_fresh_copy() -> None:
    validator = compile_validator({"type": "string", "minLength": 2})
    copy_one = validator.schema
    assert copy_one == {"type": "string", "minLength": 2}
    assert isinstance(copy_one, dict)
    copy_one["minLength"] = 0
    assert validator.schema == {"type": "string", "minLength": 2}
    assert not validator.is_valid("a")


def test_input_schema_is_never_mutated() -> None:
    schema = {
        "$schema": js.SUPPORTED_DIALECT,
        "$defs": {"a/b": {"type": "integer", "default": 3, "format": "int32"}},
        "type": "object",
        "properties": {
            "x": {"$ref": "#/$defs/a~1b", "description": "sibling"},
            "t": {"prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
            "c": {"contains": {"const": 1}, "minContains": 2},
            "u": {"uniqueItems": True, "enum": [[1], [2]]},
        },
        "dependentRequired": {"x": ["t"]},
        "required": ["x"],
        "additionalProperties": False,
    }
    before = copy.deepcopy(schema)
    check_schema(schema)
    compile_validator(schema).validate({"x": 1, "t": [1, "a"]})
    assert schema == before
    assert json.dumps(schema) == json.dumps(before)


def test_fastjsonschema_is_imported_lazily() -> None:
    code = (
        "import sys; from ferrule.core import json_schema as js; "
        "js.check_schema({'type': 'string'}); js.schema_for(int); "
        "assert 'fastjsonschema' not in sys.modules, 'imported too early'; "
        "js.compile_validator({'type': 'string'}); assert 'fastjsonschema' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_remote_references_are_never_resolved() -> None:
    from fastjsonschema import JsonSchemaDefinitionException

    from ferrule.core import _schema_compile

    # Bypass the checker to exercise the resolver guard directly: nothing may be fetched.
    for uri in ("http://127.0.0.1:9/schema.json", "file:///etc/passwd", "ftp://x/y", "relative.json"):
        with pytest.raises(JsonSchemaDefinitionException, match="never fetched"):
            _schema_compile._generate({"$ref": uri}, [], [])


@pytest.mark.parametrize(
    ("schema", "cycle"),
    [
        ({"$ref": "#"}, "# -> #"),
        ({"anyOf": [{"$ref": "#"}, {"type": "null"}]}, "# -> #"),
        ({"not": {"$ref": "#"}}, "# -> #"),
        ({"if": {"$ref": "#"}}, "# -> #"),
        (
            {
                "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"oneOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            "#/$defs/a -> #/$defs/b -> #/$defs/a",
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {"a": {"anyOf": [{"$ref": "#/definitions/a"}]}},
                "type": "object",
            },
            "#/definitions/a -> #/definitions/a",
        ),
    ],
)
def test_reference_cycles_that_never_descend_are_refused(schema: dict[str, Any], cycle: str) -> None:
    # Each of these would recurse without end on any value; the checker refuses them up front.
    with pytest.raises(InvalidJsonSchemaError, match="never descends") as caught:
        compile_validator(schema)
    assert cycle in str(caught.value)


def test_recursion_through_a_part_of_the_value_is_accepted() -> None:
    tree = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
        "anyOf": [{"required": ["children"]}, {"$ref": "#/$defs/leaf"}],
        "$defs": {"leaf": {"properties": {"value": {"$ref": "#"}}}},
    }
    validator = compile_validator(tree)
    validator.validate({"children": [{"children": []}, {"value": {"children": []}}]})
    with pytest.raises(SchemaValidationError):
        validator.validate({"children": [{"children": 3}]})


def test_compiler_failures_become_invalid_schema_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from ferrule.core import _schema_compile

    def broken(schema: Any) -> Any:
        raise SyntaxError("generated code did not compile")

    monkeypatch.setattr(_schema_compile, "compile_schema", broken)
    with pytest.raises(InvalidJsonSchemaError, match="could not be compiled"):
        compile_validator({"type": "string", "maxLength": 123457})


# --- derived schemas -----------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(msgspec.Struct):
    street: str
    number: Annotated[int, msgspec.Meta(ge=1)]


class Cat(msgspec.Struct, tag=True):
    lives: int = 9


class Dog(msgspec.Struct, tag=True):
    good: bool = True


class Person(msgspec.Struct, forbid_unknown_fields=True):
    """A person."""

    name: str
    home: Address
    previous: list[Address]
    pet: Cat | Dog | None = None
    color: Color = Color.RED
    nickname: str | None = None
    scores: dict[str, float] = {}
    tags: set[str] = set()
    point: tuple[int, int] = (0, 0)


@dataclasses.dataclass
class Box:
    width: int
    label: Literal["small", "large"]


class Movie(TypedDict):
    title: str
    year: int


def test_schema_for_nested_structs_uses_defs_and_validates() -> None:
    schema = schema_for(Person)
    assert schema["$ref"] == "#/$defs/Person"
    assert {"Person", "Address", "Cat", "Dog", "Color"} <= set(schema["$defs"])
    check_schema(schema)
    validator = compile_validator(schema)
    person = {
        "name": "Ada",
        "home": {"street": "Main", "number": 1},
        "previous": [{"street": "Old", "number": 2}],
        "pet": {"type": "Dog", "good": True},
        "color": "blue",
        "tags": ["a", "b"],
        "point": [1, 2],
    }
    validator.validate(person)
    assert msgspec.convert(person, Person).pet == Dog()
    invalid = [
        {**person, "home": {"street": "Main", "number": 0}},
        {**person, "previous": [{"street": "Old"}]},
        {**person, "pet": {"type": "Fish"}},
        {**person, "color": "green"},
        {**person, "tags": ["a", "a"]},
        {**person, "point": [1, 2, 3]},
        {**person, "unknown": 1},
        {**person, "name": None},
    ]
    for value in invalid:
        assert not validator.is_valid(value), value


def test_schema_for_other_types() -> None:
    for tp, good, bad in [
        (Box, {"width": 1, "label": "small"}, {"width": 1, "label": "tiny"}),
        (Movie, {"title": "x", "year": 1999}, {"title": "x"}),
        (list[int], [1, 2], [1, "2"]),
        (int | str, "a", None),
        (Literal[1, 2], 2, True),
        (Color, "red", "RED"),
        (dict[str, list[bool]], {"a": [True]}, {"a": [1]}),
    ]:
        schema = schema_for(tp)
        check_schema(schema)
        validator = compile_validator(schema)
        assert validator.is_valid(good), tp
        assert not validator.is_valid(bad), tp


def test_schema_for_returns_fresh_copies_without_discriminator() -> None:
    first = schema_for(Person)
    first["$defs"]["Person"]["title"] = "changed"
    second = schema_for(Person)
    assert second["$defs"]["Person"]["title"] == "Person"
    assert "discriminator" not in json.dumps(second)


def test_schema_for_keeps_constraints_the_checker_rejects() -> None:
    schema = schema_for(Annotated[str, msgspec.Meta(pattern="^a")])
    assert schema == {"type": "string", "pattern": "^a"}
    with pytest.raises(UnsupportedJsonSchemaError):
        check_schema(schema)


def test_schema_for_unsupported_type() -> None:
    with pytest.raises(UnsupportedJsonSchemaError, match="cannot derive"):
        schema_for(object)


# --- declared dialects: Draft 7 and Draft 2019-09 -------------------------------------------

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"

# `edit_file` of @modelcontextprotocol/server-filesystem 2026.8.31, as zod-to-json-schema writes it.
ZOD_EDIT_FILE: dict[str, Any] = {
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                    "newText": {"type": "string", "description": "Text to replace with"},
                },
                "required": ["oldText", "newText"],
            },
        },
        "dryRun": {
            "default": False,
            "description": "Preview changes using git-style diff format",
            "type": "boolean",
        },
    },
    "required": ["path", "edits"],
}


def test_supported_dialects() -> None:
    assert {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2020-12/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2019-09/schema#",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft-07/schema",
    } == js.SUPPORTED_DIALECTS
    for uri in js.SUPPORTED_DIALECTS:
        check_schema({"$schema": uri, "type": "object", "properties": {"a": {"type": "integer"}}})


def test_a_draft_07_schema_of_shared_keywords_means_the_same_as_undeclared() -> None:
    undeclared = {key: value for key, value in ZOD_EDIT_FILE.items() if key != "$schema"}
    assert js.to_draft_2020_12(ZOD_EDIT_FILE) == undeclared
    declared, plain = compile_validator(ZOD_EDIT_FILE), compile_validator(undeclared)
    values: list[dict[str, Any]] = [
        {"path": "a", "edits": []},
        {"path": "a", "edits": [{"oldText": "x", "newText": "y"}], "dryRun": True},
        {"path": "a", "edits": [{"oldText": "x"}]},
        {"path": "a"},
        {"path": 1, "edits": []},
    ]
    for value in values:
        assert declared.is_valid(value) == plain.is_valid(value), value
    assert not declared.is_valid({"path": "a", "edits": [{"oldText": "x"}]})


UPGRADES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    # Draft 7: tuple `items` and `additionalItems`.
    (
        {"$schema": DRAFT_07, "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
        {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    ),
    ({"$schema": DRAFT_07, "items": [{"type": "string"}]}, {"prefixItems": [{"type": "string"}]}),
    # `additionalItems` beside a single-schema `items` (or none) has no effect.
    (
        {"$schema": DRAFT_07, "items": {"type": "string"}, "additionalItems": False},
        {"items": {"type": "string"}},
    ),
    ({"$schema": DRAFT_07, "additionalItems": {"type": "string"}}, {}),
    # `definitions` and their references.
    (
        {
            "$schema": DRAFT_07,
            "definitions": {"A": {"type": "integer"}},
            "properties": {"a": {"$ref": "#/definitions/A"}},
        },
        {"$defs": {"A": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/A"}}},
    ),
    (
        {
            "$schema": DRAFT_07,
            "definitions": {"a/b": {"type": "integer"}, "c d": {"type": "string"}},
            "anyOf": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/c%20d"}],
            "properties": {"next": {"$ref": "#"}},
        },
        {
            "$defs": {"a/b": {"type": "integer"}, "c d": {"type": "string"}},
            "anyOf": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c%20d"}],
            "properties": {"next": {"$ref": "#"}},
        },
    ),
    # The siblings of `$ref` are ignored by Draft 7; annotations are kept.
    (
        {
            "$schema": DRAFT_07,
            "$ref": "#/definitions/A",
            "definitions": {"A": {"type": "object"}},
            "type": "string",
            "description": "kept",
        },
        {"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}, "description": "kept"},
    ),
    # `dependencies` with arrays of names.
    (
        {"$schema": DRAFT_07, "dependencies": {"card": ["billing"]}},
        {"dependentRequired": {"card": ["billing"]}},
    ),
    # Draft 2019-09: tuple `items`; `$defs` and `$ref` siblings keep their 2020-12 meaning.
    (
        {"$schema": DRAFT_2019, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
        {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
    ),
    (
        {"$schema": DRAFT_2019, "$defs": {"A": {}}, "$ref": "#/$defs/A", "type": "string", "minContains": 0},
        {"$defs": {"A": {}}, "$ref": "#/$defs/A", "type": "string", "minContains": 0},
    ),
    # Draft 2020-12 (declared) is returned as it is.
    (
        {"$schema": js.SUPPORTED_DIALECT, "prefixItems": [{}]},
        {"$schema": js.SUPPORTED_DIALECT, "prefixItems": [{}]},
    ),
]


@pytest.mark.parametrize(("schema", "expected"), UPGRADES, ids=lambda v: json.dumps(v)[:70])
def test_draft_07_and_2019_09_are_upgraded_to_2020_12(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    original = copy.deepcopy(schema)
    upgraded = js.to_draft_2020_12(schema)
    assert upgraded == expected
    assert schema == original  # the input is never modified
    check_schema(upgraded)
    assert js.to_draft_2020_12(json.dumps(schema)) == expected


SAMPLES: list[Any] = [None, 1, 2.5, "s", True, [], ["a"], ["a", 1], ["a", "b"], [1, "a"], ["a", 1, 2], {}]
SAMPLES.extend([{"card": 1}, {"card": 1, "billing": 2}, {"a": 1}, {"a": "x"}])


@pytest.mark.parametrize(("schema", "expected"), UPGRADES, ids=lambda v: json.dumps(v)[:70])
def test_declared_dialects_validate_with_their_own_meaning(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    declared, upgraded = compile_validator(schema), compile_validator(expected)
    for value in SAMPLES:
        assert declared.is_valid(value) == upgraded.is_valid(value), value


def test_draft_07_meanings_hold_on_values() -> None:
    tuple_schema = compile_validator(
        {"$schema": DRAFT_07, "items": [{"type": "string"}], "additionalItems": False}
    )
    assert tuple_schema.is_valid(["a"])
    assert not tuple_schema.is_valid(["a", "b"])
    assert not tuple_schema.is_valid([1])
    ref_siblings = compile_validator(
        {
            "$schema": DRAFT_07,
            "definitions": {"A": {"type": "integer"}},
            "$ref": "#/definitions/A",
            "minimum": 10,
        }
    )
    assert ref_siblings.is_valid(3)  # Draft 7 ignores `minimum` beside `$ref`
    assert not ref_siblings.is_valid("3")
    in_2019 = compile_validator(
        {"$schema": DRAFT_2019, "$defs": {"A": {"type": "integer"}}, "$ref": "#/$defs/A", "minimum": 10}
    )
    assert not in_2019.is_valid(3)  # 2019-09 applies it
    dependencies = compile_validator({"$schema": DRAFT_07, "dependencies": {"card": ["billing"]}})
    assert dependencies.is_valid({"billing": 1})
    assert not dependencies.is_valid({"card": 1})


def test_upgrade_keeps_key_order_and_returns_fresh_copies() -> None:
    schema: dict[str, Any] = {
        "$schema": DRAFT_07,
        "type": "object",
        "properties": {"z": {"enum": [[1]]}, "a": {}, "m": {}},
    }
    upgraded = js.to_draft_2020_12(schema)
    assert isinstance(upgraded, dict)
    assert list(upgraded["properties"]) == ["z", "a", "m"]
    upgraded["properties"]["z"]["enum"][0].append(2)
    assert schema["properties"]["z"]["enum"] == [[1]]
    assert js.to_draft_2020_12(True) is True


FOREIGN: list[tuple[dict[str, Any], str, str]] = [
    ({"$schema": DRAFT_07, "$defs": {"a": {}}}, "/$defs", "unknown to Draft 7"),
    ({"$schema": DRAFT_07, "prefixItems": [{}]}, "/prefixItems", "unknown to Draft 7"),
    ({"$schema": DRAFT_07, "dependentRequired": {"a": ["b"]}}, "/dependentRequired", "use `dependencies`"),
    ({"$schema": DRAFT_07, "contains": {}, "minContains": 2}, "/minContains", "unknown to Draft 7"),
    ({"$schema": DRAFT_07, "properties": {"a": {"maxContains": 1}}}, "/properties/a/maxContains", "Draft 7"),
    ({"$schema": DRAFT_07, "$ref": "#/$defs/a"}, "/$ref", "#/definitions/<name>"),
    ({"$schema": DRAFT_07, "dependencies": {"a": {"required": ["b"]}}}, "/dependencies/a", "schema form"),
    ({"$schema": DRAFT_07, "dependencies": {"a": True}}, "/dependencies/a", "schema form"),
    ({"$schema": DRAFT_07, "items": [{"pattern": "x"}]}, "/items/0/pattern", "regular expressions"),
    (
        {"$schema": DRAFT_07, "definitions": {"a": {"x-vendor": 1}}},
        "/definitions/a/x-vendor",
        "unknown keyword",
    ),
    (
        {"$schema": DRAFT_07, "$ref": "#/definitions/a", "definitions": {"a": {}}, "pattern": "x"},
        "/pattern",
        "regular",
    ),
    ({"$schema": DRAFT_2019, "prefixItems": [{}]}, "/prefixItems", "unknown to Draft 2019-09"),
    ({"$schema": DRAFT_2019, "definitions": {"a": {}}}, "/definitions", "move the schemas to `$defs`"),
    ({"$schema": DRAFT_2019, "dependencies": {"a": ["b"]}}, "/dependencies", "use `dependentRequired`"),
    ({"$schema": DRAFT_2019, "$recursiveRef": "#"}, "/$recursiveRef", "dynamic references"),
    # The declaration is checked before the keywords whose meaning it decides.
    ({"definitions": {}, "$schema": "http://json-schema.org/draft-04/schema#"}, "/$schema", "not supported"),
    ({"$schema": 7}, "/$schema", "not supported"),
]


@pytest.mark.parametrize(("schema", "pointer", "text"), FOREIGN, ids=lambda v: json.dumps(v)[:60])
def test_keywords_a_declared_dialect_lacks_are_refused(schema: Any, pointer: str, text: str) -> None:
    for call in (check_schema, compile_validator, js.to_draft_2020_12):
        with pytest.raises(UnsupportedJsonSchemaError) as info:
            call(schema)
        assert info.value.pointer == pointer
        assert text in info.value.detail


INVALID_DECLARED: list[tuple[dict[str, Any], str]] = [
    ({"$schema": DRAFT_07, "items": []}, "/items"),
    ({"$schema": DRAFT_07, "items": [1]}, "/items/0"),
    ({"$schema": DRAFT_07, "additionalItems": "no"}, "/additionalItems"),
    ({"$schema": DRAFT_07, "definitions": []}, "/definitions"),
    ({"$schema": DRAFT_07, "dependencies": {"a": ["b", "b"]}}, "/dependencies/a"),
    ({"$schema": DRAFT_07, "dependencies": []}, "/dependencies"),
    ({"$schema": DRAFT_07, "$ref": "#/definitions/missing"}, "/$ref"),
]


@pytest.mark.parametrize(("schema", "pointer"), INVALID_DECLARED, ids=lambda v: json.dumps(v)[:60])
def test_malformed_draft_07_vocabulary_is_invalid(schema: Any, pointer: str) -> None:
    with pytest.raises(InvalidJsonSchemaError) as info:
        check_schema(schema)
    assert info.value.pointer == pointer


def test_draft_2020_12_still_refuses_the_older_spellings_and_says_how_to_declare_them() -> None:
    older: list[tuple[dict[str, Any], str]] = [
        ({"items": [{}]}, "/items"),
        ({"additionalItems": False}, "/additionalItems"),
        ({"definitions": {}}, "/definitions"),
        ({"dependencies": {"a": ["b"]}}, "/dependencies"),
    ]
    for schema, pointer in older:
        with pytest.raises(JsonSchemaError) as info:
            check_schema(schema)
        assert info.value.pointer == pointer
        assert "declare" in info.value.detail
