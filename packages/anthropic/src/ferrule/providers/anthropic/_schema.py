"""The JSON Schema subset Anthropic's structured outputs and strict tools accept.

Constrained decoding on the Messages API understands types, properties, `required`, `enum`,
`anyOf`/`allOf`, `$ref`/`$defs`, a few string formats and `minItems` of 0 or 1, and it requires
`additionalProperties: false` on every object. Other keywords are not enforced by the API; instead of
dropping them silently they are appended to the schema's description (`{minimum: 0, maximum: 1}`)
so the model still sees them, and the agent's local validation still enforces them.
"""

from __future__ import annotations

from typing import Any
from typing import Final
from typing import cast

from ferrule.core.errors import UserError

__all__ = ["strict_schema"]

_STRING_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
# Deep schemas are a sign of a mistake, and recursion must stay bounded for untrusted (MCP) schemas.
_MAX_DEPTH: Final = 64


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` rewritten into the subset the API enforces (a new object; the input is not changed).

    Raises `UserError` for a schema node without `type`, `enum`, `const`, `anyOf`, `oneOf`,
    `allOf` or `$ref`, which the API cannot constrain.
    """
    return _node(schema, 0, "#")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _node(raw: Any, depth: int, where: str) -> dict[str, Any]:  # noqa: C901 - flat dispatch over JSON Schema keywords
    if depth > _MAX_DEPTH:
        raise UserError(f"JSON schema at {where} is nested deeper than {_MAX_DEPTH} levels")
    if not isinstance(raw, dict):
        raise UserError(f"JSON schema at {where} must be an object, not {type(raw).__name__}")
    rest: dict[str, Any] = dict(raw)  # pyright: ignore[reportUnknownArgumentType]
    out: dict[str, Any] = {}
    rest.pop("title", None)
    rest.pop("$schema", None)
    defs = rest.pop("$defs", None)
    if isinstance(defs, dict):
        out["$defs"] = {
            str(name): _node(sub, depth + 1, f"{where}/$defs/{name}")
            for name, sub in cast("dict[Any, Any]", defs).items()
        }
    ref = rest.pop("$ref", None)
    if isinstance(ref, str):
        out["$ref"] = ref
        description = rest.pop("description", None)
        if isinstance(description, str):
            out["description"] = description
        return out

    type_ = rest.pop("type", None)
    any_of = rest.pop("anyOf", None)
    one_of = rest.pop("oneOf", None)
    all_of = rest.pop("allOf", None)
    enum = rest.pop("enum", None)
    const = rest.pop("const", None) if "const" in rest else _MISSING
    if isinstance(any_of, list) or isinstance(one_of, list):
        variants = cast("list[Any]", any_of if isinstance(any_of, list) else one_of)
        out["anyOf"] = [_node(v, depth + 1, f"{where}/anyOf/{i}") for i, v in enumerate(variants)]
    elif isinstance(all_of, list):
        items: list[Any] = all_of  # pyright: ignore[reportUnknownVariableType]
        out["allOf"] = [_node(v, depth + 1, f"{where}/allOf/{i}") for i, v in enumerate(items)]
    elif type_ is None and enum is None and const is _MISSING:
        raise UserError(
            f"JSON schema at {where} has no type, enum, const, anyOf or allOf, so Anthropic cannot "
            "enforce it; give it a type or use tool or prompted output instead of native output"
        )
    if type_ is not None:
        if isinstance(type_, list):
            # A type union is spelled as anyOf in the supported subset.
            kinds: list[Any] = type_  # pyright: ignore[reportUnknownVariableType]
            if not all(isinstance(k, str) and k in _TYPES for k in kinds):
                raise UserError(f"JSON schema at {where} has an unsupported type {kinds!r}")
            out["anyOf"] = [_node({**rest, "type": k}, depth + 1, f"{where}/type/{k}") for k in kinds]
            rest = {}
            type_ = None
        elif isinstance(type_, str) and type_ in _TYPES:
            out["type"] = type_
        else:
            raise UserError(f"JSON schema at {where} has an unsupported type {type_!r}")
    if isinstance(enum, list):
        out["enum"] = enum
    elif enum is not None:
        rest["enum"] = enum
    if const is not _MISSING:
        out["const"] = const
    description = rest.pop("description", None)
    if isinstance(description, str):
        out["description"] = description

    if type_ == "object":
        properties = rest.pop("properties", {})
        if not isinstance(properties, dict):
            raise UserError(f"JSON schema at {where} has non-object properties")
        out["properties"] = {
            str(name): _node(sub, depth + 1, f"{where}/properties/{name}")
            for name, sub in cast("dict[Any, Any]", properties).items()
        }
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
        required = rest.pop("required", None)
        if isinstance(required, list):
            out["required"] = required
    elif type_ == "string":
        fmt = rest.pop("format", None)
        if isinstance(fmt, str) and fmt in _STRING_FORMATS:
            out["format"] = fmt
        elif fmt is not None:
            rest["format"] = fmt
    elif type_ == "array":
        items_schema = rest.pop("items", None)
        if items_schema is not None:
            out["items"] = _node(items_schema, depth + 1, f"{where}/items")
        min_items = rest.pop("minItems", None)
        if type(min_items) is int and min_items in (0, 1):
            out["minItems"] = min_items
        elif min_items is not None:
            rest["minItems"] = min_items

    # What the API cannot enforce goes into the description, so the model can still follow it.
    if rest:
        note = "{" + ", ".join(f"{key}: {_describe(value)}" for key, value in rest.items()) + "}"
        previous = out.get("description")
        out["description"] = f"{previous}\n\n{note}" if previous else note
    return out


_MISSING: Final = object()
