"""The other direction: ferrule tools, or a whole agent as one tool, served as an MCP server."""

from __future__ import annotations

import base64
import logging
import re
import uuid
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import cast

import anyio
import msgspec

from ferrule.agent import Agent
from ferrule.agent import ModelRetry
from ferrule.agent import PauseRequiredError
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.core import bounded_json
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import TextContent
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.profile import ModelProfile
from ferrule.core.usage import RunUsage

__all__ = ["ExposedMCPServer", "expose_agent", "expose_tools"]

logger = logging.getLogger("ferrule.mcp")


class _NoModel(Model):
    """The `RunContext.model` of a tool called by an MCP client: there is no model in that call."""

    @property
    def model_name(self) -> str:
        return "none"

    @property
    def provider_name(self) -> str:
        return "mcp-client"

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile()

    def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        raise UserError("a tool called through MCP has no model: RunContext.model cannot be used there")


_NO_MODEL = _NoModel()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _block(item: Any) -> Any:
    import mcp_types as types

    if isinstance(item, str):
        return types.TextContent(text=item)
    if isinstance(item, TextContent):
        return types.TextContent(text=item.content)
    if isinstance(item, BinaryContent):
        data = base64.b64encode(item.data).decode("ascii")
        if item.is_image:
            return types.ImageContent(data=data, mime_type=item.media_type)
        if item.is_audio:
            return types.AudioContent(data=data, mime_type=item.media_type)
        resource = types.BlobResourceContents(
            uri=f"data:{item.identifier or 'attachment'}", mime_type=item.media_type, blob=data
        )
        return types.EmbeddedResource(resource=resource)
    return types.TextContent(text=_text(msgspec.to_builtins(item)))


def _result(value: Any) -> Any:
    """A ferrule tool's return value as an MCP `CallToolResult`."""
    import mcp_types as types

    follow_up: Any = None
    if isinstance(value, ToolReturn):
        follow_up = value.content
        value = value.return_value
    content: list[Any] = []
    structured: Any = None
    if isinstance(value, (str, BinaryContent, TextContent)):
        content.append(_block(value))
    else:
        plain: Any = msgspec.to_builtins(value)
        if isinstance(plain, dict):
            structured = cast("dict[str, Any]", plain)
        content.append(types.TextContent(text=_text(plain)))
    if follow_up is not None:
        items = [follow_up] if isinstance(follow_up, str) else list(follow_up)
        content.extend(_block(item) for item in items)
    return types.CallToolResult(content=content, structured_content=structured, is_error=False)


