"""The fail-closed JSON Schema checker and the fastjsonschema translation behind `json_schema`.

`check` walks a schema (already normalized to plain JSON values) and raises `SchemaProblem` for
anything outside the supported subset of the dialect its root `$schema` declares (Draft 2020-12 when
it declares none; Draft 2019-09 and Draft 7 are read with their own meaning of the keywords they
spell differently). `upgrade` rewrites a checked Draft 7 or 2019-09 schema as the equivalent Draft
2020-12 one. `compile_schema` translates a checked 2020-12 schema into a Draft-07 document that
fastjsonschema compiles to Python code:

* `prefixItems`/`items` become Draft-07 array `items` plus `additionalItems`;
* `dependentRequired` becomes `dependencies`;
* `$defs` entries and the root are renamed to `#/definitions/<generated name>` so that pointer
  escapes never reach fastjsonschema's resolver, and `$ref` siblings (ignored by Draft 07) are kept
  by moving the reference into `allOf`;
* annotations (`format`, `contentEncoding`, `default`, ...) are dropped, so nothing is asserted
  from them and nothing is decoded or inserted into the validated value;
* `enum`, `const` and `uniqueItems` (JSON equality: `true` is not `1`, `1` is `1.0`) and `contains`
  with `minContains`/`maxContains` run as call-outs from the generated code, through one private
  keyword that a subclass of fastjsonschema's Draft-07 generator understands.

fastjsonschema is imported only when a schema is compiled.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any
from typing import Final
from typing import Literal
from typing import NamedTuple
from typing import cast

__all__ = [
    "DIALECTS",
    "CompiledSchema",
    "Dialect",
    "SchemaProblem",
    "check",
    "compile_schema",
    "json_key",
    "upgrade",
]


class SchemaProblem(Exception):
    """Internal signal; `json_schema` turns it into `UnsupportedJsonSchemaError` or `InvalidJsonSchemaError`."""

    def __init__(self, *, unsupported: bool, pointer: str, message: str, keyword: str | None = None) -> None:
        super().__init__(message)
        self.unsupported = unsupported
        self.pointer = pointer
        self.message = message
        self.keyword = keyword


SUPPORTED_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

Dialect = Literal["2020-12", "2019-09", "draft-07"]

DIALECTS: Final[Mapping[str, Dialect]] = {
    SUPPORTED_DIALECT: "2020-12",
    f"{SUPPORTED_DIALECT}#": "2020-12",
    "https://json-schema.org/draft/2019-09/schema": "2019-09",
    "https://json-schema.org/draft/2019-09/schema#": "2019-09",
    # The meta-schema's own id is `http://...#`; generators (zod-to-json-schema, ...) also write the others.
    "http://json-schema.org/draft-07/schema#": "draft-07",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft-07/schema#": "draft-07",
    "https://json-schema.org/draft-07/schema": "draft-07",
}
"""The accepted `$schema` values and the dialect each declares (an empty fragment is the same URI)."""

_DIALECT_NAMES: Final[Mapping[Dialect, str]] = {
    "2020-12": "Draft 2020-12",
    "2019-09": "Draft 2019-09",
    "draft-07": "Draft 7",
}

_TYPES: Final = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_SUBSCHEMA: Final = frozenset(
    {"not", "if", "then", "else", "additionalProperties", "propertyNames", "items", "contains"}
)
_SUBSCHEMA_ARRAYS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAPS: Final = frozenset({"properties", "$defs"})
_COUNTS: Final = frozenset(
    {
        "minProperties",
        "maxProperties",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minContains",
        "maxContains",
    }
)
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_STRING_ANNOTATIONS: Final = frozenset(
    {"title", "description", "format", "$comment", "contentEncoding", "contentMediaType"}
)
_BOOL_ANNOTATIONS: Final = frozenset({"readOnly", "writeOnly", "deprecated"})
_UNSUPPORTED: Final = {
    "pattern": "regular expressions are not supported by the local validator; remove `pattern` "
    "and check the string in application code or an output validator",
    "patternProperties": "regular expressions are not supported by the local validator; use "
    "`properties` with explicit names or `additionalProperties`",
    "unevaluatedProperties": "unevaluated-value keywords are not supported; use `additionalProperties`",
    "unevaluatedItems": "unevaluated-value keywords are not supported; use `items` or `prefixItems`",
    "$dynamicRef": "dynamic references are not supported; use `$ref` to `#/$defs/<name>`",
    "$dynamicAnchor": "dynamic references are not supported; use `$ref` to `#/$defs/<name>`",
    "$recursiveRef": "dynamic references are not supported; use `$ref` to `#` or `#/$defs/<name>`",
    "$recursiveAnchor": "dynamic references are not supported; use `$ref` to `#` or `#/$defs/<name>`",
    "$anchor": "anchors are not supported; reference definitions as `#/$defs/<name>`",
    "$vocabulary": "custom vocabularies are not supported; remove `$vocabulary`",
    "dependentSchemas": "`dependentSchemas` is not supported; use `dependentRequired` or `if`/`then`",
    "dependencies": "`dependencies` is Draft 7 vocabulary; use `dependentRequired` (Draft 2020-12), or "
    "declare Draft 7 in `$schema`",
    "additionalItems": "`additionalItems` is Draft 7 / 2019-09 vocabulary; use `prefixItems` with `items`, "
    "or declare that dialect in `$schema`",
    "definitions": "`definitions` is Draft 7 vocabulary; move the schemas to `$defs`, or declare Draft 7 "
    "in `$schema`",
    "contentSchema": "`contentSchema` is not supported; validate the decoded content separately",
    "discriminator": "`discriminator` is OpenAPI vocabulary, not JSON Schema; `anyOf`/`oneOf` with a "
    "`const` tag property expresses the same",
}


# Keywords of another draft that a declared dialect does not have. A validator of that dialect
# would ignore them as unknown, so they are refused instead of silently meaning nothing.
_FOREIGN: Final[Mapping[Dialect, Mapping[str, str]]] = {
    "2020-12": {},
    "2019-09": {
        "prefixItems": "`prefixItems` is Draft 2020-12 vocabulary, unknown to Draft 2019-09; give `items` "
        "an array of schemas, or declare Draft 2020-12 in `$schema`",
        "definitions": "`definitions` is Draft 7 vocabulary, not a keyword of Draft 2019-09; move the "
        "schemas to `$defs`",
        "dependencies": "`dependencies` is Draft 7 vocabulary, not a keyword of Draft 2019-09; use "
        "`dependentRequired`",
    },
    "draft-07": {
        "$defs": "`$defs` is Draft 2019-09+ vocabulary, unknown to Draft 7; put the schemas under "
        "`definitions`, or declare Draft 2020-12 in `$schema`",
        "prefixItems": "`prefixItems` is Draft 2020-12 vocabulary, unknown to Draft 7; give `items` an "
        "array of schemas, or declare Draft 2020-12 in `$schema`",
        "dependentRequired": "`dependentRequired` is Draft 2019-09+ vocabulary, unknown to Draft 7; use "
        "`dependencies` with arrays of names, or declare Draft 2020-12 in `$schema`",
        "minContains": "`minContains` is Draft 2019-09+ vocabulary, unknown to Draft 7; declare Draft "
        "2020-12 in `$schema` to count `contains` matches",
        "maxContains": "`maxContains` is Draft 2019-09+ vocabulary, unknown to Draft 7; declare Draft "
        "2020-12 in `$schema` to count `contains` matches",
    },
}


def dialect_of(root: Any) -> Dialect:
    """The dialect a schema's root `$schema` declares; Draft 2020-12 when it declares none (or one not accepted)."""
    if isinstance(root, dict):
        declared = cast("dict[str, Any]", root).get("$schema")
        if isinstance(declared, str):
            return DIALECTS.get(declared, "2020-12")
    return "2020-12"


def _container(dialect: Dialect) -> str:
    """The keyword holding reusable schemas: `definitions` in Draft 7, `$defs` since 2019-09."""
    return "definitions" if dialect == "draft-07" else "$defs"


def _definitions(root: Any, container: str = "$defs") -> dict[str, Any]:
    if isinstance(root, dict):
        found = cast("dict[str, Any]", root).get(container)
        if isinstance(found, dict):
            return cast("dict[str, Any]", found)
    return {}


def _kind(value: Any) -> str:
    return type(value).__name__


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _is_count(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and value.is_integer() and value >= 0


class _Checker:
    """One walk over a normalized schema, collecting `$ref`s to resolve once `$defs` is known."""

    def __init__(self, root: Any, max_depth: int) -> None:
        self.root = root
        self.max_depth = max_depth
        self.refs: list[tuple[str, str]] = []
        self.dialect = dialect_of(root)
        self.container = _container(self.dialect)
        self.foreign = _FOREIGN[self.dialect]

    def invalid(self, pointer: str, message: str, keyword: str | None = None) -> SchemaProblem:
        return SchemaProblem(unsupported=False, pointer=pointer, message=message, keyword=keyword)

    def unsupported(self, pointer: str, message: str, keyword: str | None = None) -> SchemaProblem:
        return SchemaProblem(unsupported=True, pointer=pointer, message=message, keyword=keyword)

    def run(self) -> None:
        root: Any = self.root
        if isinstance(root, dict) and "$schema" in root:
            # The declaration decides what every other keyword means, so it is checked first.
            self.keyword("$schema", cast("dict[str, Any]", root)["$schema"], "/$schema", 0, True)
        self.schema(self.root, "", 0)
        definitions = _definitions(self.root, self.container)
        for pointer, ref in self.refs:
            name = parse_ref(ref, self.container)
            if name is None:
                continue
            if isinstance(name, SchemaProblem):
                raise SchemaProblem(
                    unsupported=name.unsupported, pointer=pointer, message=name.message, keyword="$ref"
                )
            if name not in definitions:
                raise self.invalid(
                    pointer,
                    f"dangling reference {ref!r}: the root `{self.container}` has no entry {name!r}; "
                    "add the definition or fix the reference",
                    "$ref",
                )
        _refuse_ref_cycles(self.root, definitions, self.container)

    def schema(self, node: Any, pointer: str, depth: int) -> None:
        if depth > self.max_depth:
            raise self.invalid(
                pointer, f"schema nests deeper than {self.max_depth} levels; flatten it or use `$defs`"
            )
        if isinstance(node, bool):
            return
        if not isinstance(node, dict):
            raise self.invalid(pointer, f"a schema must be an object or a boolean, not {_kind(node)}")
        for key, value in cast("dict[str, Any]", node).items():
            self.keyword(key, value, f"{pointer}/{_escape(key)}", depth, pointer == "")

    def subschemas(self, value: Any, pointer: str, depth: int, key: str) -> None:
        if key in _SUBSCHEMA_ARRAYS:
            if not isinstance(value, list) or not value:
                raise self.invalid(pointer, f"`{key}` must be a non-empty array of schemas", key)
            for index, item in enumerate(cast("list[Any]", value)):
                self.schema(item, f"{pointer}/{index}", depth + 1)
        else:
            if not isinstance(value, dict):
                raise self.invalid(pointer, f"`{key}` must be an object mapping names to schemas", key)
            for name, item in cast("dict[str, Any]", value).items():
                self.schema(item, f"{pointer}/{_escape(name)}", depth + 1)

    def keyword(self, key: str, value: Any, pointer: str, depth: int, is_root: bool) -> None:  # noqa: C901 - flat dispatch over JSON Schema keywords
        foreign = self.foreign.get(key)
        if foreign is not None:
            raise self.unsupported(pointer, foreign, key)
        if self.dialect != "2020-12" and (
            key == "additionalItems" or (key == "items" and isinstance(value, list))
        ):
            # Draft 7 and 2019-09: `items` may be an array of per-position schemas, followed by
            # `additionalItems`.
            if key == "additionalItems":
                self.schema(value, pointer, depth + 1)
            elif not value:
                raise self.invalid(pointer, "`items` given as an array must hold at least one schema", key)
            else:
                for index, item in enumerate(cast("list[Any]", value)):
                    self.schema(item, f"{pointer}/{index}", depth + 1)
        elif self.dialect == "draft-07" and key == "definitions":
            self.subschemas(value, pointer, depth, key)
        elif self.dialect == "draft-07" and key == "dependencies":
            self.dependencies(value, pointer)
        elif key in _SUBSCHEMA:
            if key == "items" and isinstance(value, list):
                raise self.invalid(
                    pointer,
                    "in Draft 2020-12 `items` takes one schema; use `prefixItems` for per-position schemas "
                    "(or declare Draft 7 / 2019-09 in `$schema`, where an array means that)",
                    key,
                )
            self.schema(value, pointer, depth + 1)
        elif key in _SUBSCHEMA_ARRAYS or key in _SUBSCHEMA_MAPS:
            self.subschemas(value, pointer, depth, key)
        elif key == "type":
            types: list[Any] = cast("list[Any]", value) if isinstance(value, list) else [value]
            if not types or any(t not in _TYPES for t in types) or len(set(types)) != len(types):
                raise self.invalid(
                    pointer,
                    f"`type` must be one of {sorted(_TYPES)} or a non-empty array of distinct ones, "
                    f"not {value!r}",
                    key,
                )
        elif key == "enum":
            if not isinstance(value, list):
                raise self.invalid(pointer, "`enum` must be an array of allowed values", key)
        elif key == "const":
            pass
        elif key == "$ref":
            if not isinstance(value, str):
                raise self.invalid(pointer, "`$ref` must be a string", key)
            self.refs.append((pointer, value))
        elif key == "required":
            self.names(value, pointer, key)
        elif key == "dependentRequired":
            if not isinstance(value, dict):
                raise self.invalid(
                    pointer, "`dependentRequired` must map property names to arrays of names", key
                )
            for name, names in cast("dict[str, Any]", value).items():
                self.names(names, f"{pointer}/{_escape(name)}", key)
        elif key in _COUNTS:
            if not _is_count(value):
                raise self.invalid(pointer, f"`{key}` must be a non-negative integer, not {value!r}", key)
        elif key in _BOUNDS:
            if not _is_number(value):
                hint = (
                    " (Draft 4's boolean form is not valid in 2020-12; give the bound itself)"
                    if isinstance(value, bool)
                    else ""
                )
                raise self.invalid(pointer, f"`{key}` must be a finite number, not {value!r}{hint}", key)
        elif key == "multipleOf":
            if not _is_number(value) or value <= 0:
                raise self.invalid(
                    pointer, f"`multipleOf` must be a number greater than 0, not {value!r}", key
                )
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                raise self.invalid(pointer, "`uniqueItems` must be a boolean", key)
        elif key in _STRING_ANNOTATIONS:
            if not isinstance(value, str):
                raise self.invalid(pointer, f"`{key}` must be a string", key)
        elif key in _BOOL_ANNOTATIONS:
            if not isinstance(value, bool):
                raise self.invalid(pointer, f"`{key}` must be a boolean", key)
        elif key == "default":
            pass
        elif key == "examples":
            if not isinstance(value, list):
                raise self.invalid(pointer, "`examples` must be an array", key)
        elif key == "$schema":
            if not is_root:
                raise self.unsupported(
                    pointer, "`$schema` is only supported at the root (embedded resources are not)", key
                )
            if not isinstance(value, str) or value not in DIALECTS:
                raise self.unsupported(
                    pointer,
                    f"dialect {value!r} is not supported; declare Draft 2020-12 ({SUPPORTED_DIALECT!r}), "
                    "Draft 2019-09 or Draft 7, or omit `$schema`",
                    key,
                )
        elif key == "$id":
            if not is_root:
                raise self.unsupported(
                    pointer, "`$id` is only supported at the root (embedded resources are not)", key
                )
            if not isinstance(value, str) or urllib.parse.urldefrag(value).fragment:
                raise self.invalid(pointer, "`$id` must be a URI string without a fragment", key)
        elif key in _UNSUPPORTED:
            raise self.unsupported(pointer, _UNSUPPORTED[key], key)
        else:
            raise self.unsupported(
                pointer,
                f"unknown keyword {key!r}: the local validator rejects keywords it does not implement "
                "instead of ignoring them; remove it or use a supported keyword (see docs/json.md)",
                key,
            )

    def dependencies(self, value: Any, pointer: str) -> None:
        """Draft 7 `dependencies`: arrays of names are supported (they are `dependentRequired`)."""
        if not isinstance(value, dict):
            raise self.invalid(
                pointer, "`dependencies` must map property names to arrays of names", "dependencies"
            )
        for name, item in cast("dict[str, Any]", value).items():
            where = f"{pointer}/{_escape(name)}"
            if isinstance(item, (dict, bool)):
                raise self.unsupported(
                    where,
                    "the schema form of `dependencies` (a schema applied when the property is present) is "
                    "not supported; use `if`/`then`, or an array of names the property requires",
                    "dependencies",
                )
            self.names(item, where, "dependencies")

    def names(self, value: Any, pointer: str, key: str) -> None:
        if (
            not isinstance(value, list)
            or any(not isinstance(name, str) for name in value)  # type: ignore[union-attr]
            or len(set(value)) != len(value)  # type: ignore[arg-type]
        ):
            raise self.invalid(pointer, f"`{key}` must be an array of distinct property names", key)


def parse_ref(ref: str, container: str = "$defs") -> str | SchemaProblem | None:
    """The definition name a supported `$ref` points at, `None` for the root, or why it is unsupported.

    `container` is where definitions live: `$defs`, or `definitions` in Draft 7.
    """
    if ref == "#":
        return None
    if not ref.startswith("#"):
        return SchemaProblem(
            unsupported=True,
            pointer="",
            message=f"reference {ref!r} is not local; remote references are never fetched: inline the "
            f"schema under `{container}` and reference it as `#/{container}/<name>`",
        )
    pointer = urllib.parse.unquote(ref[1:])
    prefix = f"/{container}/"
    if not pointer.startswith(prefix) or pointer.count("/") != 2:
        return SchemaProblem(
            unsupported=True,
            pointer="",
            message=f"reference {ref!r} is not supported; only `#` and `#/{container}/<name>` are "
            "(general JSON Pointers and anchors are not)",
        )
    token = pointer[len(prefix) :]
    if "~" in token.replace("~0", "").replace("~1", ""):
        return SchemaProblem(
            unsupported=False,
            pointer="",
            message=f"reference {ref!r} has an invalid JSON Pointer escape; use `~0` for `~` and `~1` for `/`",
        )
    return token.replace("~1", "/").replace("~0", "~")


# Keywords that apply their subschemas to the same value, not to a part of it: a `$ref` cycle made
# only of these never reaches a smaller value, so validating anything against it never ends.
_IN_PLACE: Final = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"})


def _in_place_refs(node: Any, container: str) -> Iterator[str | None]:
    """The definitions (`None` for the root) that `node` applies to its own value."""
    if not isinstance(node, dict):
        return
    for key, value in cast("dict[str, Any]", node).items():
        if key == "$ref":
            name = parse_ref(value, container)
            if not isinstance(name, SchemaProblem):
                yield name
        elif key in _IN_PLACE:
            children: list[Any]
            if isinstance(value, list):
                children = cast("list[Any]", value)
            elif key == "dependentSchemas" and isinstance(value, dict):
                children = list(cast("dict[str, Any]", value).values())
            else:
                children = [value]
            for child in children:
                yield from _in_place_refs(child, container)


def _refuse_ref_cycles(root: Any, definitions: Mapping[str, Any], container: str) -> None:
    """Raise `SchemaProblem` when `$ref`s lead back to a schema without descending into the value."""
    edges: dict[str | None, set[str | None]] = {
        name: set(_in_place_refs(schema, container)) for name, schema in definitions.items()
    }
    edges[None] = set(_in_place_refs(root, container))
    done: set[str | None] = set()
    for start in edges:
        path: list[str | None] = []
        stack: list[tuple[str | None, Iterator[str | None]]] = [(start, iter(edges.get(start, ())))]
        on_path = {start}
        path.append(start)
        while stack:
            node, children = stack[-1]
            child = next(children, _END)
            if child is _END:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
                continue
            if child in on_path:
                cycle = [*path[path.index(child) :], child]
                shown = " -> ".join("#" if name is None else f"#/{container}/{name}" for name in cycle)
                raise SchemaProblem(
                    unsupported=False,
                    pointer="",
                    message=f"`$ref` cycle {shown} never descends into the value, so validation would "
                    "never end; put the recursion under `properties`, `items` or another keyword that "
                    "applies to a part of the value",
                    keyword="$ref",
                )
            if child not in done:
                on_path.add(child)
                path.append(child)
                stack.append((child, iter(edges.get(child, ()))))


_END: Final[Any] = object()


def check(schema: Any, *, max_depth: int) -> None:
    """Raise `SchemaProblem` unless `schema` (plain JSON values) is in the supported subset."""
    _Checker(schema, max_depth).run()


# --- Draft 7 and 2019-09 to Draft 2020-12 ------------------------------------------------------

_ANNOTATIONS: Final = _STRING_ANNOTATIONS | _BOOL_ANNOTATIONS | {"default", "examples"}


def upgrade(schema: Any) -> Any:
    """The Draft 2020-12 equivalent of a checked schema (a fresh structure; values may be shared).

    A schema that declares no dialect or Draft 2020-12 is returned as it is. Otherwise `$schema` is
    removed and the keywords the drafts spell differently are rewritten: an array `items` becomes
    `prefixItems` and `additionalItems` beside it becomes `items` (elsewhere it has no effect and is
    removed); in Draft 7, `definitions` becomes `$defs` (and `#/definitions/<name>` references
    `#/$defs/<name>`), `dependencies` becomes `dependentRequired`, and the siblings of `$ref`, which
    Draft 7 ignores, are removed except annotations and `definitions`.
    """
    dialect = dialect_of(schema)
    if dialect == "2020-12":
        return schema
    return _Upgrade(dialect).schema(schema)


class _Upgrade:
    def __init__(self, dialect: Dialect) -> None:
        self.draft7 = dialect == "draft-07"

    def schema(self, node: Any) -> Any:
        if isinstance(node, bool):
            return node
        source = cast("dict[str, Any]", node)
        if self.draft7 and "$ref" in source:
            source = {
                key: value
                for key, value in source.items()
                if key in ("$ref", "$id", "definitions") or key in _ANNOTATIONS
            }
        out: dict[str, Any] = {}
        for key, value in source.items():
            if key in ("$schema", "additionalItems"):
                continue  # the dialect is now the default; `additionalItems` is handled with `items`
            if key == "items" and isinstance(value, list):
                out["prefixItems"] = [self.schema(item) for item in cast("list[Any]", value)]
                if "additionalItems" in source:
                    out["items"] = self.schema(source["additionalItems"])
            elif key == "$ref":
                out[key] = self.ref(value)
            elif key == "dependencies":
                out["dependentRequired"] = {name: list(names) for name, names in value.items()}
            elif key in _SUBSCHEMA:
                out[key] = self.schema(value)
            elif key in _SUBSCHEMA_ARRAYS:
                out[key] = [self.schema(item) for item in value]
            elif key in _SUBSCHEMA_MAPS or key == "definitions":
                out["$defs" if key == "definitions" else key] = {
                    name: self.schema(item) for name, item in value.items()
                }
            else:
                out[key] = value
        return out

    def ref(self, ref: str) -> str:
        if not self.draft7:
            return ref
        name = parse_ref(ref, "definitions")
        if name is None or isinstance(name, SchemaProblem):
            return ref  # `#` (a checked schema has no other kind)
        return "#/$defs/" + urllib.parse.quote(_escape(name), safe="")


# --- JSON equality --------------------------------------------------------------------------


def json_key(value: Any) -> Any:
    """A hashable key with JSON equality: `True` differs from `1`, `1` equals `1.0`, key order is ignored."""
    if isinstance(value, str):
        return str(value)  # a plain str is returned as is; a subclass becomes one
    if isinstance(value, bool):
        return (bool, value)
    if isinstance(value, (int, float)):
        return (float, value)
    if value is None:
        return (None,)
    if isinstance(value, (list, tuple)):
        return (list, tuple(json_key(item) for item in cast("list[Any]", value)))
    if isinstance(value, dict):
        return (dict, frozenset((key, json_key(item)) for key, item in cast("dict[Any, Any]", value).items()))
    return (object, id(value))


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _enum_check(values: list[Any]) -> Callable[[Any], str | None]:
    keys = frozenset(json_key(value) for value in values)
    shown = _brief(values)

    def check_enum(value: Any) -> str | None:
        return None if json_key(value) in keys else f"must be one of {shown}"

    return check_enum


def _const_check(expected: Any) -> Callable[[Any], str | None]:
    key = json_key(expected)
    shown = _brief(expected)

    def check_const(value: Any) -> str | None:
        return None if json_key(value) == key else f"must be {shown}"

    return check_const


def _unique_check(value: Any) -> str | None:
    if not isinstance(value, (list, tuple)):
        return None
    seen: dict[Any, int] = {}
    for index, item in enumerate(value):  # type: ignore[arg-type]
        key = json_key(item)
        if key in seen:
            return f"must contain unique items (items {seen[key]} and {index} are equal)"
        seen[key] = index
    return None


# --- translation --------------------------------------------------------------------------


class _Contains(NamedTuple):
    """A `contains` with `minContains`/`maxContains`: its subschema is compiled as `definition`."""

    definition: str
    minimum: int
    maximum: int | None


class _Translation:
    """Draft 2020-12 (checked) to Draft 07 (fastjsonschema), collecting call-outs and definitions."""

    def __init__(self, root: Any) -> None:
        self.names: dict[str, str] = {}
        definitions = _definitions(root)
        for index, name in enumerate(definitions):
            self.names[name] = f"d{index}"
        self.definitions: dict[str, Any] = {}
        self.checks: list[tuple[str, Callable[[Any], str | None] | _Contains]] = []
        self.contains = 0
        self.definitions["root"] = self.schema(root)
        for name, target in self.names.items():
            self.definitions[target] = self.schema(definitions[name])

    def ref(self, ref: str) -> str:
        name = parse_ref(ref)
        assert not isinstance(name, SchemaProblem)
        return "#/definitions/" + ("root" if name is None else self.names[name])

    def add(self, keyword: str, function: Callable[[Any], str | None] | _Contains) -> int:
        self.checks.append((keyword, function))
        return len(self.checks) - 1

    def schema(self, node: Any) -> Any:  # noqa: C901 - flat dispatch over JSON Schema keywords
        if isinstance(node, bool):
            return node
        out: dict[str, Any] = {}
        checks: list[int] = []
        refs: list[dict[str, Any]] = []
        for key, value in node.items():
            if key in (
                "type",
                "required",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ):
                out[key] = value
            elif key in _COUNTS and key not in ("minContains", "maxContains"):
                out[key] = int(value)
            elif key in ("allOf", "anyOf", "oneOf"):
                out[key] = [self.schema(item) for item in value]
            elif key in ("not", "if", "propertyNames"):
                out[key] = self.schema(value)
            elif key in ("then", "else"):
                if "if" in node:
                    out[key] = self.schema(value)
            elif key == "properties":
                out[key] = {name: self.schema(item) for name, item in value.items()}
            elif key == "additionalProperties":
                out[key] = self.schema(value)
            elif key == "dependentRequired":
                out["dependencies"] = {name: list(names) for name, names in value.items()}
            elif key == "enum":
                checks.append(self.add("enum", _enum_check(value)))
            elif key == "const":
                checks.append(self.add("const", _const_check(value)))
            elif key == "uniqueItems":
                if value:
                    checks.append(self.add("uniqueItems", _unique_check))
            elif key == "$ref":
                refs.append({"$ref": self.ref(value)})
            # Everything else is an annotation, `$defs` (translated once, from the root) or one of
            # the array keywords handled below.
        if "prefixItems" in node:
            out["items"] = [self.schema(item) for item in node["prefixItems"]]
            if "items" in node:
                out["additionalItems"] = self.schema(node["items"])
        elif "items" in node:
            out["items"] = self.schema(node["items"])
        if "contains" in node:
            minimum = int(node.get("minContains", 1))
            maximum = int(node["maxContains"]) if "maxContains" in node else None
            if minimum == 1 and maximum is None:
                out["contains"] = self.schema(node["contains"])
            elif minimum > 0 or maximum is not None:
                target = f"c{self.contains}"
                self.contains += 1
                self.definitions[target] = self.schema(node["contains"])
                checks.append(self.add("contains", _Contains(target, minimum, maximum)))
        if out.get("additionalProperties") is False and "required" in out:
            # fastjsonschema refuses to compile a required name that additionalProperties forbids;
            # the equivalent `{"not": {}}` keeps the (unsatisfiable) meaning and compiles.
            allowed = set(out.get("properties", {}))
            if any(name not in allowed for name in out["required"]):
                out["additionalProperties"] = {"not": {}}
        if refs:
            # Draft 07 ignores the siblings of `$ref`; 2020-12 applies them. `allOf` keeps both.
            out["allOf"] = refs + out.get("allOf", [])
        if checks:
            out[_CALLOUT] = checks
        return out


_CALLOUT: Final = "ferruleChecks"


class CompiledSchema(NamedTuple):
    """A compiled validation function and the exception type it raises."""

    function: Callable[[Any], Any]
    error: type[Exception]


class _NoRemoteRefs(dict[str, Callable[[str], Any]]):
    """A handler mapping that claims every URI scheme and refuses to fetch anything."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> Callable[[str], Any]:
        return _refuse_remote


def _refuse_remote(uri: str) -> Any:
    from fastjsonschema import JsonSchemaDefinitionException

    raise JsonSchemaDefinitionException(f"remote reference {uri!r} is never fetched")


Callout = Callable[[Any], "str | None"]


def _generate(document: dict[str, Any], callouts: list[Callout], keywords: list[str]) -> Callable[[Any], Any]:
    """Compile one Draft-07 document with the call-out keyword; the fastjsonschema internals live here.

    `callouts` may still be filling up: generated code looks its entries up when it runs.
    """
    from fastjsonschema.draft07 import CodeGeneratorDraft07
    from fastjsonschema.ref_resolver import RefResolver

    # fastjsonschema has no annotations, so pyright sees its members as unknown.
    class Generator(CodeGeneratorDraft07):
        def __init__(self, definition: Any, resolver: Any) -> None:
            super().__init__(definition, resolver=resolver, formats={}, use_default=False, use_formats=False)  # pyright: ignore[reportUnknownMemberType]
            self._json_keywords_to_function[_CALLOUT] = self.generate_ferrule_checks  # pyright: ignore[reportUnknownMemberType]

        @property
        def global_state(self) -> dict[str, Any]:
            state: dict[str, Any] = dict(cast("dict[str, Any]", super().global_state))  # pyright: ignore[reportUnknownMemberType]
            state["FERRULE_CHECKS"] = callouts
            return state

        def generate_ferrule_checks(self) -> None:
            indexes: list[int] = cast("dict[str, Any]", self._definition)[_CALLOUT]  # pyright: ignore[reportUnknownMemberType]
            for index in indexes:
                self.l("ferrule_error = FERRULE_CHECKS[{}]({variable})", index)  # pyright: ignore[reportUnknownMemberType]
                with self.l("if ferrule_error is not None:"):  # pyright: ignore[reportUnknownMemberType]
                    self.exc("{name} ", append_to_msg="ferrule_error", rule=keywords[index])  # pyright: ignore[reportUnknownMemberType]

    resolver = RefResolver.from_schema(document, handlers=_NoRemoteRefs(), store={})
    generator = Generator(document, resolver)
    code: str = generator.func_code
    state: dict[str, Any] = generator.global_state
    # The code is generated from a checked, translated schema whose values are type-checked.
    exec(code, state)
    return state[resolver.get_scope_name()]


def compile_schema(schema: Any) -> CompiledSchema:
    """Translate a checked schema and compile it; fastjsonschema errors propagate to the caller."""
    from fastjsonschema import JsonSchemaValueException

    translation = _Translation(schema)
    keywords = [keyword for keyword, _ in translation.checks]
    callouts: list[Callout] = []
    for _, entry in translation.checks:
        if isinstance(entry, _Contains):
            entry = _contains_check(entry, translation.definitions, callouts, keywords)
        callouts.append(entry)
    document = {"$ref": "#/definitions/root", "definitions": translation.definitions}
    return CompiledSchema(_generate(document, callouts, keywords), JsonSchemaValueException)


def _contains_check(
    spec: _Contains, definitions: dict[str, Any], callouts: list[Callout], keywords: list[str]
) -> Callout:
    from fastjsonschema import JsonSchemaValueException

    document = {"$ref": f"#/definitions/{spec.definition}", "definitions": definitions}
    matcher = _generate(document, callouts, keywords)

    def matches(item: Any) -> bool:
        try:
            matcher(item)
        except JsonSchemaValueException:
            return False
        return True

    def check_contains(value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return None
        found = sum(1 for item in value if matches(item))  # type: ignore[union-attr]
        if found < spec.minimum:
            return f"must contain at least {spec.minimum} item(s) matching `contains` (found {found})"
        if spec.maximum is not None and found > spec.maximum:
            return f"must contain at most {spec.maximum} item(s) matching `contains` (found {found})"
        return None

    return check_contains


def walk_subschemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema object in `node` (itself included), following only schema positions."""
    if not isinstance(node, dict):
        return
    yield node
    for key, value in node.items():  # type: ignore[union-attr]
        if key in _SUBSCHEMA:
            yield from walk_subschemas(value)
        elif key in _SUBSCHEMA_ARRAYS and isinstance(value, list):
            for item in value:  # type: ignore[union-attr]
                yield from walk_subschemas(item)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            for item in value.values():  # type: ignore[union-attr]
                yield from walk_subschemas(item)
