"""JSON Schema → Gemini's schema dialects.

Gemini takes a tool's parameter schema (and a structured-output schema) in one of two fields:

* `parameters` / `responseSchema`: Gemini's own `Schema` object, a subset of OpenAPI 3.0. It has no
  `$ref`, `$defs`, `const`, `oneOf`, `allOf`, `additionalProperties` or `prefixItems`, spells
  types in upper case, marks optional values with `nullable` instead of a `null` type, allows
  `enum` only on strings, and rejects a schema that uses any keyword it does not know.
  [`to_openapi_schema`][] rewrites a JSON Schema into it, recursively: references are inlined
  (recursive schemas cannot be expressed and are refused), `const` becomes a one-value `enum`,
  a `null` alternative becomes `nullable`, `oneOf` becomes `anyOf`, single-member `allOf` is
  merged, `prefixItems` becomes `items` (`anyOf` of the distinct item schemas), type lists become
  `anyOf`, non-string enums move into the description, `propertyOrdering` keeps the declaration
  order, and every keyword Gemini rejects is removed.
* `parametersJsonSchema` / `responseJsonSchema`: a JSON Schema subset that keeps `$ref`/`$defs`,
  `anyOf`, `additionalProperties`, `prefixItems` and type lists. [`to_json_schema`][] makes only
  the few changes it needs: `const` becomes a one-value `enum` and meta keywords
  (`$schema`, `$id`, `$comment`, `discriminator`) are dropped.

Both functions return a new schema and never modify their input. Their output is only sent to
Gemini; the application's original schema is what ferrule validates arguments and output against.
"""

from __future__ import annotations

from typing import Any
from typing import Final
from typing import Literal
from typing import TypeAlias

from ferrule.core.errors import UserError

__all__ = ["SchemaDialect", "to_json_schema", "to_openapi_schema"]

SchemaDialect: TypeAlias = Literal["openapi", "json_schema"]
"""Which Gemini schema field a model is sent: `parameters`/`responseSchema` or the JSON-schema ones."""

MAX_SCHEMA_DEPTH: Final = 64
"""Deepest nesting (after inlining references) a schema may have."""

MAX_SCHEMA_NODES: Final = 10_000
"""Most schema objects one transformed schema may contain (inlining repeated references can grow it)."""

_TYPES: Final = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}

# Formats Gemini's Schema accepts for each type; any other format is dropped (Gemini rejects them).
_FORMATS: Final = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}

# Keywords copied unchanged (when their values have the right shape).
_COPIED: Final = (
    "title",
    "description",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
    "minimum",
    "maximum",
)

_JSON_SCHEMA_DROPPED: Final = frozenset({"$schema", "$id", "$comment", "discriminator"})


def _fail(message: str) -> UserError:
    return UserError(f"cannot send this JSON Schema to Gemini: {message}")


