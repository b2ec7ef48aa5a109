"""Building blocks the provider test suites (openai, anthropic, google) each wrote out.

`object_tool` is a tool whose arguments are one JSON object, `two_parts` a response's two parts
checked for their types, `native_round` a provider-run tool's call with its result, and
`nested_arrays` a schema as deep as asked, for the schema converters' depth limits. Only
`ferrule.core` is imported, so every provider's isolated environment has what this needs.
"""

from __future__ import annotations

from typing import Any
from typing import Literal
from typing import TypeVar

from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.model import ToolDefinition

__all__ = ["native_round", "nested_arrays", "object_tool", "two_parts"]

First = TypeVar("First")
Second = TypeVar("Second")


def object_tool(
    name: str,
    properties: dict[str, Any],
    *,
    required: list[str] | None = None,
    description: str | None = None,
    kind: Literal["function", "output", "external", "unapproved"] = "function",
    **schema: Any,
) -> ToolDefinition:
    """A tool whose arguments are one object of `properties`: those `required` names (all by default).

    `schema` holds further keywords of that object's schema (`additionalProperties=False`), written
    after `required`.
    """
    return ToolDefinition(
        name=name,
        description=description,
        kind=kind,
        parameters_json_schema={
            "type": "object",
            "properties": properties,
            "required": list(properties) if required is None else required,
            **schema,
        },
    )


def two_parts(response: ModelResponse, first: type[First], second: type[Second]) -> tuple[First, Second]:
    """The parts of `response`, checked to be exactly two: a `first`, then a `second`."""
    one, two = response.parts
    assert isinstance(one, first)
    assert isinstance(two, second)
    return one, two


def native_round(
    tool_name: str,
    args: dict[str, Any],
    content: Any,
    *,
    tool_call_id: str,
    provider_name: str,
    call_details: dict[str, Any] | None = None,
) -> tuple[NativeToolCallPart, NativeToolReturnPart]:
    """A provider-run tool's call with `args` and its result `content`: one name, call ID and provider.

    `call_details` are the call's `provider_details`; the result has none.
    """
    call = NativeToolCallPart(
        tool_name, args, tool_call_id, provider_name=provider_name, provider_details=call_details
    )
    result = NativeToolReturnPart(tool_name, content, tool_call_id, provider_name=provider_name)
    return call, result


def nested_arrays(depth: int) -> dict[str, Any]:
    """The schema of a string inside `depth` nested arrays (its leaf `depth` levels below the root)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema
