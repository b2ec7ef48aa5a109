"""Output specifications: what `output_type` accepts (the per-mode plans are built in `_output_build`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from typing import Generic
from typing import TypeAlias

from typing_extensions import TypeVar

from ._errors import OutputSpecError

# The plans live in `_output_plan`; the output step still imports the names it uses from here.
from ._output_plan import OutputChoice as OutputChoice
from ._output_plan import OutputPlan as OutputPlan
from ._output_plan import TextFunction as TextFunction

__all__ = [
    "DEFAULT_OUTPUT_TOOL_NAME",
    "NativeOutput",
    "OutputSpec",
    "PromptedOutput",
    "StructuredDict",
    "TextOutput",
    "ToolOutput",
]

T = TypeVar("T", default=Any)

DEFAULT_OUTPUT_TOOL_NAME = "final_result"
"""The name of the output tool when there is one output choice."""

DEFAULT_OUTPUT_TOOL_DESCRIPTION = "The final response which ends this conversation"

DEFAULT_PROMPT_TEMPLATE = (
    "Always respond with a JSON object that's compatible with this schema:\n\n{schema}\n\n"
    "Don't include any text or Markdown fencing before or after."
)
"""The instruction prompted output adds; `{schema}` is replaced by the JSON Schema."""


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ToolOutput(Generic[T]):
    """Typed output through an output tool the model calls to finish the run."""

    output: Any
    """The output type (or output function)."""
    name: str | None
    """The output tool's name (default `final_result`, or `final_result_<Type>` for several)."""
    description: str | None
    """The output tool's description."""
    strict: bool | None
    """Ask the provider to enforce the schema exactly."""

    def __init__(
        self,
        output: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
    ) -> None:
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "strict", strict)


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class NativeOutput(Generic[T]):
    """Typed output through the provider's native JSON-schema mode (several types become `anyOf`)."""

    outputs: Any
    """The output type, or a sequence of alternatives."""
    name: str | None
    """The schema's name."""
    description: str | None
    """What the output is, for the model."""
    strict: bool | None
    """Ask the provider to enforce the schema exactly."""

    def __init__(
        self,
        outputs: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
    ) -> None:
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "strict", strict)


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class PromptedOutput(Generic[T]):
    """Typed output by instructing the model to answer with JSON; always validated locally."""

    outputs: Any
    """The output type, or a sequence of alternatives."""
    name: str | None
    """The schema's name."""
    description: str | None
    """What the output is, for the model."""
    template: str | None
    """The instruction, containing one `{schema}` marker; default `DEFAULT_PROMPT_TEMPLATE`."""

    def __init__(
        self,
        outputs: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        template: str | None = None,
    ) -> None:
        if template is not None and template.count("{schema}") != 1:
            raise OutputSpecError("PromptedOutput(template=...) must contain exactly one '{schema}' marker")
        object.__setattr__(self, "outputs", outputs)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "template", template)


@dataclasses.dataclass(frozen=True, slots=True)
class TextOutput(Generic[T]):
    """Plain-text output passed through a function (`fn(text)` or `fn(ctx, text)`) to build the output."""

    function: Callable[..., T]
    """The function turning the final text into the output; may raise `ModelRetry`."""


@dataclasses.dataclass(frozen=True, slots=True)
class StructuredDict:
    """Output described by a hand-written JSON Schema; the output is the validated `dict`."""

    schema: dict[str, Any]
    """The JSON Schema of the output object."""
    name: str | None = None
    """A name for the schema."""
    description: str | None = None
    """What the output is, for the model."""


OutputSpec: TypeAlias = Any
"""What `output_type` accepts: a type, `ToolOutput`/`NativeOutput`/`PromptedOutput`/`TextOutput`,
an output function, `StructuredDict`, or a sequence of them (`str` in it allows plain text)."""
