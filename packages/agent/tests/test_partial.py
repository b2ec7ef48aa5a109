"""Repair of streamed JSON prefixes and the monotonic checks applied to partial output."""

from __future__ import annotations

import json
from typing import Any
from typing import cast

import pytest

from ferrule.agent._partial import JsonPrefix
from ferrule.agent._schema import example_value
from ferrule.agent._schema import partial_ok

DOCUMENT = '{"a": "he\\"llo \\u00e9", "b": [1, 2.5, true, null, {"c": []}], "d": {"e": -3e2}, "f": "\\n"}'


def prefixes(text: str, *, prose: bool = False) -> list[tuple[bool, Any]]:
    return [_snap(text[:k], prose) for k in range(1, len(text) + 1)]


def _snap(text: str, prose: bool) -> tuple[bool, Any]:
    p = JsonPrefix(skip_prose=prose)
    p.feed(text)
    return p.snapshot()


def test_every_prefix_repairs_to_valid_json_and_the_whole_document_is_exact() -> None:
    snapshots = prefixes(DOCUMENT)
    assert all(ok for ok, _ in snapshots)
    assert snapshots[-1][1] == json.loads(DOCUMENT)


def test_feeding_in_pieces_equals_feeding_at_once() -> None:
    incremental = JsonPrefix()
    for k, ch in enumerate(DOCUMENT):
        incremental.feed(ch)
        assert incremental.snapshot() == _snap(DOCUMENT[: k + 1], False)


def test_unfinished_keys_numbers_and_literals_are_dropped() -> None:
    assert _snap('{"ab', False) == (True, {})
    assert _snap('{"a": 12', False) == (True, {})
    assert _snap('{"a": 12,', False) == (True, {"a": 12})
    assert _snap('{"a": tr', False) == (True, {})
    assert _snap("[1, 2", False) == (True, [1])
    assert _snap('{"a": "x\\', False) == (True, {"a": "x"})
    assert _snap('{"a": "x\\u00', False) == (True, {"a": "x"})


def test_snapshots_only_grow() -> None:
    previous: set[str] | None = None
    for ok, value in prefixes(DOCUMENT):
        assert ok
        keys = set(cast("dict[str, Any]", value)) if isinstance(value, dict) else None
        if keys is not None and previous is not None:
            assert previous <= keys
        previous = keys


def test_prose_and_fences_before_json_are_skipped() -> None:
    assert _snap('Sure, here you go:\n```json\n{"a": 1}\n```', True) == (True, {"a": 1})
    assert _snap("no json yet", True) == (False, None)


def test_not_json_stops_producing_snapshots() -> None:
    p = JsonPrefix()
    p.feed('{"a": 1 2}')
    assert p.snapshot() == (False, None)
    p = JsonPrefix()
    p.feed("]")
    assert p.snapshot() == (False, None)


def test_size_limit_exact_and_past() -> None:
    exact = JsonPrefix(max_chars=10)
    exact.feed('{"a":"12"}')
    assert exact.snapshot() == (True, {"a": "12"})
    past = JsonPrefix(max_chars=10)
    past.feed('{"a":"123"}')
    assert past.snapshot() == (False, None)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5, "minLength": 3},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 2},
        "age": {"type": "integer", "minimum": 10, "maximum": 20},
        "kind": {"enum": ["a", "b"]},
    },
    "required": ["name", "tags", "age", "kind"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({}, True),  # required is checked only at the end
        ({"name": "ab"}, True),  # minLength can still be reached
        ({"name": "abcde"}, True),  # exactly maxLength
        ({"name": "abcdef"}, False),  # past maxLength: strings only grow
        ({"tags": ["x", "y"]}, True),  # exactly maxItems
        ({"tags": ["x", "y", "z"]}, False),  # past maxItems
        ({"tags": [1]}, False),  # wrong item type
        ({"age": 5}, True),  # numeric bounds are deferred
        ({"age": "5"}, False),  # wrong type
        ({"kind": "c"}, True),  # enum is deferred
        ({"extra": 1}, False),  # forbidden extra property
        ([], False),
    ],
)
def test_partial_checks_only_monotonic_assertions(value: Any, ok: bool) -> None:
    assert partial_ok(value, SCHEMA, {}, True) is ok


def test_partial_checks_follow_refs_and_unions() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}, "u": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "$defs": {
            "P": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False}
        },
    }
    defs = schema["$defs"]
    assert partial_ok({"p": {"x": 1}, "u": None}, schema, defs, True)
    assert not partial_ok({"p": {"y": 1}}, schema, defs, True)
    assert not partial_ok({"u": "s"}, schema, defs, True)


def test_example_values_satisfy_schemas() -> None:
    assert example_value(SCHEMA) == {"name": "aaa", "tags": ["a", "a"], "age": 10, "kind": "a"}
    assert example_value({"type": ["null", "number"], "exclusiveMinimum": 1}) == 2.0
    assert example_value({"$ref": "#/$defs/X", "$defs": {"X": {"const": 4}}}) == 4
    assert example_value({"type": "string", "format": "date-time"}) == "2024-01-01T00:00:00Z"
