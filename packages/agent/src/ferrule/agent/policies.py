"""Tool policies: behaviour around function tools that applies whatever executes them.

A policy subclasses [`ToolPolicy`][ferrule.agent.policies.ToolPolicy] and overrides the stages it
needs; every stage may be sync or async:

| stage | when | may |
|---|---|---|
| `on_prepare(ctx, definition)` | before each request, after toolsets and `Tool.prepare` | change the definition, or hide the tool (`None`) |
| `on_arguments(ctx, call, args)` | after the arguments validated | return changed arguments, or `raise ModelRetry` |
| `on_approval(ctx, call, args)` | before the call is scheduled | return `True` to require approval (pauses the run), `False`/`None` to leave it |
| `on_call(ctx, call, args)` | right before the tool runs (also after a resume) | `raise ModelRetry` to refuse the call (it does not run) |
| `on_return(ctx, call, value)` | after the tool returned | return a changed value, or `raise ModelRetry` |

The agent's policies run first, then each active capability's, in order. A `ModelRetry` counts
against the tool's own retry budget. Policies apply to application and toolset tools, not to the
framework's `load_capability` and `tool_search` tools nor to output tools. Set `tools` to limit a
policy to some tool names (as offered to the model).

```python
class NoDeletes(ToolPolicy):
    def on_call(self, ctx, call, args):
        if call.tool_name.endswith("delete"):
            raise ModelRetry("Deleting is not allowed here.")
```
"""

from __future__ import annotations

from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import cast

from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ToolDefinition

from ._context import RunContext
from ._tools import Tool
from ._util import settled

__all__ = ["PolicyStages", "ToolPolicy"]


class ToolPolicy:
    """Base class of tool policies: override any of the five stages (each default changes nothing)."""

    tools: frozenset[str] | None = None
    """Tool names (as offered to the model) this policy applies to; `None` applies it to all."""

    def applies_to(self, name: str) -> bool:
        """Whether this policy applies to the tool called `name`."""
        return self.tools is None or name in self.tools

    def on_prepare(
        self, ctx: RunContext[Any], definition: ToolDefinition
    ) -> ToolDefinition | Awaitable[ToolDefinition | None] | None:
        """Preparation stage: the definition offered for this step, or `None` to hide the tool."""
        return definition

    def on_arguments(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> Any:
        """Arguments stage: the (possibly changed) validated arguments; `raise ModelRetry` to reject."""
        return args

    def on_approval(
        self, ctx: RunContext[Any], call: ToolCallPart, args: Any
    ) -> bool | Awaitable[bool | None] | None:
        """Approval stage: `True` when this call needs an approval decision before it runs."""
        return None

    def on_call(self, ctx: RunContext[Any], call: ToolCallPart, args: Any) -> Awaitable[None] | None:
        """Call stage: runs right before execution; `raise ModelRetry` to refuse the call."""
        return None

    def on_return(self, ctx: RunContext[Any], call: ToolCallPart, value: Any) -> Any:
        """Return stage: the (possibly changed) value the tool returned; `raise ModelRetry` to reject it."""
        return value


def overrides(policy: ToolPolicy, stage: str) -> bool:
    """Whether `policy` overrides the stage method `stage` (so unused stages cost nothing)."""
    return getattr(type(policy), stage) is not getattr(ToolPolicy, stage)


class PolicyStages:
    """The policies of one run, sorted by the stages they override, and those stages in order.

    `exempt(tool)` names the framework's own tools, which no policy sees.
    """

    __slots__ = ("approval", "arguments", "call", "exempt", "prepare", "returns")

    def __init__(self, policies: Sequence[ToolPolicy], exempt: Callable[[Tool[Any]], bool]) -> None:
        self.exempt = exempt
        self.prepare = [p for p in policies if overrides(p, "on_prepare")]
        self.arguments = [p for p in policies if overrides(p, "on_arguments")]
        self.approval = [p for p in policies if overrides(p, "on_approval")]
        self.call = [p for p in policies if overrides(p, "on_call")]
        self.returns = [p for p in policies if overrides(p, "on_return")]

    async def apply_arguments(
        self, ctx: RunContext[Any], tool: Tool[Any], part: ToolCallPart, args: Any
    ) -> Any:
        """The arguments stage of every applicable policy, in order."""
        current: Any = args
        for policy in self.arguments:
            if not policy.applies_to(part.tool_name):
                continue
            result: Any = await settled(policy.on_arguments(ctx, part, current))
            if result is not current and isinstance(result, dict) and not isinstance(current, dict):
                current = tool.validate_args(cast("dict[str, Any]", result))
            else:
                current = cast("Any", result)
        return current

    async def needs_approval(self, ctx: RunContext[Any], part: ToolCallPart, args: Any) -> bool:
        """Whether an approval policy asks for a decision on this call."""
        for policy in self.approval:
            if not policy.applies_to(part.tool_name):
                continue
            if await settled(policy.on_approval(ctx, part, args)):
                return True
        return False

    async def before_call(self, ctx: RunContext[Any], part: ToolCallPart, args: Any) -> None:
        """The call stage; a `ModelRetry` refuses the call."""
        for policy in self.call:
            if policy.applies_to(part.tool_name):
                await settled(policy.on_call(ctx, part, args))

    async def returned(self, ctx: RunContext[Any], part: ToolCallPart, value: Any) -> Any:
        """The return stage of every applicable policy, in order."""
        for policy in self.returns:
            if policy.applies_to(part.tool_name):
                value = await settled(policy.on_return(ctx, part, value))
        return value
