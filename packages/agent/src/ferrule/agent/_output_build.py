"""Building output plans: normalize an `output_type` once per agent, then one plan per output mode."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Sequence
from typing import Any
from typing import cast
from typing import get_args
from typing import get_origin

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.model import TEXT_FORMAT
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import OutputFormat
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.profile import StructuredOutputMode

from ._deferred import DeferredToolRequests
from ._errors import OutputSpecError
from ._foreign import PydanticShape
from ._foreign import model as pydantic_model
from ._foreign import uses_pydantic
from ._output import DEFAULT_OUTPUT_TOOL_DESCRIPTION
from ._output import DEFAULT_OUTPUT_TOOL_NAME
from ._output import DEFAULT_PROMPT_TEMPLATE
from ._output import NativeOutput
from ._output import OutputSpec
from ._output import PromptedOutput
from ._output import StructuredDict
from ._output import TextOutput
from ._output import ToolOutput
from ._output_plan import OutputChoice
from ._output_plan import OutputMode
from ._output_plan import OutputPlan
from ._output_plan import TextFunction
from ._schema import compile_schema
from ._schema import is_object_schema
from ._schema import strip_title
from ._schema import type_schema
from ._tools import Tool


class _Target:
    """One structured output target before the mode is known."""

    __slots__ = ("description", "kind", "name", "strict", "value")

    def __init__(
        self, value: Any, kind: str | None, name: str | None, description: str | None, strict: bool | None
    ):
        self.value = value
        self.kind = kind  # "tool" | "native" | "prompted" | None (default)
        self.name = name
        self.description = description
        self.strict = strict


class OutputSpecInfo:
    """A normalized output specification: text allowance, targets and an explicit mode."""

    __slots__ = (
        "allow_text",
        "deferred_requests",
        "explicit_mode",
        "native_meta",
        "prompt_template",
        "targets",
        "text_function",
    )

    def __init__(self) -> None:
        self.allow_text = False
        self.deferred_requests = False
        """Whether `DeferredToolRequests` is one of the outputs: a pause then ends `run` with it."""
        self.text_function: TextFunction | None = None
        self.targets: list[_Target] = []
        self.explicit_mode: str | None = None
        self.native_meta: tuple[str | None, str | None, bool | None] = (None, None, None)
        self.prompt_template: str | None = None

    @property
    def is_text(self) -> bool:
        return not self.targets


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def normalize_spec(spec: OutputSpec) -> OutputSpecInfo:
    """Flatten an `output_type` into text allowance and structured targets; checks it early."""
    info = OutputSpecInfo()

    def set_mode(mode: str) -> None:
        if info.explicit_mode not in (None, mode):
            raise OutputSpecError(
                f"output_type mixes {info.explicit_mode} and {mode} output; use one output mode per agent"
            )
        info.explicit_mode = mode

    def add(
        item: Any, kind: str | None, name: str | None, description: str | None, strict: bool | None
    ) -> None:
        if item is str and kind is None:
            info.allow_text = True
            return
        if item is DeferredToolRequests:
            _allow_requests(info, kind)
            return
        if isinstance(item, TextOutput):
            if info.text_function is not None:
                raise OutputSpecError("output_type has more than one TextOutput")
            info.allow_text = True
            info.text_function = TextFunction(cast("TextOutput[Any]", item).function)
            return
        if isinstance(item, ToolOutput):
            tool_output = cast("ToolOutput[Any]", item)
            set_mode("tool")
            add(tool_output.output, "tool", tool_output.name, tool_output.description, tool_output.strict)
            return
        if isinstance(item, NativeOutput):
            native = cast("NativeOutput[Any]", item)
            set_mode("native")
            info.native_meta = (native.name, native.description, native.strict)
            for sub in _as_list(native.outputs):
                add(sub, "native", None, None, native.strict)
            return
        if isinstance(item, PromptedOutput):
            prompted = cast("PromptedOutput[Any]", item)
            set_mode("prompted")
            info.native_meta = (prompted.name, prompted.description, None)
            info.prompt_template = prompted.template
            for sub in _as_list(prompted.outputs):
                add(sub, "prompted", None, None, None)
            return
        if isinstance(item, (list, tuple)):
            for sub in cast("Sequence[Any]", item):
                add(sub, kind, name, description, strict)
            return
        if (
            _is_union(item)
            and kind is None
            and (str in get_args(item) or DeferredToolRequests in get_args(item))
        ):
            for sub in get_args(item):
                add(sub, kind, name, description, strict)
            return
        if item is None or item is type(None):
            raise OutputSpecError("output_type cannot be None; use str for plain text")
        info.targets.append(_Target(item, kind, name, description, strict))

    add(spec, None, None, None, None)
    _check_not_empty(info)
    # Every target's schema and decoder are built now, so a bad spec fails when the agent is built,
    # not at its first run (the per-mode plans are built later from the same targets).
    for target in _expand(info.targets, "tool"):
        _choice_for(target, DEFAULT_OUTPUT_TOOL_NAME, wrap_non_object=True)
    return info


def _allow_requests(info: OutputSpecInfo, kind: str | None) -> None:
    """`DeferredToolRequests` among the outputs: a marker, not a target the model produces."""
    if kind is not None:
        raise OutputSpecError(
            f"DeferredToolRequests cannot be {kind} output: list it beside the output types, "
            "e.g. output_type=[str, DeferredToolRequests]"
        )
    info.deferred_requests = True


def _check_not_empty(info: OutputSpecInfo) -> None:
    """Refuse an `output_type` that names no output a finished run can have."""
    if not info.is_text or info.allow_text:
        return
    if info.deferred_requests:
        raise OutputSpecError(
            "output_type has only DeferredToolRequests, which a run ends with when calls wait for a "
            "decision; give the output of a finished run too, e.g. output_type=[str, DeferredToolRequests]"
        )
    raise OutputSpecError("output_type is empty; give at least one type")


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(cast("Sequence[Any]", value))
    return [value]


def _type_name(tp: Any) -> str:
    name = getattr(tp, "__name__", None)
    if isinstance(name, str) and name.isidentifier():
        return name
    return "".join(ch if ch.isalnum() else "_" for ch in repr(tp)).strip("_")[:48] or "output"


def _type_description(tp: Any) -> str | None:
    if not isinstance(tp, type) or tp.__module__ == "builtins":
        return None
    doc = tp.__dict__.get("__doc__")
    if not isinstance(doc, str) or doc.startswith(f"{tp.__name__}("):
        return None
    return inspect.cleandoc(doc) or None


def _is_function(value: Any) -> bool:
    return (
        callable(value) and not isinstance(value, type) and get_origin(value) is None and not _is_union(value)
    )


def _object_members(tp: Any) -> list[Any] | None:
    """The members of a union whose members all have object schemas, else `None`."""
    if not _is_union(tp):
        return None
    members = [m for m in get_args(tp) if m is not type(None)]
    if len(members) < 2 or len(members) != len(get_args(tp)):
        return None
    try:
        if all(
            is_object_schema(PydanticShape(m).schema if uses_pydantic(m) else type_schema(m)) for m in members
        ):
            return members
    except (UserError, TypeError, ValueError):
        return None
    return None


def _msgspec_supports(tp: Any) -> bool:
    try:
        msgspec.json.Decoder(tp)
    except TypeError:
        return False
    return True


def _choice_for(target: _Target, name: str, *, wrap_non_object: bool) -> OutputChoice:
    value = target.value
    if isinstance(value, StructuredDict):
        schema = dict(value.schema)
        if not is_object_schema(schema):
            raise OutputSpecError("StructuredDict needs an object schema ({'type': 'object', ...})")
        try:
            validator = compile_schema(schema)
        except UserError as exc:
            raise OutputSpecError(f"the StructuredDict schema is not usable: {exc}") from exc
        return OutputChoice(
            name=value.name or name,
            description=target.description or value.description or schema.get("description"),
            schema=schema,
            decode_type=dict[str, Any],
            value_type=dict[str, Any],
            wrapped=False,
            validator=validator,
            strict=target.strict,
        )
    if _is_function(value):
        tool = Tool(value, name=target.name or name)
        return OutputChoice(
            name=target.name or name,
            description=target.description or tool.description,
            schema=tool.parameters_json_schema,
            decode_type=tool.args_type,
            value_type=None,
            wrapped=False,
            function=tool,
            strict=target.strict,
        )
    if uses_pydantic(value):
        return _pydantic_choice(target, name, wrap_non_object=wrap_non_object)
    if not _msgspec_supports(value):
        raise OutputSpecError(
            f"output type {value!r} cannot be decoded by msgspec (unions of several untagged Structs need "
            "separate choices: pass a list, or tag the Structs)"
        )
    try:
        schema = strip_title(type_schema(value))
    except (UserError, TypeError, ValueError) as exc:
        raise OutputSpecError(
            f"cannot build a JSON Schema for output type {value!r} ({exc}); use a msgspec Struct, a "
            "dataclass, a TypedDict, an attrs class, a pydantic model (with pydantic installed) or builtin types"
        ) from exc
    wrapped = wrap_non_object and not is_object_schema(schema)
    decode_type: Any = value
    if wrapped:
        # A non-object output travels as the `value` field of an object (tool arguments are objects).
        defs = schema.pop("$defs", None)
        schema = {
            "type": "object",
            "properties": {"value": schema},
            "required": ["value"],
            "additionalProperties": False,
        }
        if defs:
            schema["$defs"] = defs
        decode_type = msgspec.defstruct("OutputValue", [("value", value)], forbid_unknown_fields=True)
    return OutputChoice(
        name=target.name or name,
        description=target.description or _type_description(value),
        schema=schema,
        decode_type=decode_type,
        value_type=value,
        wrapped=wrapped,
        strict=target.strict,
    )


def _pydantic_choice(target: _Target, name: str, *, wrap_non_object: bool) -> OutputChoice:
    """A choice validated by pydantic (the type mentions a pydantic model or `Field`)."""
    value = target.value
    try:
        shape = PydanticShape(value)
        wrapped = wrap_non_object and not is_object_schema(shape.schema)
        decode_type = value
        if wrapped:
            decode_type = pydantic_model("OutputValue", [("value", value, ...)])
            shape = PydanticShape(decode_type)
    except (UserError, TypeError, ValueError) as exc:
        raise OutputSpecError(f"cannot use output type {value!r}: {exc}") from exc
    return OutputChoice(
        name=target.name or name,
        description=target.description or _type_description(value),
        schema=strip_title(dict(shape.schema)),
        decode_type=decode_type,
        value_type=value,
        wrapped=wrapped,
        strict=target.strict,
        shape=shape,
    )


def _expand(targets: list[_Target], mode: str) -> list[_Target]:
    """Split unions into separate targets where the mode needs it."""
    expanded: list[_Target] = []
    for target in targets:
        value = target.value
        members = _object_members(value) if not isinstance(value, StructuredDict) else None
        if members is not None and (mode == "tool" or not _msgspec_supports(value)):
            expanded.extend(_Target(m, target.kind, None, None, target.strict) for m in members)
        else:
            expanded.append(target)
    return expanded


def resolve_mode(info: OutputSpecInfo, profile: ModelProfile, model: str) -> OutputMode:
    """The output mode for a model with `profile`: explicit, else the profile's default with fallbacks."""
    if info.is_text:
        return "text"
    explicit = info.explicit_mode
    if explicit == "tool" or (explicit is None and info.allow_text):
        if not (profile.supports_tools or profile.tools_emulated_via_output):
            raise OutputSpecError(
                f"{model} does not support tools, which tool output"
                + (" (needed when plain text is also allowed)" if explicit is None else "")
                + " requires; use NativeOutput or PromptedOutput"
            )
        return "tool"
    if explicit == "native":
        if not profile.supports_json_schema_output:
            raise OutputSpecError(
                f"{model} does not support native JSON-schema output; use ToolOutput or PromptedOutput"
            )
        return "native"
    if explicit == "prompted":
        return "prompted"
    preferred: StructuredOutputMode = profile.default_structured_output_mode
    if preferred == "native" and profile.supports_json_schema_output:
        return "native"
    if preferred == "prompted":
        return "prompted"
    if profile.supports_tools or profile.tools_emulated_via_output:
        return "tool"
    if profile.supports_json_schema_output:
        return "native"
    return "prompted"


