"""The per-step call a model receives and its parts: tool definitions, the output format, native tools.

Kept below `ferrule.core.profile` and `ferrule.core.model` (both re-export these names) so that the
profile check can name a call without the model module naming the profile back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

from .messages import Message
from .settings import ModelSettings

NativeToolKind: TypeAlias = Literal[
    "web_search", "web_fetch", "code_execution", "url_context", "file_search", "image_generation"
]
"""A provider-native tool that runs inside the provider's request."""


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A tool as offered to a model: name, description and JSON Schema of its arguments."""

    name: str
    """The tool's name as the model sees it."""
    parameters_json_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON Schema of the arguments object."""
    description: str | None = None
    """What the tool does, for the model."""
    strict: bool | None = None
    """Ask the provider to enforce the schema exactly, where it can."""
    kind: Literal["function", "output", "external", "unapproved"] = "function"
    """`output` tools end the run with typed output; the others are ordinary calls."""
    sequential: bool = False
    """The tool must run alone, never concurrently with other calls."""
    defer_loading: bool = False
    """Kept out of the request until a tool search surfaces it."""
    metadata: dict[str, Any] | None = None
    """Application data; never sent to the model."""


class TextFormat(msgspec.Struct, frozen=True, tag="text", tag_field="kind"):
    """The model answers in free text."""


class JsonObjectFormat(msgspec.Struct, frozen=True, tag="json_object", tag_field="kind"):
    """The model answers with any JSON object (the agent validates it locally)."""


class JsonSchemaFormat(msgspec.Struct, frozen=True, kw_only=True, tag="json_schema", tag_field="kind"):
    """The model answers with JSON matching one schema, enforced natively by the provider."""

    name: str
    """A name for the schema (providers require one)."""
    schema: dict[str, Any]
    """The JSON Schema."""
    description: str | None = None
    """What the output is, for the model."""
    strict: bool | None = None
    """Ask for exact enforcement where the provider offers it."""


OutputFormat: TypeAlias = TextFormat | JsonObjectFormat | JsonSchemaFormat
"""The provider-facing output contract of one request."""

TEXT_FORMAT = TextFormat()
"""The default output format."""


class NativeTool(msgspec.Struct, frozen=True, kw_only=True):
    """A provider-native tool to enable for a request (web search, code execution, ...)."""

    kind: NativeToolKind
    """Which native tool."""
    options: dict[str, Any] | None = None
    """Provider-specific options for the tool."""


class ModelCall(msgspec.Struct, kw_only=True):
    """Everything one model request needs: the per-step call built by the agent."""

    messages: Sequence[Message]
    """The provider-facing history, ending with the request to answer."""
    instructions: str | None = None
    """Resolved instructions, sent as the system prompt on every request."""
    tools: Sequence[ToolDefinition] = ()
    """Function tools the model may call."""
    output_tools: Sequence[ToolDefinition] = ()
    """Output tools: calling one ends the run with typed output."""
    output: OutputFormat = TEXT_FORMAT
    """The output format."""
    allow_text_output: bool = True
    """Whether a plain-text answer is acceptable (false when output must come from an output tool)."""
    native_tools: Sequence[NativeTool] = ()
    """Provider-native tools to enable."""
    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    """Merged settings (model → agent → run)."""
    deadline: float | None = None
    """Absolute deadline on anyio's clock (`anyio.current_time()`); the request must end by then."""
    request_id: str | None = None
    """Provider-facing correlation ID (sent as `x-client-request-id` where supported)."""
    cache_key: str | None = None
    """Prompt-cache key for providers that cache prompt prefixes."""
    capture_error_body: bool = False
    """Capture a bounded, redacted prefix of error bodies on provider errors."""

    @property
    def all_tools(self) -> list[ToolDefinition]:
        """Function tools followed by output tools."""
        return [*self.tools, *self.output_tools]
