"""Output plans: how one agent decodes, validates and unwraps the output of one structured-output mode."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.model import OutputFormat
from ferrule.core.model import ToolDefinition

from ._foreign import PydanticShape
from ._schema import check_against
from ._sync_tools import ToolThreads
from ._tools import Tool

OutputMode = Literal["text", "tool", "native", "prompted"]


class TextFunction:
    """A `TextOutput` function: `fn(text)` or `fn(ctx, text)`, sync (run in a thread) or async."""

    __slots__ = ("function", "is_async", "takes_ctx")

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.is_async = inspect.iscoroutinefunction(function)
        try:
            params = [
                p
                for p in inspect.signature(function).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
            ]
            self.takes_ctx = len(params) >= 2
        except (TypeError, ValueError):  # builtins without signatures take the text only
            self.takes_ctx = False

    async def call(self, ctx: Any, text: str, *, threads: ToolThreads) -> Any:
        """Apply the function to the final text (a sync function in a worker thread of `threads`)."""
        args = (ctx, text) if self.takes_ctx else (text,)
        if self.is_async:
            return await self.function(*args)
        name = getattr(self.function, "__name__", None) or "text output function"
        return await threads.run(self.function, args, {}, name=name)


class OutputChoice:
    """One accepted output shape: how to decode, validate and unwrap it."""

    __slots__ = (
        "decode_type",
        "defs",
        "description",
        "function",
        "name",
        "schema",
        "shape",
        "strict",
        "validator",
        "value_type",
        "wrapped",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str | None,
        schema: dict[str, Any],
        decode_type: Any,
        value_type: Any,
        wrapped: bool,
        function: Tool[Any] | None = None,
        validator: Any = None,
        strict: bool | None = None,
        shape: PydanticShape | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.schema = schema
        self.defs = cast("dict[str, Any]", schema.get("$defs") or {})
        self.decode_type = decode_type
        self.value_type = value_type
        self.wrapped = wrapped
        self.function = function
        self.validator = validator
        self.strict = strict
        self.shape = shape

    def decode(self, raw: str | dict[str, Any] | None, limits: bounded_json.JsonLimits) -> Any:
        """Decode and validate raw JSON arguments or text into this choice's value (not yet unwrapped
        for output functions, which receive the argument struct)."""
        if self.validator is not None:
            value = _plain(raw, limits)
            check_against(self.validator, value)
            return value
        if self.shape is not None:
            return self.convert(_plain(raw, limits))
        if raw is None:
            raw = {}
        if isinstance(raw, str):
            value = bounded_json.decode(raw or "{}", type=self.decode_type, limits=limits)
        else:
            value = msgspec.convert(raw, self.decode_type)
        if self.wrapped:
            return value.value
        return value

    def convert(self, value: Any) -> Any:
        """Validate an already decoded JSON value (from a union attempt) into this choice."""
        if self.validator is not None:
            check_against(self.validator, value)
            return value
        if self.shape is not None:
            value = self.shape.validate(value)
        else:
            value = msgspec.convert(value, self.decode_type)
        return value.value if self.wrapped else value

    def revalidate(self, value: Any) -> Any:
        """Check a value transformed by a validator against this choice's type again."""
        if self.function is not None:
            return value
        if self.validator is not None:
            check_against(self.validator, msgspec.to_builtins(value))
            return value
        if self.shape is not None:
            if self.wrapped:
                return self.shape.revalidate(self.decode_type(value=value)).value
            return self.shape.revalidate(value)
        return msgspec.convert(msgspec.to_builtins(value), self.value_type)

    def partial(self, snapshot: Any) -> tuple[bool, Any]:
        """The typed value of a partial JSON snapshot when it already converts, else `(False, None)`."""
        if self.function is not None or self.validator is not None:
            return False, None
        try:
            if self.shape is not None:
                value = self.shape.validate(snapshot)
            else:
                value = msgspec.convert(snapshot, self.decode_type)
        except (msgspec.ValidationError, TypeError, ValueError):
            return False, None
        return True, value.value if self.wrapped else value


def _plain(raw: str | dict[str, Any] | None, limits: bounded_json.JsonLimits) -> Any:
    if raw is None:
        return {}
    if isinstance(raw, str):
        return bounded_json.decode_value(raw or "{}", limits)
    return raw


class OutputPlan:
    """How one agent obtains output from one kind of model (built once per structured-output mode)."""

    __slots__ = (
        "allow_text",
        "by_tool_name",
        "choices",
        "extra_instructions",
        "mode",
        "native_name",
        "output_format",
        "text_function",
        "text_is_output",
        "tool_defs",
    )

    def __init__(
        self,
        *,
        mode: OutputMode,
        allow_text: bool,
        text_function: TextFunction | None,
        choices: tuple[OutputChoice, ...],
        tool_defs: tuple[ToolDefinition, ...],
        output_format: OutputFormat,
        extra_instructions: str | None,
    ) -> None:
        self.mode: OutputMode = mode
        self.allow_text = allow_text
        self.text_function = text_function
        self.choices = choices
        self.tool_defs = tool_defs
        self.by_tool_name = {d.name: c for d, c in zip(tool_defs, choices, strict=True)} if tool_defs else {}
        self.output_format = output_format
        self.extra_instructions = extra_instructions
        self.native_name = choices[0].name if choices else None
        # Read twice per step: computed once per plan.
        self.text_is_output: bool = allow_text or mode in ("native", "prompted")
        """Whether a response without tool calls carries the output in its text."""

    def decode_text(self, text: str) -> tuple[OutputChoice, Any]:
        """Decode native or prompted JSON text; tries each choice in order."""
        body = extract_json(text)
        if len(self.choices) == 1:
            choice = self.choices[0]
            return choice, choice.decode(body, bounded_json.PROVIDER_RESPONSE)
        value = bounded_json.decode_value(body, bounded_json.PROVIDER_RESPONSE)
        first: Exception | None = None
        for choice in self.choices:
            try:
                return choice, choice.convert(value)
            except (msgspec.ValidationError, ValueError) as exc:
                first = first or exc
        assert first is not None
        raise first


def extract_json(text: str) -> str:
    """The JSON document in `text`, without Markdown fences or surrounding prose."""
    body = text.strip()
    if body.startswith("```"):
        newline = body.find("\n")
        body = body[newline + 1 :] if newline >= 0 else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
        body = body.strip()
    if body[:1] in ("{", "["):
        return body
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        return body
    end = max(body.rfind("}"), body.rfind("]"))
    return body[start : end + 1] if end > start else body[start:]
