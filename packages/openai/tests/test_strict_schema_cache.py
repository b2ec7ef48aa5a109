"""The per-schema cache of `strict_schema.prepare`: same answers as uncached, never shared with callers."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ferrule.providers.openai import strict_schema
from ferrule.providers.openai.strict_schema import StrictSchemaError
from ferrule.providers.openai.strict_schema import prepare


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize("strict", [None, True])
def test_repeat_gives_the_same_answer(strict: bool | None) -> None:
    first = prepare(_schema(), strict)
    second = prepare(_schema(), strict)
    assert first == second
    assert first[0]["additionalProperties"] is False


def test_in_place_mutation_is_seen() -> None:
    schema = _schema()
    assert prepare(schema, None)[1] is True
    schema["properties"]["b"] = {"type": "string"}  # optional now: no longer strict-compatible
    result, strict = prepare(schema, None)
    assert strict is False
    assert "b" in result["properties"]


def test_result_does_not_alias_the_input() -> None:
    schema = _schema()
    result, _ = prepare(schema, True)
    schema["properties"]["a"]["type"] = "string"
    assert result["properties"]["a"]["type"] == "integer"


def test_key_order_is_kept() -> None:
    first = prepare({"type": "object", "properties": {"x": {}, "y": {}}}, True)[0]
    second = prepare({"type": "object", "properties": {"y": {}, "x": {}}}, True)[0]
    assert list(first["properties"]) == ["x", "y"]
    assert list(second["properties"]) == ["y", "x"]


def test_errors_are_raised_every_time() -> None:
    bad = {"type": "array"}
    for _ in range(2):
        with pytest.raises(StrictSchemaError):
            prepare(bad, True)


def test_strict_false_returns_the_input_itself() -> None:
    schema = _schema()
    assert prepare(schema, False) == (schema, False)
    assert prepare(schema, False)[0] is schema


def _schema_of_size(size: int) -> dict[str, Any]:
    base: dict[str, Any] = {"type": "object", "properties": {}, "description": ""}
    padding = size - len(msgspec.json.encode(base))
    base["description"] = "d" * padding
    assert len(msgspec.json.encode(base)) == size
    return base


@pytest.mark.parametrize(
    "size", [strict_schema._MAX_CACHED_SCHEMA_BYTES, strict_schema._MAX_CACHED_SCHEMA_BYTES + 1]
)
def test_size_limit_of_the_cache(size: int) -> None:
    schema = _schema_of_size(size)
    strict_schema._prepare_cached.cache_clear()
    result, strict = prepare(schema, None)
    assert strict is True
    assert result["description"] == schema["description"]
    cached = strict_schema._prepare_cached.cache_info().currsize
    assert cached == (1 if size <= strict_schema._MAX_CACHED_SCHEMA_BYTES else 0)


def test_unencodable_schema_falls_back_to_the_uncached_path() -> None:
    marker = object()
    schema: dict[str, Any] = {"type": "object", "properties": {}, "x-extra": marker}
    result, _ = prepare(schema, None)
    assert result["x-extra"] is marker
