"""Many MCP servers behind one small tool: the model picks servers by name before it sees their tools."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any
from typing import Self
from typing import cast

from ferrule.agent import ModelRetry
from ferrule.agent import RunContext
from ferrule.agent import Tool
from ferrule.agent import ToolReturn
from ferrule.agent.toolsets import AbstractToolset
from ferrule.agent.toolsets import enter_all
from ferrule.agent.toolsets import exit_entered
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ToolReturnPart

from ._errors import MCPError
from ._toolset import MCPToolset

__all__ = ["MCPCapabilityProvider"]

_LOADED = "ferrule_mcp_loaded"
"""Metadata key on the load tool's results: the server ids that call made available."""


class MCPCapabilityProvider(AbstractToolset[Any]):
    """A fleet of MCP servers offered through one tool, `load_mcp_servers(servers=[...])`.

    At first the model sees only that tool, whose description lists each server's `id` and
    `description` (written by the application, not by the servers). Calling it connects the named
    servers and lists their tools, which are offered from the next step on. Which servers are loaded
    is read from the run's history (the load results carry it as metadata), so it survives pauses,
    resumes and continued conversations. Servers not selected are never started.
    """

    def __init__(
        self,
        servers: Sequence[MCPToolset],
        *,
        id: str = "mcp",
        tool_name: str = "load_mcp_servers",
        max_servers_per_call: int = 8,
    ) -> None:
        if not servers:
            raise UserError("MCPCapabilityProvider needs at least one server")
        ids = [s.server_id for s in servers]
        if len(set(ids)) != len(ids):
            duplicate = next(i for i in ids if ids.count(i) > 1)
            raise UserError(f"two MCP servers have the id {duplicate!r}; ids must be unique")
        if max_servers_per_call < 1:
            raise UserError(f"max_servers_per_call must be at least 1, got {max_servers_per_call}")
        self.id = id
        self.servers: dict[str, MCPToolset] = {s.server_id: s for s in servers}
        """The servers by id."""
        self.tool_name = tool_name
        """The name of the loading tool."""
        self.max_servers_per_call = max_servers_per_call
        """Most servers one call of the loading tool may load."""
        self._entered: list[MCPToolset] = []
        self._load_tool = self._make_load_tool()

    def _make_load_tool(self) -> Tool[Any]:
        lines = [
            f"- {sid}: {server.description or '(no description)'}" for sid, server in self.servers.items()
        ]
        description = (
            "Load the tools of one or more MCP servers so that you can call them from the next step on. "
            "Load only what the task needs. Available servers:\n" + "\n".join(lines)
        )
        schema = {
            "type": "object",
            "properties": {
                "servers": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(self.servers)},
                    "minItems": 1,
                    "maxItems": self.max_servers_per_call,
                    "description": "The ids of the servers to load.",
                }
            },
            "required": ["servers"],
            "additionalProperties": False,
        }

        async def load(ctx: RunContext[Any], servers: list[str]) -> ToolReturn:
            return await self._load(servers)

        return Tool(
            load,
            name=self.tool_name,
            description=description,
            parameters_json_schema=schema,
            side_effect="read_only",
            origin="workflow",
        )

    async def _load(self, names: list[str]) -> ToolReturn:
        unknown = [n for n in names if n not in self.servers]
        if unknown:
            raise ModelRetry(
                f"Unknown MCP servers: {', '.join(unknown)}. Available: {', '.join(self.servers)}"
            )
        loaded: dict[str, list[str]] = {}
        failed: dict[str, str] = {}
        for name in dict.fromkeys(names):
            server = self.servers[name]
            try:
                infos = await server.list_tools()
            except MCPError as exc:
                if server.required:
                    raise
                failed[name] = "unavailable"
                del exc
                continue
            loaded[name] = [info.exposed_name for info in infos]
        value: dict[str, Any] = {"loaded": loaded}
        if failed:
            value["unavailable"] = failed
        return ToolReturn(return_value=value, metadata={_LOADED: sorted(loaded)})

    def loaded(self, ctx: RunContext[Any]) -> list[str]:
        """The ids of the servers loaded so far in this run (from its history)."""
        found: dict[str, None] = {}
        for message in ctx.messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == self.tool_name:
                    metadata: Any = part.metadata
                    loaded: Any = (
                        cast("dict[str, Any]", metadata).get(_LOADED) if isinstance(metadata, dict) else None
                    )
                    if isinstance(loaded, list):
                        for sid in cast("list[Any]", loaded):
                            if isinstance(sid, str) and sid in self.servers:
                                found[sid] = None
        return list(found)

    async def get_tools(self, ctx: RunContext[Any]) -> Sequence[Tool[Any]]:
        tools: list[Tool[Any]] = [self._load_tool]
        names = {self.tool_name}
        for sid in self.loaded(ctx):
            for tool in await self.servers[sid].get_tools(ctx):
                if tool.name in names:
                    continue  # the first server (in load order) keeps a name; namespace servers to avoid this
                names.add(tool.name)
                tools.append(tool)
        return tools

    async def __aenter__(self) -> Self:
        await enter_all(self.servers.values(), self._entered)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await exit_entered(self._entered, exc_type, exc, tb)
