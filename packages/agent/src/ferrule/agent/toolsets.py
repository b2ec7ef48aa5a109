"""Toolsets: groups of tools an agent prepares again before every model step.

A toolset is anything that subclasses [`AbstractToolset`][ferrule.agent.toolsets.AbstractToolset]:
it is entered for the duration of a run (so it can hold a connection, e.g. to an MCP server) and is
asked for its tools before each model request, given the run context (messages, usage, request
count, dependencies).

```python
from ferrule.agent import Agent
from ferrule.agent.toolsets import FunctionToolset

files = FunctionToolset([read_file, list_dir], id="files")
agent = Agent(model, toolsets=[files.prefixed("fs")])   # the model sees fs__read_file, fs__list_dir
```

Wrappers compose: `prefixed` (namespaces: `ns__tool`), `filtered`, `renamed`, `prepared` (a
per-step preparer that sees the run context and may enable, disable or re-describe tools),
`with_metadata` and `deferred` (kept out of the request until the built-in `tool_search` surfaces
them). Metadata merges from the tool, to each toolset around it (inner first), to a prepared
entry; it is application data and never sent to a model.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from types import TracebackType
from typing import Any
from typing import Generic
from typing import Self
from typing import TypeAlias
from typing import TypeVar
from typing import cast
from typing import overload

from ferrule.core.model import ToolDefinition

from ._context import DepsT
from ._context import RunContext
from ._errors import ToolDefinitionError
from ._tools import Tool
from ._tools import as_tool
from ._util import settled

__all__ = [
    "AbstractToolset",
    "CombinedToolset",
    "DeferredToolset",
    "FilteredToolset",
    "FunctionToolset",
    "PrefixedToolset",
    "PreparedToolset",
    "RenamedToolset",
    "ToolsetPreparer",
    "WrapperToolset",
    "enter_all",
    "exit_entered",
    "tools_of",
]

_ToolsetT = TypeVar("_ToolsetT", bound="AbstractToolset[Any]")

ToolsetPreparer: TypeAlias = Callable[
    [RunContext[Any], list[ToolDefinition]],
    "Sequence[ToolDefinition] | Awaitable[Sequence[ToolDefinition] | None] | None",
]
"""`preparer(ctx, definitions)` returning the definitions to offer for this step (sync or async).

