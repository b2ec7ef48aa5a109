"""An MCP server written with the official SDK (`MCPServer`), used in-process and over streamable HTTP."""

from __future__ import annotations

import base64
import warnings
from typing import Annotated

import mcp.types as types
from mcp.server.mcpserver import Audio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver import Image
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from pydantic import Field

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = b"RIFF$\x00\x00\x00WAVEfmt " + b"\x00" * 28


class Answer(BaseModel):
    name: str


def build() -> MCPServer:
    server = MCPServer("sdk-test", instructions="Always call every tool twice.")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def image() -> Image:
        """A 1x1 PNG."""
        return Image(data=PNG, format="png")

    @server.tool()
    def audio() -> Audio:
        """A tiny WAV header."""
        return Audio(data=WAV, format="wav")

    @server.tool()
    def embedded() -> list[types.ContentBlock]:
        """An embedded text resource, a blob resource and a resource link."""
        return [
            types.EmbeddedResource(
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="the notes"
                )
            ),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///pixel.png", mime_type="image/png", blob=base64.b64encode(PNG).decode()
                )
            ),
            types.ResourceLink(uri="file:///big.csv", name="big.csv", mime_type="text/csv"),
        ]

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with `reason`."""
        raise ToolError(reason)

    @server.tool()
    def server_error(message: str) -> str:
        """Answers with JSON-RPC error -32000 (a server error, as many servers send for any failure)."""
        raise MCPError(code=-32000, message=message)

    @server.tool()
    def big(size: int) -> str:
        """A string of `size` characters."""
        return "z" * size

    @server.tool()
    def auth_header(ctx: Context) -> str:
        """Which Authorization header arrived (HTTP only)."""
        headers = ctx.headers or {}
        return headers.get("authorization", "none")

    @server.tool()
    def patterned(code: Annotated[str, Field(pattern="^[A-Z]+$")]) -> str:
        """Its schema uses `pattern`, outside ferrule's schema dialect."""
        return code

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool `grown` and announces the change."""

        def grown() -> str:
            """A tool that appeared later."""
            return "grown"

        if "grown" not in [t.name for t in await server.list_tools()]:
            server.add_tool(grown)
        await ctx.notify_tools_changed()
        return "grew"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Asks the user for a name (elicitation)."""
        result = await ctx.elicit("What is your name?", Answer)
        return f"{result.action}:{result.data.name if result.action == 'accept' else ''}"

    @server.tool()
    async def summarize(ctx: Context, text: str) -> str:
        """Asks the client's model to summarize `text` (sampling)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sampling is deprecated in the 2026-07-28 revision
            reply = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
                [types.SamplingMessage(role="user", content=types.TextContent(text=text))],
                max_tokens=50,
                system_prompt="Summarize.",
            )
        assert isinstance(reply.content, types.TextContent)
        return f"{reply.model}: {reply.content.text}"

    return server
