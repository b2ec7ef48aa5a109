"""OpenAI's strict JSON Schema dialect, as a transformation of ordinary JSON Schema.

OpenAI enforces a tool's arguments (and `json_schema` output) exactly only when the schema is in its
strict subset: every object lists all its properties in `required` and sets
`additionalProperties: false`, optional values are expressed as nullable, and a handful of
keywords are not allowed. [`to_strict`][ferrule.providers.openai.strict_schema.to_strict] rewrites a
schema into that subset (optional properties become required-but-nullable, unsupported keywords
move into the description so the model still sees them), and
[`prepare`][ferrule.providers.openai.strict_schema.prepare] decides, for a tool whose `strict` flag
is unset, whether the schema is already strict-compatible. Input schemas are never mutated.
"""

from __future__ import annotations

import functools
from typing import Any
from typing import cast

import msgspec

from ferrule.core.errors import UserError

__all__ = ["StrictSchemaError", "is_strict_compatible", "prepare", "to_strict"]

_INCOMPATIBLE_KEYS = (
    "minLength",
    "maxLength",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
)
_COMPATIBLE_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_TYPE_BEARING = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")
_DROPPED = ("title", "$schema", "discriminator")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


class StrictSchemaError(UserError):
    """A schema cannot be expressed in OpenAI's strict dialect; fix the type or set `strict=False`."""


def _has_lookaround(pattern: str) -> bool:
    escaped = False
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        if pattern.startswith(_LOOKAROUND, index):
            return True
    return False


def _nullable(schema: Any) -> Any:
    """`schema` that also accepts `null`."""
    if not isinstance(schema, dict):
        return schema
    node: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    kind = node.get("type")
    if isinstance(kind, str) and not any(
        k in node for k in ("anyOf", "oneOf", "allOf", "$ref", "enum", "const")
    ):
        if kind == "null":
            return node
        return {**node, "type": [kind, "null"]}
    if isinstance(kind, list) and not any(k in node for k in ("anyOf", "$ref", "enum", "const")):
        kinds: list[Any] = kind  # pyright: ignore[reportUnknownVariableType]
        return node if "null" in kinds else {**node, "type": [*kinds, "null"]}
    options = node.get("anyOf")
    if isinstance(options, list) and len(node) == 1:
        items: list[Any] = options  # pyright: ignore[reportUnknownVariableType]
        if any(isinstance(o, dict) and cast("dict[str, Any]", o).get("type") == "null" for o in items):
            return node
        return {"anyOf": [*items, {"type": "null"}]}
    description = node.get("description")
    inner = {k: v for k, v in node.items() if k != "description"}
    result: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        result["description"] = description
    return result