def to_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` prepared for `parametersJsonSchema` / `responseJsonSchema` (see the module docs)."""
    counter = [0]
    result = _json_schema_node(schema, 0, counter)
    assert isinstance(result, dict)
    return result  # pyright: ignore[reportUnknownVariableType]


def _json_schema_node(value: Any, depth: int, counter: list[int]) -> Any:
    if depth > MAX_SCHEMA_DEPTH and isinstance(value, dict | list):
        raise _fail(f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels")
    if isinstance(value, dict):
        counter[0] += 1
        if counter[0] > MAX_SCHEMA_NODES:
            raise _fail(f"it has more than {MAX_SCHEMA_NODES} schema objects")
        out: dict[str, Any] = {}
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            if key in _JSON_SCHEMA_DROPPED:
                continue
            if key == "const":
                if "enum" not in value:
                    out["enum"] = [item]
                continue
            if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(item, dict):
                # Names of properties are data, not keywords: only their values are schemas.
                out[key] = {
                    name: _json_schema_node(sub, depth + 1, counter)
                    for name, sub in item.items()  # pyright: ignore[reportUnknownVariableType]
                }
                continue
            out[key] = _json_schema_node(item, depth + 1, counter)
        return out
    if isinstance(value, list):
        return [_json_schema_node(item, depth + 1, counter) for item in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def to_openapi_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` rewritten into Gemini's OpenAPI-subset `Schema` (see the module docs).

    Raises [`UserError`][ferrule.core.errors.UserError] for schemas that cannot be expressed: a
    recursive reference, an unresolvable `$ref`, an `allOf` of several schemas, or a schema nested
    deeper than `MAX_SCHEMA_DEPTH` or larger than `MAX_SCHEMA_NODES`.
    """
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            for name, sub in found.items():  # pyright: ignore[reportUnknownVariableType]
                defs[f"#/{key}/{name}"] = sub
    return _OpenApi(defs).node(schema, 0, ())


class _OpenApi:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.nodes = 0

    def node(self, schema: Any, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:  # noqa: C901 - flat dispatch over JSON Schema keywords
        if depth > MAX_SCHEMA_DEPTH:
            raise _fail(f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_SCHEMA_NODES:
            raise _fail(f"it has more than {MAX_SCHEMA_NODES} schema objects after inlining references")
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            raise _fail(f"a schema must be an object, not {type(schema).__name__}")
        src: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]

        ref = src.get("$ref")
        if ref is not None:
            if not isinstance(ref, str) or ref not in self.defs:
                raise _fail(f"the reference {ref!r} does not point into $defs or definitions")
            if ref in refs:
                raise _fail(
                    f"{ref!r} refers to itself; a recursive schema needs schema_dialect='json_schema' "
                    "(parametersJsonSchema / responseJsonSchema)"
                )
            target = self.defs[ref]
            siblings = {k: v for k, v in src.items() if k not in ("$ref", "$defs", "definitions")}
            merged = self.node(target, depth + 1, (*refs, ref))
            # Keywords next to a $ref (usually a description) refine the referenced schema.
            for key in ("description", "title", "default"):
                if key in siblings:
                    merged[key] = siblings[key]
            return merged

        all_of = src.get("allOf")
        if all_of is not None:
            if not isinstance(all_of, list) or len(all_of) != 1:  # pyright: ignore[reportUnknownArgumentType]
                raise _fail("allOf with several schemas cannot be expressed; merge them into one object")
            rest = {k: v for k, v in src.items() if k != "allOf"}
            merged = self.node(all_of[0], depth + 1, refs)
            merged.update(self.node(rest, depth + 1, refs) if rest else {})
            return merged

        out: dict[str, Any] = {}
        nullable = src.get("nullable") is True

        alternatives: Any = src.get("anyOf", src.get("oneOf"))
        types: Any = src.get("type")
        if isinstance(types, list):
            listed: list[Any] = types  # pyright: ignore[reportUnknownVariableType]
            names = [t for t in listed if t != "null"]
            nullable = nullable or len(names) != len(listed)
            if len(names) == 1:
                types = names[0]
            elif not names:
                types = None
            else:
                # Several types: one alternative per type, each with the type-specific keywords.
                base = {k: v for k, v in src.items() if k not in ("type", "anyOf", "oneOf", "nullable")}
                alternatives = [{**base, "type": t} for t in names]
                types = None
        elif types == "null":
            nullable = True
            types = None

        if isinstance(alternatives, list):
            members: list[Any] = [
                m
                for m in alternatives  # pyright: ignore[reportUnknownVariableType]
                if not (isinstance(m, dict) and m.get("type") == "null" and len(m) == 1)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            ]
            nullable = nullable or len(members) != len(alternatives)  # pyright: ignore[reportUnknownArgumentType]
            converted = [self.node(m, depth + 1, refs) for m in members]
            if len(converted) == 1:
                out.update(converted[0])
            elif converted:
                out["anyOf"] = converted
            for key in ("title", "description", "default"):
                if key in src:
                    out[key] = src[key]
            if nullable:
                out["nullable"] = True
            return out

        gemini_type: str | None = None
        if isinstance(types, str):
            gemini_type = _TYPES.get(types)
            if gemini_type is None:
                raise _fail(f"unknown type {types!r}")
        elif "properties" in src:
            gemini_type = "OBJECT"
        elif "items" in src or "prefixItems" in src:
            gemini_type = "ARRAY"
        if gemini_type is not None:
            out["type"] = gemini_type

        for key in _COPIED:
            if key in src:
                out[key] = src[key]
        if "default" in src:
            out["default"] = src["default"]
        examples = src.get("examples")
        if "example" in src:
            out["example"] = src["example"]
        elif isinstance(examples, list) and examples:
            out["example"] = examples[0]

        fmt = src.get("format")
        if isinstance(fmt, str) and gemini_type is not None and fmt in _FORMATS.get(gemini_type, ()):
            out["format"] = fmt

        enum: list[Any] | None = None
        if "const" in src:
            enum = [src["const"]]
        elif isinstance(src.get("enum"), list):
            enum = list(src["enum"])
        if enum is not None:
            values = [v for v in enum if v is not None]
            nullable = nullable or len(values) != len(enum)
            if all(isinstance(v, str) for v in values):
                out["enum"] = values
                out.setdefault("type", "STRING")
            else:
                # Gemini's enum holds strings only; keep the value's type and say the choices in words.
                allowed = ", ".join(_render(v) for v in values)
                note = f"One of: {allowed}."
                out["description"] = f"{out['description']} {note}" if out.get("description") else note

        if gemini_type == "OBJECT" or "properties" in src:
            props: Any = src.get("properties")
            if isinstance(props, dict):
                items_of: dict[Any, Any] = props  # pyright: ignore[reportUnknownVariableType]
                converted_props: dict[str, Any] = {
                    str(name): self.node(sub, depth + 1, refs) for name, sub in items_of.items()
                }
                out["properties"] = converted_props
                if len(converted_props) > 1:
                    out["propertyOrdering"] = list(converted_props)
                required = src.get("required")
                if isinstance(required, list):
                    kept = [r for r in required if r in converted_props]  # pyright: ignore[reportUnknownVariableType]
                    if kept:
                        out["required"] = kept
            # additionalProperties, patternProperties and propertyNames have no Gemini equivalent.

        if gemini_type == "ARRAY" or "items" in src or "prefixItems" in src:
            prefix = src.get("prefixItems")
            items = src.get("items")
            if isinstance(prefix, list) and prefix:
                distinct: list[dict[str, Any]] = []
                for sub in [*prefix, *([items] if isinstance(items, dict) else [])]:  # pyright: ignore[reportUnknownVariableType]
                    converted_item = self.node(sub, depth + 1, refs)
                    if converted_item not in distinct:
                        distinct.append(converted_item)
                out["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
                if items is False and "maxItems" not in out:
                    out["maxItems"] = len(prefix)  # pyright: ignore[reportUnknownArgumentType]
            elif isinstance(items, dict):
                out["items"] = self.node(items, depth + 1, refs)

        if nullable:
            out["nullable"] = True
        return out


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return str(value)
