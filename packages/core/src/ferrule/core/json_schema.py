"""JSON Schemas: derived from Python types, checked against a fail-closed dialect, validated locally.

* [`schema_for`][ferrule.core.json_schema.schema_for] derives a schema from a type hint (Structs,
  dataclasses, TypedDicts, builtins, unions, `Literal`, `Enum`, ...) with msgspec.
* [`check_schema`][ferrule.core.json_schema.check_schema] checks a hand-written schema against the
  supported subset of Draft 2020-12 (or of Draft 2019-09 or Draft 7, when its `$schema` declares
  one) before it is used. Keywords outside the subset are rejected
  ([`UnsupportedJsonSchemaError`][ferrule.core.json_schema.UnsupportedJsonSchemaError]), never
  ignored; malformed vocabulary is [`InvalidJsonSchemaError`][ferrule.core.json_schema.InvalidJsonSchemaError].
* [`to_draft_2020_12`][ferrule.core.json_schema.to_draft_2020_12] checks a schema and returns its
  Draft 2020-12 equivalent (Draft 7 and 2019-09 spellings rewritten).
* [`compile_validator`][ferrule.core.json_schema.compile_validator] compiles a checked schema into a
  cached [`SchemaValidator`][ferrule.core.json_schema.SchemaValidator] (fastjsonschema underneath,
  imported on first compile) that validates decoded JSON values with JSON semantics.

The supported subset and its limits are documented in `docs/json.md`.
"""

from __future__ import annotations

import collections
import re
import threading
from collections.abc import Mapping
from typing import Any
from typing import Final
from typing import cast

import msgspec

from . import bounded_json
from ._schema_compile import DIALECTS
from ._schema_compile import SUPPORTED_DIALECT as _DIALECT
from ._schema_compile import SchemaProblem
from ._schema_compile import check
from ._schema_compile import upgrade
from ._schema_compile import walk_subschemas
from .errors import FerruleError
from .errors import UserError

__all__ = [
    "SUPPORTED_DIALECT",
    "SUPPORTED_DIALECTS",
    "InvalidJsonSchemaError",
    "JsonSchemaError",
    "SchemaInput",
    "SchemaValidationError",
    "SchemaValidator",
    "UnsupportedJsonSchemaError",
    "check_schema",
    "compile_validator",
    "schema_for",
    "to_draft_2020_12",
]

SUPPORTED_DIALECT: Final = _DIALECT
"""The native dialect, JSON Schema Draft 2020-12: what a schema without `$schema` is read as."""

SUPPORTED_DIALECTS: Final = frozenset(DIALECTS)
"""Every accepted `$schema` value: Draft 2020-12, Draft 2019-09 and Draft 7 (with or without the empty
fragment `#`; Draft 7 also as `https`). The same keyword subset is supported in each, read with the
meaning its dialect gives it."""

SchemaInput = Mapping[str, Any] | bool | bytes | bytearray | memoryview | str
"""A schema as a decoded mapping (or boolean schema) or as JSON text, which is decoded with the
`SCHEMA` limits first."""

_CACHE_SIZE: Final = 512


class JsonSchemaError(UserError):
    """A JSON Schema cannot be used; fix the schema, retrying will not help."""

    def __init__(self, message: str, *, pointer: str = "", keyword: str | None = None) -> None:
        self.pointer = pointer
        """JSON Pointer of the offending keyword inside the schema (`""` for the root)."""
        self.keyword = keyword
        """The offending keyword, when there is one."""
        self.detail = message
        """What is wrong and what to do, without the location."""
        super().__init__(f"JSON Schema at '#{pointer}': {message}")


class InvalidJsonSchemaError(JsonSchemaError):
    """Supported vocabulary is malformed: a wrong value type, a negative count, a dangling `$ref`, ..."""


class UnsupportedJsonSchemaError(JsonSchemaError):
    """Valid JSON Schema that the local dialect does not implement (regex, remote refs, unknown keywords, ...)."""


class SchemaValidationError(FerruleError):
    """A value does not satisfy a schema; `path` says where and `message` what is wrong."""

    def __init__(self, message: str, *, path: list[str | int], keyword: str | None = None) -> None:
        self.path = path
        """Keys and indexes from the validated value's root to the offending value."""
        self.message = message
        """What is wrong with the value at `path`, e.g. `"must be integer"`."""
        self.keyword = keyword
        """The schema keyword that failed, when known (`"type"`, `"required"`, ...)."""
        super().__init__(f"{render_path(path)}: {message}")


_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def render_path(path: list[str | int]) -> str:
    """Render a value path as `$.items[2]["odd key"]`."""
    parts = ["$"]
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _IDENTIFIER.match(step):
            parts.append(f".{step}")
        else:
            parts.append(f"[{msgspec.json.encode(step).decode()}]")
    return "".join(parts)