def _strict_node(schema: Any, path: str) -> Any:
    if not isinstance(schema, dict):
        if schema is True or schema is False:
            return schema
        return schema
    node: dict[str, Any] = {k: v for k, v in schema.items() if k not in _DROPPED and k != "default"}  # pyright: ignore[reportUnknownVariableType]
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        # Strict mode forbids siblings of `$ref` but allows them beside `anyOf`.
        node["anyOf"] = [{"$ref": node.pop("$ref")}]
    notes: list[str] = []
    for key in _INCOMPATIBLE_KEYS:
        if key in node:
            notes.append(f"{key}={node.pop(key)}")
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in _COMPATIBLE_FORMATS:
        notes.append(f"format={node.pop('format')}")
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _has_lookaround(pattern):
        notes.append(f"pattern={node.pop('pattern')}")
    if notes:
        joined = ", ".join(notes)
        description = node.get("description")
        node["description"] = (
            f"{description} ({joined})" if isinstance(description, str) and description else joined
        )
    if "oneOf" in node:
        node["anyOf"] = [*node.pop("oneOf"), *node.pop("anyOf", [])]
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            node[key] = {name: _strict_node(sub, f"{path}/{key}/{name}") for name, sub in value.items()}  # pyright: ignore[reportUnknownVariableType]
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            node[key] = [_strict_node(sub, f"{path}/{key}/{i}") for i, sub in enumerate(value)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    is_array = kind == "array" or (isinstance(kind, list) and "array" in kind)
    if is_object:
        properties: dict[str, Any] = node.setdefault("properties", {})
        required = node.get("required")
        required_set: set[Any] = set(cast("list[Any]", required)) if isinstance(required, list) else set()
        node["properties"] = {
            name: sub if name in required_set else _nullable(sub) for name, sub in properties.items()
        }
        node["required"] = list(properties)
        node["additionalProperties"] = False
    if is_array:
        items = node.get("items")
        if isinstance(items, dict):
            node["items"] = _strict_node(items, f"{path}/items")
        typed = isinstance(items, dict) and any(k in items for k in _TYPE_BEARING)
        if not typed and not node.get("prefixItems"):
            raise StrictSchemaError(
                f"OpenAI strict mode needs array items with a type, but the array at {path or '/'} has none; "
                "give the list an element type (e.g. list[str]) or set strict=False on the tool"
            )
    return node


def to_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` rewritten into OpenAI's strict dialect.

    Every object gets `additionalProperties: false` and lists all its properties as required;
    properties that were optional become nullable. Keywords strict mode rejects move into the
    description; `oneOf` becomes `anyOf`. Raises
    [`StrictSchemaError`][ferrule.providers.openai.strict_schema.StrictSchemaError] for an array
    whose items have no type (there is no faithful strict rewrite of it).
    """
    result = _strict_node(schema, "")
    assert isinstance(result, dict)
    return result  # pyright: ignore[reportUnknownVariableType]


def _compatible(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    node: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    if "default" in node or "oneOf" in node:
        return False
    if any(key in node for key in _INCOMPATIBLE_KEYS):
        return False
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in _COMPATIBLE_FORMATS:
        return False
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _has_lookaround(pattern):
        return False
    kind = node.get("type")
    if kind == "object":
        properties = node.get("properties")
        required = node.get("required")
        if node.get("additionalProperties", False) is not False:
            return False
        if (
            isinstance(properties, dict)
            and properties
            and (not isinstance(required, list) or set(properties) - set(required))  # pyright: ignore[reportUnknownArgumentType]
        ):
            return False
    if kind == "array":
        items = node.get("items")
        if not (isinstance(items, dict) and any(k in items for k in _TYPE_BEARING)) and not node.get(
            "prefixItems"
        ):
            return False
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict) and not all(_compatible(sub) for sub in value.values()):  # pyright: ignore[reportUnknownVariableType]
            return False
    for key in (*_SCHEMA_LISTS, "items"):
        value = node.get(key)
        subs: list[Any] = value if isinstance(value, list) else [value]  # pyright: ignore[reportUnknownVariableType]
        if not all(_compatible(sub) for sub in subs):
            return False
    return True


def _tidy(schema: Any) -> Any:
    """`schema` without the keywords OpenAI ignores, objects closed unless they say otherwise."""
    if not isinstance(schema, dict):
        return schema
    node: dict[str, Any] = {k: v for k, v in schema.items() if k not in _DROPPED}  # pyright: ignore[reportUnknownVariableType]
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            node[key] = {name: _tidy(sub) for name, sub in value.items()}  # pyright: ignore[reportUnknownVariableType]
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            node[key] = [_tidy(sub) for sub in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(node.get("items"), dict):
        node["items"] = _tidy(node["items"])
    if node.get("type") == "object":
        node.setdefault("properties", {})
        if node.get("additionalProperties") is None:
            node["additionalProperties"] = False
    return node


def is_strict_compatible(schema: dict[str, Any]) -> bool:
    """Whether `schema` already is in OpenAI's strict subset (objects closed, every property required)."""
    return _compatible(_tidy(schema))


def prepare(schema: dict[str, Any], strict: bool | None) -> tuple[dict[str, Any], bool]:
    """The schema to send for a tool or output, and whether to mark it `strict`.

    `strict=True` rewrites it with [`to_strict`][ferrule.providers.openai.strict_schema.to_strict];
    `strict=False` sends it exactly as written; `None` (the default of a
    `ToolDefinition`) closes objects that do not say otherwise and asks for strict enforcement only
    when the schema is already compatible, so no meaning changes silently.
    """
    if strict is False:
        return schema, False
    # The same tool schemas are sent on every request of a run, so the rewrite is cached. The key is
    # the schema's exact JSON (key order included, since it shapes the output), not its identity:
    # a schema dict mutated in place between requests still gets a fresh result.
    try:
        key = msgspec.json.encode(schema)
    except (TypeError, ValueError, msgspec.EncodeError):
        return _prepare_uncached(schema, strict)
    if len(key) > _MAX_CACHED_SCHEMA_BYTES:
        return _prepare_uncached(schema, strict)
    return _prepare_cached(key, strict)


# Bounds the cache's memory: at most this many entries of at most this many bytes of key each.
_MAX_CACHED_SCHEMAS = 256
_MAX_CACHED_SCHEMA_BYTES = 64 * 1024


@functools.lru_cache(maxsize=_MAX_CACHED_SCHEMAS)
def _prepare_cached(key: bytes, strict: bool | None) -> tuple[dict[str, Any], bool]:
    # Built from a private decoded copy, so no caller's dict is shared with the cache. Callers only
    # encode the result; an exception (StrictSchemaError) is not cached and re-raises each time.
    return _prepare_uncached(msgspec.json.decode(key), strict)


def _prepare_uncached(schema: dict[str, Any], strict: bool | None) -> tuple[dict[str, Any], bool]:
    if strict is True:
        return to_strict(schema), True
    tidy = _tidy(schema)
    return tidy, _compatible(tidy)
