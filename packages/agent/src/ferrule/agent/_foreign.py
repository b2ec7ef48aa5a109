"""Types from other libraries in tool signatures and outputs: pydantic models, detected lazily.

pydantic is never imported here: a pydantic model or `Field` can only appear in a user's type once the
user imported pydantic, so `sys.modules` is asked instead. Types that mention pydantic are validated
by pydantic itself (its JSON Schema, through ferrule's fail-closed schema check, and its validators);
everything else stays with msgspec.
"""

from __future__ import annotations

import sys
from typing import Annotated
from typing import Any
from typing import cast
from typing import get_args
from typing import get_origin

from ferrule.core.errors import UserError

__all__ = ["PydanticShape", "described", "enc_hook", "model", "pydantic_error_details", "uses_pydantic"]

_MAX_DEPTH = 32


def uses_pydantic(tp: Any) -> bool:
    """Whether the type expression `tp` mentions a pydantic model, pydantic dataclass or `Field`.

    Also true for `annotated_types` constraints (`Annotated[int, Gt(0)]`), which msgspec would ignore.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    return _mentions(tp, pydantic, 0)


def _mentions(tp: Any, pydantic: Any, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(tp, type):
        if issubclass(tp, pydantic.BaseModel):
            return True
        return bool(pydantic.dataclasses.is_pydantic_dataclass(tp))
    if get_origin(tp) is Annotated:
        annotated_types = sys.modules.get("annotated_types")
        foreign: tuple[type, ...] = (pydantic.fields.FieldInfo,)
        if annotated_types is not None:
            foreign = (*foreign, annotated_types.BaseMetadata, annotated_types.GroupedMetadata)
        if any(isinstance(meta, foreign) for meta in tp.__metadata__):
            return True
        return _mentions(get_args(tp)[0], pydantic, depth + 1)
    return any(_mentions(arg, pydantic, depth + 1) for arg in get_args(tp))


class PydanticShape:
    """A pydantic-validated value: its checked JSON Schema and its validation."""

    __slots__ = ("adapter", "schema")

    def __init__(self, tp: Any) -> None:
        import pydantic

        from ferrule.core import json_schema  # with the first pydantic type, as pydantic itself

        self.adapter: Any = pydantic.TypeAdapter(tp)
        """The pydantic `TypeAdapter` of the type."""
        try:
            schema = cast("dict[str, Any]", self.adapter.json_schema())
        except pydantic.PydanticUserError as exc:
            raise UserError(f"pydantic cannot build a JSON Schema for {_name(tp)}: {exc}") from exc
        try:
            json_schema.check_schema(schema)
        except json_schema.JsonSchemaError as exc:
            raise UserError(
                f"the JSON Schema pydantic builds for {_name(tp)} uses what ferrule cannot validate "
                f"locally ({exc}); simplify that field"
            ) from exc
        self.schema = schema
        """The JSON Schema (pydantic's `model_json_schema()`), checked against the local dialect."""

    def validate(self, value: Any) -> Any:
        """The validated value of decoded JSON data; raises `pydantic.ValidationError` (a `ValueError`)."""
        return self.adapter.validate_python(value)

    def revalidate(self, value: Any) -> Any:
        """Validate an already typed value again, from its JSON form (validators run again)."""
        return self.adapter.validate_python(self.adapter.dump_python(value, mode="json"))


def model(name: str, fields: list[tuple[str, Any, Any]]) -> Any:
    """A pydantic model of a tool's parameters, `(name, annotation, default or ...)` each."""
    import pydantic

    config = pydantic.ConfigDict(extra="forbid", protected_namespaces=())
    definitions: dict[str, Any] = {name: (annotation, default) for name, annotation, default in fields}
    return pydantic.create_model(name, __config__=config, **definitions)


def described(annotation: Any, description: str) -> Any:
    """`annotation` with a pydantic field description."""
    import pydantic

    return Annotated[annotation, pydantic.Field(description=description)]


def enc_hook(value: Any) -> Any:
    """msgspec's `enc_hook` for values it cannot encode itself: pydantic models become JSON data."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None:
        if isinstance(value, pydantic.BaseModel):
            return value.model_dump(mode="json")
        if pydantic.dataclasses.is_pydantic_dataclass(type(value)):
            return pydantic.TypeAdapter(type(value)).dump_python(value, mode="json")
    raise TypeError(f"cannot encode a value of type {type(value).__qualname__}")


def pydantic_error_details(error: Exception) -> list[dict[str, Any]] | None:
    """The retry-prompt details of a `pydantic.ValidationError`, in msgspec's shape; `None` for others."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(error, pydantic.ValidationError):
        return None
    errors = cast("list[dict[str, Any]]", cast("Any", error).errors(include_url=False, include_input=False))
    return [{"type": "invalid_argument", "loc": list(e["loc"]), "msg": str(e["msg"])} for e in errors]


def _name(tp: Any) -> str:
    name = getattr(tp, "__qualname__", None)
    return name if isinstance(name, str) else repr(tp)