def _value_path(name: str, value: Any) -> list[str | int]:
    """Recover the path from fastjsonschema's `data.key[0]...` name, using the value to split keys."""
    rest = name[4:] if name.startswith("data") else name
    path: list[str | int] = []
    current = value
    while rest:
        if rest[0] == "[" and "]" in rest:
            index_text, _, tail = rest[1:].partition("]")
            if index_text.isdigit() and isinstance(current, (list, tuple)):
                index = int(index_text)
                path.append(index)
                current = current[index] if index < len(current) else None  # type: ignore[arg-type]
                rest = tail
                continue
        if rest[0] == ".":
            rest = rest[1:]
            key = None
            if isinstance(current, dict):
                # The longest key that the name continues with and that ends at a separator.
                for candidate in current:  # type: ignore[union-attr]
                    if (
                        isinstance(candidate, str)
                        and rest.startswith(candidate)
                        and (len(rest) == len(candidate) or rest[len(candidate)] in ".[")
                        and (key is None or len(candidate) > len(key))
                    ):
                        key = candidate
            if key is None:
                key = re.split(r"[.\[]", rest, maxsplit=1)[0]
                current = None
            else:
                current = current[key]  # type: ignore[index]
            path.append(key)
            rest = rest[len(key) :]
            continue
        break
    return path


class SchemaValidator:
    """A compiled, reusable validator for one checked schema; obtain it from `compile_validator`."""

    __slots__ = ("_canonical", "_error", "_function")

    def __init__(self, canonical: bytes, function: Any, error: type[Exception]) -> None:
        self._canonical = canonical
        self._function = function
        self._error = error

    @property
    def schema(self) -> dict[str, Any] | bool:
        """A fresh copy of the (normalized) schema this validator checks."""
        return msgspec.json.decode(self._canonical)

    def validate(self, value: Any) -> None:
        """Raise [`SchemaValidationError`][ferrule.core.json_schema.SchemaValidationError] unless `value` conforms.

        `value` is a decoded JSON value (dict, list, str, int, float, bool, None); it is never modified.
        """
        try:
            self._function(value)
        except self._error as exc:
            name: str = getattr(exc, "name", None) or "data"
            message: str = getattr(exc, "message", str(exc))
            if message.startswith(name):
                message = message[len(name) :].strip()
            raise SchemaValidationError(
                message, path=_value_path(name, value), keyword=getattr(exc, "rule", None)
            ) from None

    def is_valid(self, value: Any) -> bool:
        """Whether `value` conforms to the schema."""
        try:
            self._function(value)
        except self._error:
            return False
        return True

    def __repr__(self) -> str:
        text = self._canonical.decode()
        return f"SchemaValidator({text if len(text) <= 60 else text[:57] + '...'})"


def _raise_problem(problem: SchemaProblem) -> None:
    cls = UnsupportedJsonSchemaError if problem.unsupported else InvalidJsonSchemaError
    raise cls(problem.message, pointer=problem.pointer, keyword=problem.keyword) from None


def _normalize(schema: SchemaInput) -> tuple[bytes, Any, Any]:
    """Canonical JSON bytes (sorted keys, within the `SCHEMA` limits), a fresh decoded copy of them,
    and the decoded input (the caller's own mapping, or the value decoded from text, in its key order)."""
    limits = bounded_json.SCHEMA
    value: Any
    if isinstance(schema, (bytes, bytearray, memoryview, str)):
        try:
            value = bounded_json.decode(schema, limits=limits)
        except bounded_json.JsonError as exc:
            raise InvalidJsonSchemaError(f"the schema document was rejected: {exc}") from exc
    else:
        value = schema
    if not isinstance(value, (Mapping, bool)):
        raise InvalidJsonSchemaError(f"a schema must be an object or a boolean, not {type(value).__name__}")
    try:
        canonical = msgspec.json.encode(value, order="sorted")
    except RecursionError:
        raise InvalidJsonSchemaError(
            f"the schema nests too deeply (the limit is {limits.max_depth} levels) or contains itself"
        ) from None
    except (TypeError, msgspec.EncodeError) as exc:
        raise InvalidJsonSchemaError(f"the schema is not plain JSON data: {exc}") from None
    try:
        bounded_json.validate(canonical, limits)
    except bounded_json.JsonLimitError as exc:
        raise InvalidJsonSchemaError(f"the schema is too large: {exc}") from exc
    return canonical, msgspec.json.decode(canonical), cast("Any", value)


