"""The tools offered at one step: each tool's `prepare`, then the prepare stage of tool policies.

One function serves every run: a run without extensions passes the agent's tools alone; a run with
toolsets, capabilities, policies or deferred tools passes all of them with the policies and what
tool search has revealed. A run whose tools have no `prepare` and no policies never calls it: the
agent's `AgentCore.step_tools` are used as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import cast

import msgspec

from ferrule.core.model import ToolDefinition

from ._context import RunContext
from ._errors import ToolDefinitionError
from ._tools import Tool
from ._util import settled
from .policies import ToolPolicy

__all__ = ["StepTools", "prepare_tools"]


class StepTools:
    """What one step offers the model: definitions in order, the tools by name, the deferred ones."""

    __slots__ = ("by_name", "deferred", "definitions")

    def __init__(
        self,
        definitions: tuple[ToolDefinition, ...],
        by_name: Mapping[str, Tool[Any]],
        deferred: tuple[ToolDefinition, ...] = (),
    ) -> None:
        self.definitions = definitions
        """The definitions sent with the request, in the order the tools were given."""
        self.by_name = by_name
        """The callable tools of this step by name (deferred ones only once offered)."""
        self.deferred = deferred
        """Every `defer_loading` definition of this step, offered or not (what `tool_search` searches)."""


async def prepare_tools(
    ctx: RunContext[Any],
    tools: Iterable[Tool[Any]],
    *,
    output_tools: Sequence[ToolDefinition] = (),
    policies: Sequence[ToolPolicy] = (),
    exempt: Callable[[Tool[Any]], bool] | None = None,
    native_deferred: bool = False,
    revealed: Collection[str] = (),
) -> StepTools:
    """Prepare `tools` for one step.

    `policies` are the tool policies with a prepare stage (`exempt(tool)` names the framework's
    own tools, which they never see); `native_deferred` says the provider keeps deferred tools out
    of context itself; `revealed` names the deferred tools a search already revealed.
    """
    offered: list[ToolDefinition] = []
    by_name: dict[str, Tool[Any]] = {}
    deferred: list[ToolDefinition] = []
    names: set[str] = set()
    for tool in tools:
        definition = await _prepared(
            ctx, tool, () if policies and exempt is not None and exempt(tool) else policies
        )
        if definition is None:
            continue
        name = definition.name
        if name in names:
            raise ToolDefinitionError(
                f"two tools are named {name!r} for this step; give one another name or put its toolset "
                "in a namespace (toolset.prefixed(...))"
            )
        names.add(name)
        if definition.defer_loading:
            deferred.append(definition)
            if native_deferred:
                offered.append(definition)  # the provider keeps it out of context until a search names it
            elif name in revealed:
                offered.append(msgspec.structs.replace(definition, defer_loading=False))
            else:
                continue
        else:
            offered.append(definition)
        by_name[name] = tool
    clash = [d.name for d in output_tools if d.name in names]
    if clash:
        raise ToolDefinitionError(
            f"the output tool name {clash[0]!r} clashes with a function tool; rename one of them"
        )
    return StepTools(tuple(offered), by_name, tuple(deferred))


async def _prepared(
    ctx: RunContext[Any], tool: Tool[Any], policies: Sequence[ToolPolicy]
) -> ToolDefinition | None:
    """The tool's definition for this step after its `prepare` and the policies, or `None` (hidden)."""
    definition: ToolDefinition | None = tool.definition
    if tool.prepare is not None:
        prepared = await settled(tool.prepare(ctx, tool.definition))
        definition = _same_name(tool, prepared, "prepare()")
    for policy in policies:
        if definition is None:
            break
        if not policy.applies_to(tool.name):
            continue
        result = await settled(policy.on_prepare(ctx, definition))
        definition = _same_name(tool, result, f"the tool policy {type(policy).__name__}")
    return definition


def _same_name(tool: Tool[Any], definition: Any, who: str) -> ToolDefinition | None:
    if definition is None:
        return None
    checked = cast("ToolDefinition", definition)
    if checked.name != tool.name:
        raise ToolDefinitionError(
            f"{who} renamed tool {tool.name!r} to {checked.name!r}; rename tools with toolset.renamed(...) instead"
        )
    return checked
