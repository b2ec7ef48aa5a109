"""JSON Schema helpers of the agent: schemas from types, example values, partial-output checks."""

from __future__ import annotations

import math
from typing import Any
from typing import cast


def type_schema(tp: Any) -> dict[str, Any]:
    """A JSON Schema for `tp` (`json_schema.schema_for`) with its root inlined (no top-level `$ref`)."""
    from ferrule.core import json_schema

    return _inline_root(json_schema.schema_for(tp))


class SchemaMismatch(ValueError):
    """A value failed a hand-written JSON Schema (wraps `json_schema.SchemaValidationError`)."""

    def __init__(self, message: str, loc: list[str | int]) -> None:
        self.loc = loc
        """Keys and indexes from the root to the offending value."""
        super().__init__(message)


def compile_schema(schema: dict[str, Any]) -> Any:
    """A compiled validator for a hand-written schema (checked against the local dialect first)."""
    from ferrule.core import json_schema

    return json_schema.compile_validator(schema)


def check_against(validator: Any, value: Any) -> None:
    """Validate `value`, raising `SchemaMismatch` (a `ValueError`) when it does not conform."""
    from ferrule.core.json_schema import SchemaValidationError

    try:
        validator.validate(value)
    except SchemaValidationError as exc:
        raise SchemaMismatch(str(exc.args[0]) if exc.args else str(exc), list(exc.path)) from exc


def _inline_root(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return schema
    defs = dict(cast("dict[str, Any]", schema.get("$defs") or {}))
    name = ref[len("#/$defs/") :]
    root = dict(cast("dict[str, Any]", defs.get(name) or {}))
    if not _references(defs, ref, skip=name) and not _references(root, ref):
        defs.pop(name, None)
    if defs:
        root["$defs"] = defs
    return root


def _references(value: Any, ref: str, skip: str | None = None) -> bool:
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        for key, item in mapping.items():
            if key == skip:
                continue
            if key == "$ref" and item == ref:
                return True
            if _references(item, ref):
                return True
        return False
    if isinstance(value, list):
        return any(_references(item, ref) for item in cast("list[Any]", value))
    return False


def strip_title(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without its root `title` (tool names already name the object)."""
    if "title" in schema:
        schema = {k: v for k, v in schema.items() if k != "title"}
    return schema


def is_object_schema(schema: dict[str, Any]) -> bool:
    """Whether `schema` describes a JSON object at its root."""
    return schema.get("type") == "object"


# --- example values (TestModel) ------------------------------------------------------------------


_FORMAT_EXAMPLES: dict[str, str] = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


def example_value(schema: dict[str, Any], defs: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value that satisfies common schemas: required properties, minimum lengths, enums."""
    if defs is None:
        defs = cast("dict[str, Any]", schema.get("$defs") or {})
    if depth > 16:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return example_value(cast("dict[str, Any]", defs.get(ref[8:], {})), defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return cast("list[Any]", enum)[0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            choices = cast("list[dict[str, Any]]", options)
            non_null = [o for o in choices if o.get("type") != "null"]
            return example_value((non_null or choices)[0], defs, depth + 1)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        return example_value(cast("list[dict[str, Any]]", all_of)[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in cast("list[str]", kind) if k != "null"]
        kind = kinds[0] if kinds else "null"
    if kind == "object" or (kind is None and "properties" in schema):
        properties = cast("dict[str, dict[str, Any]]", schema.get("properties") or {})
        required = cast("list[str]", schema.get("required") or [])
        return {name: example_value(properties.get(name, {}), defs, depth + 1) for name in required}
    if kind == "array":
        items = cast("dict[str, Any]", schema.get("items") or {})
        count = int(schema.get("minItems", 0))
        return [example_value(items, defs, depth + 1) for _ in range(count)]
    if kind == "string":
        fmt = schema.get("format")
        example = _FORMAT_EXAMPLES.get(fmt) if isinstance(fmt, str) else None
        return example or "a" * max(int(schema.get("minLength", 1)), 1)
    if kind == "integer":
        return int(_lower_bound(schema, 0))
    if kind == "number":
        return float(_lower_bound(schema, 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "a"


def _lower_bound(schema: dict[str, Any], fallback: float) -> float:
    if "minimum" in schema:
        return float(schema["minimum"])
    if "exclusiveMinimum" in schema:
        return math.floor(float(schema["exclusiveMinimum"])) + 1
    if "maximum" in schema and float(schema["maximum"]) < fallback:
        return float(schema["maximum"])
    return fallback


# --- monotonic checks of partial output ------------------------------------------------------------


def partial_ok(
    value: Any, schema: dict[str, Any], defs: dict[str, Any], open_tail: bool, depth: int = 0
) -> bool:
    """Whether a repaired partial `value` can still become valid under `schema`.

    Only assertions that later bytes cannot repair are checked: the JSON types of present values,
    forbidden extra properties, and maximum lengths, item and property counts. Missing required
    properties, minimums, enums, consts and numeric bounds are left to final validation, because
    a longer prefix can still satisfy (or change) them. `open_tail` marks a value that may still
    grow at its end (the last value of the prefix).
    """
    if depth > 64:
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[8:])
        return (
            True
            if not isinstance(target, dict)
            else partial_ok(value, cast("dict[str, Any]", target), defs, open_tail, depth + 1)
        )
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return any(
                partial_ok(value, cast("dict[str, Any]", o), defs, open_tail, depth + 1)
                for o in cast("list[Any]", options)
            )
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and not all(
        partial_ok(value, cast("dict[str, Any]", o), defs, open_tail, depth + 1)
        for o in cast("list[Any]", all_of)
    ):
        return False
    kind = schema.get("type")
    if kind is not None and not _type_matches(value, kind):
        return False
    if isinstance(value, str):
        max_length = schema.get("maxLength")
        return not (isinstance(max_length, int) and len(value) > max_length)
    if isinstance(value, list):
        items_list = cast("list[Any]", value)
        max_items = schema.get("maxItems")
        if isinstance(max_items, int) and len(items_list) > max_items:
            return False
        prefix = cast("list[dict[str, Any]]", schema.get("prefixItems") or [])
        items = schema.get("items")
        last = len(items_list) - 1
        for i, item in enumerate(items_list):
            sub = prefix[i] if i < len(prefix) else items
            if isinstance(sub, dict) and not partial_ok(
                item, cast("dict[str, Any]", sub), defs, open_tail and i == last, depth + 1
            ):
                return False
            if sub is False:
                return False
        return True
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        max_props = schema.get("maxProperties")
        if isinstance(max_props, int) and len(mapping) > max_props:
            return False
        properties = cast("dict[str, Any]", schema.get("properties") or {})
        additional = schema.get("additionalProperties", True)
        keys = list(mapping)
        for i, key in enumerate(keys):
            sub: Any = properties.get(key)
            if sub is None:
                if additional is False:
                    return False
                sub = cast("Any", additional) if isinstance(additional, dict) else None
            if isinstance(sub, dict) and not partial_ok(
                mapping[key], cast("dict[str, Any]", sub), defs, open_tail and i == len(keys) - 1, depth + 1
            ):
                return False
        return True
    return True


def _type_matches(value: Any, kind: Any) -> bool:
    if isinstance(kind, list):
        return any(_type_matches(value, k) for k in cast("list[Any]", kind))
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    return True