def check_schema(schema: SchemaInput) -> None:
    """Check `schema` against the supported subset of its dialect; the input is never modified.

    The dialect is the one the root `$schema` declares (one of `SUPPORTED_DIALECTS`), Draft 2020-12
    when there is none. Keywords of another draft that the declared one lacks are refused.

    Raises [`UnsupportedJsonSchemaError`][ferrule.core.json_schema.UnsupportedJsonSchemaError] for
    valid vocabulary the local validator does not implement and
    [`InvalidJsonSchemaError`][ferrule.core.json_schema.InvalidJsonSchemaError] for malformed
    vocabulary, both naming the JSON Pointer of the offending keyword. A schema given as text must
    pass the `SCHEMA` JSON limits; a mapping must stay within the same size and depth once encoded.
    """
    _, value, _ = _normalize(schema)
    _check(value)


def to_draft_2020_12(schema: SchemaInput) -> dict[str, Any] | bool:
    """Check `schema` like `check_schema` and return its Draft 2020-12 equivalent, a fresh copy.

    A schema in Draft 2020-12 (declared or not) comes back equal to the input. A Draft 7 or 2019-09
    one comes back without `$schema` and with the keywords those drafts spell differently rewritten,
    with the same meaning: an array `items` becomes `prefixItems` and `additionalItems` beside it
    becomes `items`; in Draft 7, `definitions` becomes `$defs` (with its references),
    `dependencies` becomes `dependentRequired`, and the siblings of a `$ref` (which Draft 7 ignores)
    are dropped, except annotations. Key order is kept.
    """
    _, value, original = _normalize(schema)
    _check(value)
    if isinstance(original, bool):
        return original
    # An order-preserving copy: properties stay in the author's order (models see it).
    copy: Any = msgspec.json.decode(msgspec.json.encode(original))
    return cast("dict[str, Any] | bool", upgrade(copy))


def _check(value: Any) -> None:
    try:
        check(value, max_depth=bounded_json.SCHEMA.max_depth)
    except SchemaProblem as problem:
        _raise_problem(problem)


_cache: collections.OrderedDict[bytes, SchemaValidator] = collections.OrderedDict()
_cache_lock = threading.Lock()


def compile_validator(schema: SchemaInput) -> SchemaValidator:
    """Check `schema` and compile it into a [`SchemaValidator`][ferrule.core.json_schema.SchemaValidator].

    Validators are cached by the canonical JSON of the schema (least recently used first out, at
    most 512), so equal schemas return the same object. The input is never modified.
    """
    canonical, value, _ = _normalize(schema)
    with _cache_lock:
        cached = _cache.get(canonical)
        if cached is not None:
            _cache.move_to_end(canonical)
            return cached
    _check(value)
    from ._schema_compile import compile_schema

    try:
        compiled = compile_schema(upgrade(value))
    except RecursionError:
        raise InvalidJsonSchemaError("the schema's references nest too deeply to compile") from None
    except Exception as exc:  # fastjsonschema's definition errors and anything its codegen raises
        raise InvalidJsonSchemaError(
            f"the schema passed the dialect check but could not be compiled ({type(exc).__name__}: {exc}); "
            "simplify it or report the schema as a bug"
        ) from exc
    validator = SchemaValidator(canonical, compiled.function, compiled.error)
    with _cache_lock:
        existing = _cache.get(canonical)
        if existing is not None:
            return existing
        _cache[canonical] = validator
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return validator


_schema_cache: dict[Any, bytes] = {}
_schema_cache_lock = threading.Lock()


def schema_for(tp: Any) -> dict[str, Any]:
    """The JSON Schema of type `tp`, derived by msgspec; a fresh copy on every call.

    Named types (Structs, dataclasses, TypedDicts, Enums) are emitted under `$defs` and referenced
    as `#/$defs/<name>`. msgspec's OpenAPI `discriminator` annotation is removed (the tag property
    already distinguishes the variants). Constraints with no equivalent in the local dialect (such as
    `Meta(pattern=...)`) are kept; `check_schema` rejects them if the schema is checked.
    """
    try:
        encoded = _schema_cache.get(tp)
    except TypeError:  # an unhashable type expression: derive without caching
        return _derive(tp)
    if encoded is None:
        derived = _derive(tp)
        encoded = msgspec.json.encode(derived)
        with _schema_cache_lock:
            if len(_schema_cache) >= _CACHE_SIZE:
                _schema_cache.clear()  # types are usually a fixed set; this only bounds pathological use
            _schema_cache[tp] = encoded
        return derived
    return msgspec.json.decode(encoded)


def _derive(tp: Any) -> dict[str, Any]:
    try:
        schema: dict[str, Any] = msgspec.json.schema(tp)
    except (TypeError, ValueError) as exc:
        raise UnsupportedJsonSchemaError(f"cannot derive a JSON Schema from {tp!r}: {exc}") from None
    for node in walk_subschemas(schema):
        node.pop("discriminator", None)
    return schema
