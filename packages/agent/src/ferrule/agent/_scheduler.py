"""The tool scheduler: which calls of a response run, in what order, how many at once.

`run_calls` applies the end strategy (which calls run around the output calls), `execute` runs a
batch of accepted function calls: decisions applied, queue limits, usage limits, sequential tools
one at a time and every other run of calls concurrently under the agent's and each tool's
concurrency limits. Results stay in call order, on each call's `ToolCallState`. When the run ends
inside a batch, `close_interrupted` gives every unfinished call a result so the history stays valid.
"""

from __future__ import annotations

import contextlib
from typing import Any
from typing import cast

import anyio

from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.usage import UsageLimitExceeded

from ._calls import ToolCallState
from ._calls import decided
from ._calls import plain_return
from ._deferred import Approved
from ._events import FunctionToolResultEvent
from ._output_step import Final
from ._output_step import tool_output
from ._state import Emit
from ._state import LoopState
from ._tool_call import execute_call
from ._tools import Tool

__all__ = ["OUTPUT_NOT_USED", "close_interrupted", "execute", "run_calls"]

OUTPUT_NOT_USED = "Output tool not used - a final result was already processed."

_NO_LIMIT = contextlib.nullcontext()  # stands in for a limiter a group does not need (reusable)


async def run_calls(run: LoopState, calls: list[ToolCallState], emit: Emit | None) -> Final | None:
    """Run the calls of one response under the agent's end strategy; the final output, if any."""
    # Without output tools (text output) no call is an output call: nothing to sort out.
    output_calls = [c for c in calls if c.kind == "output"] if run.plan.by_tool_name else None
    if not output_calls:
        await execute(run, [c for c in calls if c.kind == "function"], calls, emit)
        return None
    strategy = run.core.end_strategy
    if strategy == "early":
        final = await _first_output(run, output_calls)
        if final is None:
            await execute(run, [c for c in calls if c.kind == "function"], calls, emit)
        return final
    if strategy == "exhaustive":
        await execute(run, [c for c in calls if c.kind == "function"], calls, emit)
        return await _first_output(run, output_calls)
    # graceful: ordinary calls before the first successful output call run; later ones are skipped
    final: Final | None = None
    batch: list[ToolCallState] = []
    for c in calls:
        if c.kind == "function":
            batch.append(c)
        elif c.kind == "output":
            if final is None:
                await execute(run, batch, calls, emit)
                batch = []
                final = await tool_output(run, c)
            else:
                c.result = plain_return(c, OUTPUT_NOT_USED)
    if final is None:
        await execute(run, batch, calls, emit)
    return final


async def _first_output(run: LoopState, output_calls: list[ToolCallState]) -> Final | None:
    """Try output calls in order until one succeeds; later ones are not used."""
    final: Final | None = None
    for c in output_calls:
        if final is None:
            final = await tool_output(run, c)
        else:
            c.result = plain_return(c, OUTPUT_NOT_USED)
    return final


async def execute(
    run: LoopState, batch: list[ToolCallState], all_calls: list[ToolCallState], emit: Emit | None
) -> None:
    """Run a batch of validated function calls (decisions applied), results kept per call."""
    if not batch:
        return
    runnable = _admit(run, batch)
    if emit is not None:
        for c in batch:
            if c.result is not None:  # decided, or refused by the queue limits
                await emit(FunctionToolResultEvent(c.result))
    if not runnable:
        return
    try:
        _check_call_limits(run, len(runnable))
        i = 0
        while i < len(runnable):
            c = runnable[i]
            assert c.tool is not None
            if c.tool.sequential:
                await execute_call(run, c, emit)
                i += 1
                continue
            j = i + 1
            while j < len(runnable) and not cast("Tool[Any]", runnable[j].tool).sequential:
                j += 1
            if j - i == 1:
                await execute_call(run, c, emit)
            else:
                await _parallel(run, runnable[i:j], emit)
            i = j
    except BaseException as exc:
        close_interrupted(run, all_calls, exc)
        raise