Returning a subset disables the others for the step; a returned definition may change the
`description`, `strict`, `defer_loading` and `metadata` (merged over the tool's) of the tool of
the same name. `None` offers every tool unchanged.
"""

_NAMESPACE = re.compile(r"^[A-Za-z0-9_-]+$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_CACHE_LIMIT = 1024


def _merge(base: dict[str, Any] | None, extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not extra:
        return base
    if not base:
        return dict(extra)
    return {**base, **extra}


class _CloneCache:
    """Clones of tools, so a wrapper does not rebuild the same definition on every step."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[tuple[int, Any], tuple[Tool[Any], Tool[Any]]] = {}

    def get(self, tool: Tool[Any], key: Any, make: Callable[[], Tool[Any]]) -> Tool[Any]:
        cached = self._items.get((id(tool), key))
        if cached is not None and cached[0] is tool:
            return cached[1]
        clone = make()
        if len(self._items) >= _CACHE_LIMIT:
            self._items.clear()  # tools are normally few and long-lived; stay bounded anyway
        self._items[(id(tool), key)] = (tool, clone)
        return clone


class AbstractToolset(Generic[DepsT]):
    """Base class of every toolset.

    Subclasses implement [`get_tools`][ferrule.agent.toolsets.AbstractToolset.get_tools]; they may
    override `__aenter__`/`__aexit__` to acquire and release resources for the run. The agent
    enters each toolset once per run, in the task that drives the run, before the first request.
    """

    id: str | None = None
    """A stable identifier, used in errors and durable execution; `None` for anonymous toolsets."""
    metadata: dict[str, Any] | None = None
    """Application data merged over the metadata of every tool of this toolset; never sent."""

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

    # --- wrappers ---------------------------------------------------------------------------------

    def prefixed(self, namespace: str) -> PrefixedToolset[DepsT]:
        """This toolset with every tool offered as `namespace__tool`."""
        return PrefixedToolset(self, namespace)

    def filtered(
        self, predicate: Callable[[RunContext[DepsT], ToolDefinition], bool]
    ) -> FilteredToolset[DepsT]:
        """This toolset offering only the tools for which `predicate(ctx, definition)` is true."""
        return FilteredToolset(self, predicate)

    def renamed(self, names: Mapping[str, str]) -> RenamedToolset[DepsT]:
        """This toolset with tools renamed by `names` (`{current: new}`)."""
        return RenamedToolset(self, names)

    def prepared(self, preparer: ToolsetPreparer) -> PreparedToolset[DepsT]:
        """This toolset with a per-step `preparer(ctx, definitions)`; see `ToolsetPreparer`."""
        return PreparedToolset(self, preparer)

    def with_metadata(self, metadata: Mapping[str, Any]) -> WrapperToolset[DepsT]:
        """This toolset with `metadata` merged over each tool's metadata."""
        return WrapperToolset(self, metadata=metadata)

    def deferred(self) -> DeferredToolset[DepsT]:
        """This toolset with every tool deferred: offered only once `tool_search` surfaces it."""
        return DeferredToolset(self)


async def tools_of(toolset: AbstractToolset[Any], ctx: RunContext[Any]) -> list[Tool[Any]]:
    """The tools of `toolset` for this step, with the toolset's own `metadata` merged in."""
    tools = await toolset.get_tools(ctx)
    extra = toolset.metadata
    if not extra:
        return list(tools)
    return [t.replace(metadata=_merge(t.metadata, extra)) for t in tools]


class FunctionToolset(AbstractToolset[DepsT]):
    """A fixed set of tools."""

    def __init__(
        self,
        tools: Sequence[Tool[DepsT] | Callable[..., Any]] = (),
        *,
        id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.tools: list[Tool[DepsT]] = [as_tool(t) for t in tools]
        """The tools, in order."""
        self.id = id
        self.metadata = dict(metadata) if metadata else None
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            duplicate = next(n for n in names if names.count(n) > 1)
            raise ToolDefinitionError(f"the toolset has two tools named {duplicate!r}")

    def add_tool(self, tool: Tool[DepsT] | Callable[..., Any]) -> None:
        """Add a tool (a `Tool` or a function)."""
        built = as_tool(tool)
        if any(t.name == built.name for t in self.tools):
            raise ToolDefinitionError(f"the toolset already has a tool named {built.name!r}")
        self.tools.append(built)

    @overload
    def tool(self, fn: Callable[..., Any], /) -> Callable[..., Any]: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
    def tool(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Decorator: add a function as a tool (options as for `Tool`)."""

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(Tool(function, **options))
            return function

        return decorate(fn) if fn is not None else decorate

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        return self.tools


class CombinedToolset(AbstractToolset[DepsT]):
    """Several toolsets offered as one, in order."""

    def __init__(self, toolsets: Sequence[AbstractToolset[DepsT]], *, id: str | None = None) -> None:
        self.toolsets = list(toolsets)
        """The toolsets, in order."""
        self.id = id
        self._entered: list[AbstractToolset[DepsT]] = []

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        tools: list[Tool[DepsT]] = []
        for toolset in self.toolsets:
            tools.extend(await tools_of(toolset, ctx))
        return tools

    async def __aenter__(self) -> Self:
        await enter_all(self.toolsets, self._entered)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await exit_entered(self._entered, exc_type, exc, tb)


async def enter_all(toolsets: Iterable[_ToolsetT], entered: list[_ToolsetT]) -> None:
    """Enter `toolsets` in order, appending each to `entered` once it is entered.

    If one fails to enter, those already entered are exited (newest first) with the error, which
    is then raised.
    """
    try:
        for toolset in toolsets:
            await toolset.__aenter__()
            entered.append(toolset)
    except BaseException as exc:
        await exit_entered(entered, type(exc), exc, exc.__traceback__)
        raise


async def exit_entered(
    entered: list[_ToolsetT],
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> None:
    """Exit the toolsets in `entered`, newest first, emptying the list."""
    while entered:
        await entered.pop().__aexit__(exc_type, exc, tb)


class WrapperToolset(AbstractToolset[DepsT]):
    """A toolset around another one: entered and asked through it. Subclass to change its tools."""

    def __init__(self, wrapped: AbstractToolset[DepsT], *, metadata: Mapping[str, Any] | None = None) -> None:
        self.wrapped = wrapped
        """The inner toolset."""
        self.id = wrapped.id
        self.metadata = dict(metadata) if metadata else None
        self._clones = _CloneCache()

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        return await tools_of(self.wrapped, ctx)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.wrapped.__aexit__(exc_type, exc, tb)


class PrefixedToolset(WrapperToolset[DepsT]):
    """Offers every tool of the inner toolset as `namespace__tool` (provider-safe characters only)."""

    def __init__(self, wrapped: AbstractToolset[DepsT], namespace: str) -> None:
        if not _NAMESPACE.match(namespace) or "__" in namespace:
            raise ToolDefinitionError(
                f"invalid toolset namespace {namespace!r}: use letters, digits, '-' and single '_' only"
            )
        super().__init__(wrapped)
        self.namespace = namespace
        """The prefix; tools are offered as `namespace__name`."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        prefix = f"{self.namespace}__"
        result: list[Tool[DepsT]] = []
        for tool in await tools_of(self.wrapped, ctx):
            name = prefix + tool.name
            if not _SAFE_NAME.match(name):
                raise ToolDefinitionError(
                    f"tool {tool.name!r} of namespace {self.namespace!r} has characters providers refuse; "
                    "rename it (toolset.renamed({...}))"
                )
            result.append(
                cast("Tool[DepsT]", self._clones.get(tool, name, lambda t=tool, n=name: t.replace(name=n)))
            )
        return result


class FilteredToolset(WrapperToolset[DepsT]):
    """Offers only the inner tools for which `predicate(ctx, definition)` is true on this step."""

    def __init__(
        self, wrapped: AbstractToolset[DepsT], predicate: Callable[[RunContext[DepsT], ToolDefinition], bool]
    ) -> None:
        super().__init__(wrapped)
        self.predicate = predicate
        """The filter."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        return [t for t in await tools_of(self.wrapped, ctx) if self.predicate(ctx, t.definition)]


class RenamedToolset(WrapperToolset[DepsT]):
    """Offers inner tools under new names (`{current: new}`); other tools keep their names."""

    def __init__(self, wrapped: AbstractToolset[DepsT], names: Mapping[str, str]) -> None:
        super().__init__(wrapped)
        for new in names.values():
            if not new or not _SAFE_NAME.match(new):
                raise ToolDefinitionError(f"invalid tool name {new!r}: use letters, digits, '_', '-' and '.'")
        self.names = dict(names)
        """Current name to offered name."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        result: list[Tool[DepsT]] = []
        for tool in await tools_of(self.wrapped, ctx):
            new = self.names.get(tool.name)
            if new is None or new == tool.name:
                result.append(tool)
            else:
                result.append(
                    cast("Tool[DepsT]", self._clones.get(tool, new, lambda t=tool, n=new: t.replace(name=n)))
                )
        return result


class PreparedToolset(WrapperToolset[DepsT]):
    """Runs a preparer before every step: it sees the run context and picks and adjusts the tools.

    The preparer receives `ctx` (messages, usage, `run_step`, deps) and the inner definitions; it
    returns those to offer (see `ToolsetPreparer`). It cannot invent or rename tools, change a
    parameter schema, or return a name twice: each is a `ToolDefinitionError` before the request.
    """

    def __init__(self, wrapped: AbstractToolset[DepsT], preparer: ToolsetPreparer) -> None:
        super().__init__(wrapped)
        self.preparer = preparer
        """The per-step preparer."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        tools = await tools_of(self.wrapped, ctx)
        by_name = {t.name: t for t in tools}
        prepared = await settled(self.preparer(ctx, [t.definition for t in tools]))
        if prepared is None:
            return tools
        result: list[Tool[DepsT]] = []
        seen: set[str] = set()
        for definition in prepared:
            tool = by_name.get(definition.name)
            if tool is None:
                raise ToolDefinitionError(
                    f"the toolset preparer returned {definition.name!r}, which is not one of its tools "
                    f"({', '.join(by_name) or 'none'}); preparers can only select and adjust tools"
                )
            if definition.name in seen:
                raise ToolDefinitionError(f"the toolset preparer returned the tool {definition.name!r} twice")
            seen.add(definition.name)
            result.append(_adjusted(tool, definition))
        return result


def _adjusted(tool: Tool[Any], definition: ToolDefinition) -> Tool[Any]:
    current = tool.definition
    if definition is current or definition == current:
        return tool
    if definition.parameters_json_schema != current.parameters_json_schema:
        raise ToolDefinitionError(
            f"a preparer changed the parameter schema of tool {tool.name!r}; arguments are validated "
            "against the tool's own schema, so only description, strict, defer_loading and metadata may change"
        )
    return tool.replace(
        description=definition.description,
        strict=definition.strict,
        defer_loading=definition.defer_loading,
        metadata=_merge(tool.metadata, definition.metadata),
    )


class DeferredToolset(WrapperToolset[DepsT]):
    """Marks every inner tool deferred: it stays out of requests until `tool_search` surfaces it."""

    async def get_tools(self, ctx: RunContext[DepsT]) -> Sequence[Tool[DepsT]]:
        result: list[Tool[DepsT]] = []
        for tool in await tools_of(self.wrapped, ctx):
            if tool.defer_loading:
                result.append(tool)
            else:
                result.append(
                    cast(
                        "Tool[DepsT]",
                        self._clones.get(tool, "deferred", lambda t=tool: t.replace(defer_loading=True)),
                    )
                )
        return result