def build_plan(info: OutputSpecInfo, mode: OutputMode, profile: ModelProfile) -> OutputPlan:
    """Build the output plan for one mode."""
    if mode == "text":
        return OutputPlan(
            mode="text",
            allow_text=True,
            text_function=info.text_function,
            choices=(),
            tool_defs=(),
            output_format=TEXT_FORMAT,
            extra_instructions=None,
        )
    targets = _expand(info.targets, mode)
    if mode == "tool":
        several = len(targets) > 1
        choices: list[OutputChoice] = []
        seen: set[str] = set()
        for target in targets:
            default = DEFAULT_OUTPUT_TOOL_NAME
            if several:
                base = target.name or (
                    target.value.name
                    if isinstance(target.value, StructuredDict) and target.value.name
                    else _type_name(target.value)
                )
                default = f"{DEFAULT_OUTPUT_TOOL_NAME}_{base}" if not target.name else base
            choice = _choice_for(target, default, wrap_non_object=True)
            if choice.name in seen:
                raise OutputSpecError(
                    f"two output choices are named {choice.name!r}; give them distinct names"
                )
            seen.add(choice.name)
            choices.append(choice)
        defs = tuple(
            ToolDefinition(
                name=c.name,
                parameters_json_schema=c.schema,
                description=c.description or DEFAULT_OUTPUT_TOOL_DESCRIPTION,
                strict=c.strict,
                kind="output",
            )
            for c in choices
        )
        return OutputPlan(
            mode="tool",
            allow_text=info.allow_text,
            text_function=info.text_function,
            choices=tuple(choices),
            tool_defs=defs,
            output_format=TEXT_FORMAT,
            extra_instructions=None,
        )
    name, description, strict = info.native_meta
    choices = [_choice_for(t, _type_name(t.value), wrap_non_object=True) for t in targets]
    if len(choices) == 1:
        schema = dict(choices[0].schema)
        schema_name = name or choices[0].name
        description = description or choices[0].description
    else:
        schema = _combine([c.schema for c in choices])
        schema_name = name or DEFAULT_OUTPUT_TOOL_NAME
    if mode == "native":
        output_format: OutputFormat = JsonSchemaFormat(
            name=schema_name, schema=schema, description=description, strict=strict
        )
        extra = None
    else:
        import json  # with the first prompted output, not with the agent

        template = info.prompt_template or DEFAULT_PROMPT_TEMPLATE
        extra = template.replace("{schema}", json.dumps(schema, separators=(",", ":")))
        output_format = JsonObjectFormat() if profile.supports_json_object_output else TEXT_FORMAT
    return OutputPlan(
        mode=mode,
        allow_text=False,
        text_function=None,
        choices=tuple(choices),
        tool_defs=(),
        output_format=output_format,
        extra_instructions=extra,
    )


def _combine(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    options: list[dict[str, Any]] = []
    for schema in schemas:
        schema = dict(schema)
        sub_defs = schema.pop("$defs", None)
        if isinstance(sub_defs, dict):
            defs.update(cast("dict[str, Any]", sub_defs))
        options.append(schema)
    combined: dict[str, Any] = {"anyOf": options}
    if defs:
        combined["$defs"] = defs
    return combined
