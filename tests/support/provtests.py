"""Building blocks the provider test suites (openai, anthropic, google) each wrote out.

`object_tool` is a tool whose arguments are one JSON object. Only `ferrule.core` is imported, so
every provider's isolated environment has what this needs.
"""

from __future__ import annotations

from typing import Any
from typing import Literal

from ferrule.core.model import ToolDefinition

__all__ = ["object_tool"]


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