def _admit(run: LoopState, batch: list[ToolCallState]) -> list[ToolCallState]:
    """The calls of `batch` that run: decided calls get their decision's result, calls past the
    queue limits (the agent's, then each tool's) a retry prompt."""
    runnable: list[ToolCallState] = []
    agent_limits = run.core.tool_limits
    envelope = agent_limits.max_concurrency + agent_limits.max_queue
    per_tool: dict[str, int] = {}
    for c in batch:
        decision = c.decision
        if decision is not None and not isinstance(decision, Approved):
            c.result = decided(c, decision)
            continue
        assert c.limits is not None
        seen = per_tool.get(c.part.tool_name, 0)
        per_tool[c.part.tool_name] = seen + 1
        tool_envelope = c.limits.max_concurrency + c.limits.max_queue
        if len(runnable) >= envelope or seen >= tool_envelope:
            limit = envelope if len(runnable) >= envelope else tool_envelope
            c.result = RetryPromptPart(
                content=f"Tool call rejected without running: more than {limit} calls were queued at once. "
                "Call fewer tools per response.",
                tool_name=c.part.tool_name,
                tool_call_id=c.part.tool_call_id,
            )
            continue
        runnable.append(c)
    return runnable


def _check_call_limits(run: LoopState, count: int) -> None:
    usage = run.usage
    limit = run.usage_limits.tool_calls_limit
    if limit is not None and usage.tool_calls + count > limit:
        raise UsageLimitExceeded("tool_calls_limit", limit, usage.tool_calls + count)
    limit = run.core.tool_limits.max_tool_calls
    if limit is not None and usage.tool_calls + count > limit:
        raise UsageLimitExceeded("max_tool_calls", limit, usage.tool_calls + count)


async def _parallel(run: LoopState, group: list[ToolCallState], emit: Emit | None) -> None:
    """Run a group of calls concurrently; the first failure cancels the rest and is raised."""
    agent_limits = run.core.tool_limits
    agent_limiter = (
        anyio.CapacityLimiter(agent_limits.max_concurrency)
        if len(group) > agent_limits.max_concurrency
        else None
    )
    counts: dict[str, int] = {}
    for c in group:
        counts[c.part.tool_name] = counts.get(c.part.tool_name, 0) + 1
    tool_limiters: dict[str, anyio.CapacityLimiter] = {}
    for c in group:
        assert c.limits is not None
        name = c.part.tool_name
        if name not in tool_limiters and counts[name] > c.limits.max_concurrency:
            tool_limiters[name] = anyio.CapacityLimiter(c.limits.max_concurrency)
    fatal: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        for c in group:
            tg.start_soon(
                _guarded,
                run,
                c,
                emit,
                agent_limiter,
                tool_limiters.get(c.part.tool_name),
                fatal,
                tg.cancel_scope,
            )
    if fatal:
        raise fatal[0]


async def _guarded(
    run: LoopState,
    c: ToolCallState,
    emit: Emit | None,
    agent_limiter: anyio.CapacityLimiter | None,
    tool_limiter: anyio.CapacityLimiter | None,
    fatal: list[BaseException],
    scope: anyio.CancelScope,
) -> None:
    """One call of a concurrent group: its tool's slot first, then the agent's."""
    try:
        async with tool_limiter or _NO_LIMIT, agent_limiter or _NO_LIMIT:
            await execute_call(run, c, emit)
    except Exception as exc:
        if not fatal:
            fatal.append(exc)
        scope.cancel()


def close_interrupted(run: LoopState, calls: list[ToolCallState], exc: BaseException) -> None:
    """Give every unfinished call a result so the history stays valid, then record it."""
    parts: list[ModelRequestPart] = []
    for c in calls:
        result = c.result
        if result is None:
            name = c.part.tool_name
            metadata: Any = None
            if c.started and c.tool is not None and c.tool.side_effect == "non_idempotent":
                run.unknown_outcomes.append(c.part)
                content = (
                    f"The call of {name!r} was interrupted while running ({type(exc).__name__}); "
                    "its outcome is unknown: it may or may not have taken effect."
                )
                metadata = {"ferrule_outcome": "unknown"}
            elif c.started:
                content = f"The call of {name!r} was interrupted before it finished ({type(exc).__name__})."
            else:
                content = f"The call of {name!r} was not executed: the run ended ({type(exc).__name__})."
            result = ToolReturnPart(
                tool_name=name,
                content=content,
                tool_call_id=c.part.tool_call_id,
                outcome="interrupted",
                metadata=metadata,
            )
        parts.append(result)
    run.messages.append(ModelRequest(parts=parts, run_id=run.run_id, state="interrupted"))
