"""Plain data shared by the MCP toolsets: events, limits, and the sampling and elicitation callbacks."""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

from ferrule.core import bounded_json
from ferrule.core.messages import Message

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "EventHandler",
    "MCPEvent",
    "MCPEventKind",
    "MCPLimits",
    "SamplingHandler",
    "SamplingRequest",
    "SamplingResponse",
    "StderrPolicy",
]

_KIB = 1024

StderrPolicy: TypeAlias = Literal["inherit", "discard", "capture"]
"""What happens to a stdio server's standard error: shared with this process, dropped, or kept
(the last `MCPLimits.max_stderr_bytes`) for error messages and `MCPServerStdio.stderr_tail`."""

MCPEventKind: TypeAlias = Literal[
    "connected",
    "connect_failed",
    "unavailable",
    "connection_lost",
    "tools_changed",
    "tool_excluded",
    "closed",
]
"""What an [`MCPEvent`][ferrule.mcp.MCPEvent] reports."""


class MCPEvent(msgspec.Struct, frozen=True, kw_only=True):
    """Something happened to an MCP server: delivered to `on_event` and logged on `ferrule.mcp`."""

    server_id: str
    """The server's `id`."""
    kind: MCPEventKind
    """What happened."""
    message: str
    """A sentence for people; never contains credentials."""
    tool_name: str | None = None
    """The server's name of the tool concerned (`tool_excluded`)."""


class MCPLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on what one MCP server may send; every limit is inclusive."""

    max_message_bytes: int = bounded_json.MCP.max_bytes
    """Largest JSON-RPC message (a stdio line, an HTTP body or one SSE event) read from the server;
    a larger one is discarded while it streams in, before it is decoded, and the call it answers
    fails with `MCPResultTooLargeError`."""
    max_tools: int = 1000
    """Most tools taken from one server's listing; the rest are excluded with a warning."""
    max_list_pages: int = 100
    """Most `tools/list` pages followed; a server whose cursor never ends cannot hang a listing."""
    max_description_chars: int = 4000
    """Tool descriptions longer than this are cut (they are untrusted text shown to the model)."""
    max_error_chars: int = 2000
    """Error texts from the server passed to the model are cut to this length."""
    max_stderr_bytes: int = 64 * _KIB
    """Bytes of a stdio server's standard error kept with `stderr="capture"` (the most recent)."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"MCPLimits.{name} must be a positive int, got {value!r}")

    @property
    def json(self) -> bounded_json.JsonLimits:
        """The bounded-JSON profile one message is checked against before it is decoded."""
        size = self.max_message_bytes
        return msgspec.structs.replace(bounded_json.MCP, max_bytes=size, max_string_bytes=size)


class SamplingRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A server asks the application for a model completion (`sampling/createMessage`)."""

    server_id: str
    """The asking server's `id`."""
    messages: list[Message]
    """The conversation to complete, as ferrule messages (user turns are requests, assistant turns responses)."""
    system_prompt: str | None = None
    """The system prompt the server asks for; it applies to this completion only."""
    max_tokens: int
    """Most tokens the server wants generated."""
    temperature: float | None = None
    """Sampling temperature requested by the server."""
    stop_sequences: list[str] | None = None
    """Stop sequences requested by the server."""
    model_hints: list[str] = msgspec.field(default_factory=list[str])
    """Model name hints from the server, in preference order (advisory)."""


class SamplingResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The application's completion for a [`SamplingRequest`][ferrule.mcp.SamplingRequest]."""

    text: str
    """The generated text."""
    model: str
    """The name of the model that produced it."""
    stop_reason: str | None = "endTurn"
    """Why generation stopped: `endTurn`, `stopSequence`, `maxTokens` or a provider's reason."""


class ElicitationRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A server asks the user for input (`elicitation/create`)."""

    server_id: str
    """The asking server's `id`."""
    message: str
    """What the server says it needs (untrusted text: show it as coming from the server)."""
    mode: Literal["form", "url"] = "form"
    """`form`: answer with `content` matching `requested_schema`; `url`: the user should visit `url`."""
    requested_schema: dict[str, Any] | None = None
    """The flat JSON Schema of the requested form (form mode)."""
    url: str | None = None
    """The page the server wants the user to open (URL mode); never opened automatically."""


class ElicitationResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The user's answer to an [`ElicitationRequest`][ferrule.mcp.ElicitationRequest]."""

    action: Literal["accept", "decline", "cancel"]
    """Whether the user answered, refused, or dismissed the request."""
    content: dict[str, Any] | None = None
    """The form values when `action` is `accept` in form mode."""


SamplingHandler: TypeAlias = Callable[[SamplingRequest], Awaitable[SamplingResponse]]
"""`async handler(request) -> SamplingResponse`; build one for a ferrule model with `sampling_with_model`."""

ElicitationHandler: TypeAlias = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]
"""`async handler(request) -> ElicitationResponse`."""

EventHandler: TypeAlias = Callable[[MCPEvent], Any]
"""`on_event(event)`, sync (or returning an awaitable, which is awaited)."""