def _error(message: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


class ExposedMCPServer:
    """ferrule tools behind an MCP server of the SDK; serve it over stdio or streamable HTTP.

    Every call validates the arguments with the tool's own validator and runs the tool with a
    `RunContext` holding `deps` (it has no model and an empty history). `ModelRetry` and invalid
    arguments become `isError` results the client's model can act on; other exceptions become an
    `isError` result naming only the exception type (details are logged, not sent).
    """

    def __init__(
        self,
        tools: Sequence[Tool[Any] | Callable[..., Any]],
        *,
        name: str,
        version: str = "",
        instructions: str | None = None,
        deps: Any = None,
    ) -> None:
        built: list[Tool[Any]] = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        if not built:
            raise UserError("an MCP server needs at least one tool")
        refused = [t.name for t in built if t.kind == "external" or t.requires_approval is not False]
        if refused:
            raise UserError(
                f"tools {refused} need an approval or external decision, which an MCP client cannot give; "
                "serve them without requires_approval/external, or leave them out"
            )
        names = [t.name for t in built]
        if len(set(names)) != len(names):
            raise UserError(f"two tools share a name: {names}")
        self.name = name
        """The server's name (its `serverInfo.name`)."""
        self.version = version
        """The server's version string."""
        self.instructions = instructions
        """Instructions sent to clients in the handshake."""
        self.deps = deps
        """The dependencies every tool call's `RunContext` holds."""
        self.tools = {t.name: t for t in built}
        """The served tools by name."""
        self._sdk_server: Any = None

    @property
    def sdk_server(self) -> Any:
        """The SDK's low-level `mcp.server.lowlevel.Server` (built on first use)."""
        if self._sdk_server is None:
            self._sdk_server = self._build()
        return self._sdk_server

    def _build(self) -> Any:
        import mcp_types as types

        from mcp.server.lowlevel import Server

        listing = types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name, description=t.description, input_schema=dict(t.parameters_json_schema)
                )
                for t in self.tools.values()
            ]
        )

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            return listing

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return await self.call(params.name, params.arguments, request_id=getattr(ctx, "request_id", None))

        return Server(
            self.name,
            version=self.version,
            instructions=self.instructions,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )

    async def call(self, name: str, arguments: dict[str, Any] | None, *, request_id: Any = None) -> Any:
        """Run one tool call as the MCP server does and return the SDK `CallToolResult`."""
        tool = self.tools.get(name)
        if tool is None:
            from mcp_types import INVALID_PARAMS

            from mcp.shared.exceptions import MCPError

            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        try:
            args = tool.validate_args(arguments or {})
        except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
            return _error(f"Invalid arguments for tool {name!r}: {exc}")
        ctx = RunContext[Any](
            deps=self.deps,
            model=_NO_MODEL,
            usage=RunUsage(),
            messages=[],
            run_id=uuid.uuid4().hex,
            tool_name=name,
            tool_call_id=str(request_id) if request_id is not None else uuid.uuid4().hex,
        )
        try:
            if tool.timeout is not None:
                with anyio.fail_after(tool.timeout):
                    value = await tool.call(ctx, args)
            else:
                value = await tool.call(ctx, args)
        except ModelRetry as retry:
            return _error(retry.message)
        except TimeoutError:
            return _error(f"Tool {name!r} timed out after {tool.timeout:g} seconds.")
        except Exception as exc:
            logger.exception("MCP tool %r failed", name)
            return _error(f"Tool {name!r} failed ({type(exc).__name__}).")
        return _result(value)

    async def serve_stdio(self) -> None:
        """Serve over this process's stdin and stdout until stdin closes (log to stderr only)."""
        from mcp.server.stdio import stdio_server

        server = self.sdk_server
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    def http_app(
        self, *, path: str = "/mcp", json_response: bool = False, stateless: bool = False, **options: Any
    ) -> Any:
        """A Starlette ASGI app serving streamable HTTP at `path` (run it with any ASGI server)."""
        return self.sdk_server.streamable_http_app(
            streamable_http_path=path, json_response=json_response, stateless_http=stateless, **options
        )

    async def serve_http(self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp") -> None:
        """Serve streamable HTTP with uvicorn (asyncio only; for trio serve `http_app()` with hypercorn)."""
        import uvicorn

        config = uvicorn.Config(
            self.http_app(path=path, host=host), host=host, port=port, log_level="warning"
        )
        await uvicorn.Server(config).serve()


def expose_tools(
    tools: Sequence[Tool[Any] | Callable[..., Any]],
    *,
    name: str = "ferrule",
    version: str = "",
    instructions: str | None = None,
    deps: Any = None,
) -> ExposedMCPServer:
    """Serve ferrule tools (functions or `Tool`s) as an MCP server."""
    return ExposedMCPServer(tools, name=name, version=version, instructions=instructions, deps=deps)


_TOOL_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def expose_agent(
    agent: Agent[Any, Any],
    *,
    name: str | None = None,
    tool_name: str | None = None,
    description: str | None = None,
    deps: Any = None,
    version: str = "",
    timeout: float | None = None,
) -> ExposedMCPServer:
    """Serve an agent as an MCP server with one tool, `ask_<name>(prompt)`, that runs the agent.

    Each call is a fresh run (no shared history) with `deps`; the output is returned as text, or as
    structured content when it is a Struct, dataclass or mapping. A run that pauses for approval
    becomes an `isError` result.
    """
    agent_name = name or agent.name or "agent"
    final_name = tool_name or ("ask_" + _TOOL_NAME_CHARS.sub("_", agent_name).strip("_"))[:64]

    async def ask(ctx: RunContext[Any], prompt: str) -> Any:
        """Ask the agent.

        Args:
            prompt: The request, with everything the agent needs to know.
        """
        try:
            result = await agent.run(prompt, deps=ctx.deps, timeout=timeout)
        except PauseRequiredError:
            raise ModelRetry(
                "The agent needs an approval decision to continue, which cannot be given over MCP."
            ) from None
        return result.output

    tool = Tool(
        ask,
        name=final_name,
        description=description or f"Ask the {agent_name} agent. Send the whole request as `prompt`.",
        side_effect="non_idempotent",
    )
    return ExposedMCPServer([tool], name=agent_name, version=version, deps=deps)
