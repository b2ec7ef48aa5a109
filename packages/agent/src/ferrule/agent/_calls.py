"""One tool call of a response and what became of it; sorting a response's calls into kinds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Literal

import msgspec

from ferrule.core import bounded_json
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart

from ._deferred import Decision
from ._deferred import Denied
from ._deferred import ExternalResult
from ._errors import ModelRetry
from ._output_plan import OutputPlan
from ._state import LoopState
from ._step_tools import StepTools
from ._tools import Tool
from ._tools import ToolLimits
from ._tools import args_error_details

__all__ = ["CallKind", "ToolCallState", "apply_argument_policies", "classify", "decided", "plain_return"]

CallKind = Literal["function", "output", "unknown", "invalid"]
"""`function`: a valid call of a step tool; `output`: an output tool; `unknown`: no such tool;
`invalid`: its arguments (or an arguments policy) failed."""


class ToolCallState(msgspec.Struct, eq=False):
    """One tool call of a response and what became of it."""

    # A Struct (compared by identity): one per call per step, built at a third of a class's cost.
    part: ToolCallPart
    """The call as the model sent it."""
    kind: CallKind
    """What the call is (see `CallKind`); `reject` makes it `invalid`."""
    tool: Tool[Any] | None = None
    """The step tool it calls (function calls only)."""
    args: Any = None
    """Its validated arguments (function calls only)."""
    limits: ToolLimits | None = None
    """Its tool's limits (function calls only)."""
    result: ToolReturnPart | RetryPromptPart | None = None
    """Its result part, once it has one."""
    follow_up: Any = None
    """The content its tool returned for a user prompt after the results."""
    retry_content: Any = None
    """The retry prompt of a call that failed or was rejected."""
    decision: Decision | None = None
    """A resume decision on the call."""
    started: bool = False
    """Whether its tool started running."""
    failed: bool = False
    """Whether it counts against its tool's retry budget."""

    def reject(self, content: Any) -> None:
        """Mark the call invalid: `content` becomes its retry prompt and counts against its tool."""
        self.kind = "invalid"
        self.retry_content = content
        self.failed = True


def classify(
    part: ToolCallPart, plan: OutputPlan, tools: StepTools, limits_for: Callable[[Tool[Any]], ToolLimits]
) -> ToolCallState:
    """Sort one call: output tool, unknown tool, or a function call with validated arguments."""
    name = part.tool_name
    if name in plan.by_tool_name:
        return ToolCallState(part, "output")
    by_name = tools.by_name
    tool = by_name.get(name)
    if tool is None:
        c = ToolCallState(part, "unknown")
        available = ", ".join(sorted([*by_name, *plan.by_tool_name])) or "none"
        c.retry_content = f"Unknown tool name: {name!r}. Available tools: {available}"
        c.failed = True
        return c
    c = ToolCallState(part, "function")
    c.tool = tool
    c.limits = limits_for(tool)
    try:
        c.args = tool.validate_args(part.args)
    except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
        c.reject(args_error_details(exc))
    return c


async def apply_argument_policies(run: LoopState, calls: list[ToolCallState]) -> None:
    """The arguments stage of the run's policies on every valid function call (not framework tools)."""
    policies = run.policies
    assert policies is not None
    for c in calls:
        tool = c.tool
        if c.kind != "function" or tool is None or policies.exempt(tool):
            continue
        ctx = run.call_context(tool, c.part.tool_call_id)
        try:
            c.args = await policies.apply_arguments(ctx, tool, c.part, c.args)
        except ModelRetry as retry:
            c.reject(retry.message)
        except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
            c.reject(args_error_details(exc))


def plain_return(c: ToolCallState, content: str) -> ToolReturnPart:
    """A successful result with fixed `content` (for calls skipped after the final result)."""
    return ToolReturnPart(tool_name=c.part.tool_name, content=content, tool_call_id=c.part.tool_call_id)


def decided(c: ToolCallState, decision: Decision) -> ToolReturnPart:
    """The result of a call that a resume decision answered without running it."""
    if isinstance(decision, Denied):
        return ToolReturnPart(
            tool_name=c.part.tool_name,
            content=decision.message,
            tool_call_id=c.part.tool_call_id,
            outcome="denied",
        )
    assert isinstance(decision, ExternalResult)
    return ToolReturnPart(
        tool_name=c.part.tool_name,
        content=decision.value,
        tool_call_id=c.part.tool_call_id,
        outcome="failed" if decision.error else "success",
    )
