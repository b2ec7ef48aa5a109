"""RFC 6901 JSON Pointers: the RFC's own examples, escapes, assignment into step inputs."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.planning import MAX_POINTER_CHARS
from ferrule.planning import PointerError
from ferrule.planning import format_pointer
from ferrule.planning import parse_pointer
from ferrule.planning._pointer import assign
from ferrule.planning._pointer import json_equal
from ferrule.planning._pointer import resolve

# RFC 6901, section 5.
RFC_DOCUMENT: dict[str, Any] = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", RFC_DOCUMENT),
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/", 0),
        ("/a~1b", 1),
        ("/c%d", 2),
        ("/e^f", 3),
        ("/g|h", 4),
        ("/i\\j", 5),
        ('/k"l', 6),
        ("/ ", 7),
        ("/m~0n", 8),
    ],
)
def test_rfc_6901_examples(pointer: str, expected: Any) -> None:
    assert resolve(RFC_DOCUMENT, parse_pointer(pointer)) == expected


def test_round_trip_and_shorthand() -> None:
    assert parse_pointer("/a~1b/m~0n/0") == ("a/b", "m~n", "0")
    assert format_pointer(("a/b", "m~n", "0")) == "/a~1b/m~0n/0"
    assert parse_pointer("temperature") == ("temperature",)
    assert format_pointer(parse_pointer("temperature")) == "/temperature"
    assert parse_pointer("~01") == ("~1",)


def test_malformed_pointers_and_missing_values() -> None:
    for bad in ("/a~2", "/a~", "~"):
        with pytest.raises(PointerError, match="must be followed by 0 or 1"):
            parse_pointer(bad)
    assert len(parse_pointer("/" + "a" * (MAX_POINTER_CHARS - 1))) == 1
    with pytest.raises(PointerError, match=f"limit is {MAX_POINTER_CHARS}"):
        parse_pointer("/" + "a" * MAX_POINTER_CHARS)
    with pytest.raises(PointerError, match="no member 'x'"):
        resolve({"a": 1}, ("x",))
    with pytest.raises(PointerError, match="past the end"):
        resolve([1, 2], ("2",))
    for index in ("01", "-", "1.0", "-1"):
        with pytest.raises(PointerError):
            resolve([1, 2], (index,))
    with pytest.raises(PointerError, match="is a number"):
        resolve({"a": 1}, ("a", "b"))


def test_assign_creates_objects_and_appends_to_arrays() -> None:
    target: dict[str, Any] = {"list": [1]}
    assign(target, ("a", "b"), 5)
    assign(target, ("list", "1"), 2)
    assign(target, ("list", "-"), 3)
    assign(target, ("list", "0"), 0)
    assert target == {"list": [0, 2, 3], "a": {"b": 5}}
    with pytest.raises(PointerError, match="whole input"):
        assign(target, (), 1)
    with pytest.raises(PointerError, match="cannot be set"):
        assign(target, ("a", "b", "c"), 1)
    with pytest.raises(PointerError, match="past the end"):
        assign(target, ("list", "5"), 1)


def test_json_equality() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert json_equal(None, None)
    assert not json_equal(None, False)
    assert json_equal({"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]})
    assert not json_equal({"a": [1]}, {"a": [1, 2]})
    assert not json_equal("1", 1)
