"""The errors of `ferrule.mcp`: one class per failure an application may want to tell apart."""

from __future__ import annotations

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError

__all__ = [
    "MCPConfigError",
    "MCPConnectionError",
    "MCPConnectionLostError",
    "MCPError",
    "MCPProtocolError",
    "MCPResultTooLargeError",
    "MCPServerClosedError",
    "MCPServerUnavailableError",
    "MCPTimeoutError",
    "MCPToolCallError",
]


class MCPError(FerruleError):
    """Base class of the failures of an MCP server used as a toolset."""

    def __init__(self, message: str, *, server_id: str | None = None) -> None:
        self.server_id = server_id
        """The `id` of the server the failure belongs to, when there is one."""
        super().__init__(message)


class MCPConfigError(UserError):
    """An MCP server configuration cannot be used (bad JSON, a missing `${VAR}`, a bad option)."""


class MCPConnectionError(MCPError):
    """Connecting to an MCP server failed: the process did not start, the handshake failed or timed out."""


class MCPServerUnavailableError(MCPConnectionError):
    """Every connection attempt failed; a `required` server fails the run with this error."""


class MCPConnectionLostError(MCPError):
    """The connection broke while a request was in flight (the process exited, the stream closed)."""


class MCPServerClosedError(MCPError):
    """The server toolset is not entered (or was closed by the task that entered it first)."""


class MCPTimeoutError(MCPError):
    """A request to the server did not finish within its timeout."""


class MCPProtocolError(MCPError):
    """The server sent something that is not valid MCP: malformed JSON-RPC, a result of the wrong shape."""


class MCPResultTooLargeError(MCPError):
    """A message from the server exceeded `max_message_bytes`; it was discarded before it was decoded."""

    def __init__(self, message: str, *, server_id: str | None = None, limit: int = 0) -> None:
        self.limit = limit
        """The limit in bytes that was exceeded."""
        super().__init__(message, server_id=server_id)


class MCPToolCallError(MCPError):
    """The server answered a tool call with a JSON-RPC error (unknown tool, invalid parameters, ...)."""

    def __init__(self, message: str, *, server_id: str | None = None, code: int = 0) -> None:
        self.code = code
        """The JSON-RPC error code."""
        super().__init__(message, server_id=server_id)
