"""One tool call of a response and what became of it; sorting a response's calls into kinds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from ferrule.core import bounded_json
from ferrule.core.messages import RetryPromptPart, ToolCallPart, ToolReturnPart

from ._deferred import Decision, Denied, ExternalResult
from ._errors import ModelRetry
from ._output import OutputPlan
from ._state import LoopState
from ._step_tools import StepTools
from ._tools import Tool, ToolLimits, args_error_details

__all__ = ["CallKind", "ToolCallState", "apply_argument_policies", "classify", "decided", "plain_return"]

CallKind = Literal["function", "output", "unknown", "invalid"]
"""`function`: a valid call of a step tool; `output`: an output tool; `unknown`: no such tool;
`invalid`: its arguments (or an arguments policy) failed."""


class ToolCallState:
    """One tool call of a response and what became of it."""

    __slots__ = (
        "args",
        "decision",
        "failed",
        "follow_up",
        "kind",
        "limits",
        "part",
        "result",
        "retry_content",
        "started",
        "tool",
    )

    def __init__(self, part: ToolCallPart, kind: CallKind) -> None:
        self.part = part
        self.kind: CallKind = kind
        self.tool: Tool[Any] | None = None
        self.args: Any = None
        self.limits: ToolLimits | None = None
        self.result: ToolReturnPart | RetryPromptPart | None = None
        self.follow_up: Any = None
        self.retry_content: Any = None
        self.decision: Decision | None = None
        self.started = False
        self.failed = False  # counts against the tool's retry budget

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
