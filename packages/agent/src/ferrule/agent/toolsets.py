"""Toolsets: groups of tools an agent prepares again before every model step.

A toolset is anything that subclasses [`AbstractToolset`][ferrule.agent.toolsets.AbstractToolset]:
it is entered for the duration of a run (so it can hold a connection, e.g. to an MCP server) and is
asked for its tools before each model request, given the run context (messages, usage, request
count, dependencies).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, Generic, Self

from ._context import DepsT, RunContext
from ._tools import Tool

__all__ = ["AbstractToolset", "FunctionToolset"]


class AbstractToolset(Generic[DepsT]):
    """Base class of every toolset.

    Subclasses implement [`get_tools`][ferrule.agent.toolsets.AbstractToolset.get_tools]; they may
    override `__aenter__`/`__aexit__` to acquire and release resources for the run.
    """

    id: str | None = None
    """A stable identifier, used in errors and durable execution; `None` for anonymous toolsets."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        """The tools available for the next model step."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class FunctionToolset(AbstractToolset[DepsT]):
    """A fixed set of tools."""

    def __init__(self, tools: Sequence[Tool[DepsT] | Any] = (), *, id: str | None = None) -> None:
        self.tools: list[Tool[DepsT]] = [t if isinstance(t, Tool) else Tool(t) for t in tools]  # pyright: ignore[reportUnknownArgumentType]
        """The tools, in order."""
        self.id = id

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        return self.tools
