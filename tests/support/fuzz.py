"""Hypothesis strategies that damage recorded provider bodies, for the decoders' fuzz tests.

Each provider's fuzz test seeds these with its own recordings and adds the shapes only its wire
format has (its key names, its stream framing); what is the same for every JSON API lives here.
"""

from __future__ import annotations

from typing import Any
from typing import cast

from hypothesis import strategies as st

__all__ = ["JSON_VALUES", "byte_damage", "json_paths", "parent_of", "replace_at"]

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
"""Any JSON value, integers beyond 64 bits and long floats included, nested a few levels."""


@st.composite
def byte_damage(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """One of `seeds` with one to four byte-level edits: truncated, a byte flipped, bytes inserted,
    deleted or duplicated in place."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate"]))
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "truncate":
            del data[position:]
        elif op == "flip" and data:
            data[position] = draw(st.integers(0, 255))
        elif op == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[position : position + draw(st.integers(1, 16))]
        elif op == "duplicate":
            data[position:position] = data[position : position + draw(st.integers(1, 64))]
    return bytes(data)


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path (keys and indices) of every value in a JSON document, the document itself first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, sub in cast("dict[str, Any]", value).items():
            found.extend(json_paths(sub, (*prefix, key)))
    elif isinstance(value, list):
        for index, sub in enumerate(cast("list[Any]", value)):
            found.extend(json_paths(sub, (*prefix, index)))
    return found


def parent_of(document: Any, path: tuple[Any, ...]) -> Any:
    """The container holding the value at `path` (a non-empty path)."""
    target = document
    for key in path[:-1]:
        target = target[key]
    return target


def replace_at(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`document` with the value at `path` replaced by `value` (in place; the root is returned)."""
    if not path:
        return value
    parent_of(document, path)[path[-1]] = value
    return document
