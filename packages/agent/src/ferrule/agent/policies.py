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
from typing import Any

from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ToolDefinition

from ._context import RunContext

__all__ = ["ToolPolicy"]


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
