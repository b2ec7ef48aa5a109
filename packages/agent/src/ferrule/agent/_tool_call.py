"""One accepted function call: call and return policies, hooks, span, the tool under its timeout,
and its result part sized and checked (`execute_call`).

Every outcome becomes `c.result`: the tool's return, a retry prompt (`ModelRetry`, a timeout of a
repeatable tool, a result over its limits), or an `interrupted` result with an unknown outcome for
a non-idempotent tool that timed out. Anything else the tool raises ends the run.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

import anyio
import msgspec

from ferrule.core.errors import UrlPolicyError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import VideoUrl

from ._calls import ToolCallState
from ._errors import ModelRetry
from ._errors import ToolDefinitionError
from ._events import FunctionToolResultEvent
from ._foreign import enc_hook
from ._state import Emit
from ._state import LoopState
from ._tools import ToolLimits
from ._tools import ToolReturn
from ._url_check import check_content
from .policies import PolicyStages

if TYPE_CHECKING:
    from .durable import DurableRun

__all__ = ["execute_call"]

_RICH = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl, BinaryContent, UploadedFile)
_PLAIN = (str, int, float, bool, type(None), dict, list)
_AS_IS = (*_PLAIN, *_RICH)  # returned values kept as they are; anything else becomes its JSON form


async def execute_call(run: LoopState, c: ToolCallState, emit: Emit | None) -> None:
    """Run one accepted call and leave its result part in `c.result` (emitted when streaming)."""
    tool = c.tool
    assert tool is not None
    part = c.part
    ctx = run.call_context(tool, part.tool_call_id)
    policies = run.policies
    if policies is not None and (policies.call or policies.returns) and policies.exempt(tool):
        policies = None  # policies never see the framework's own tools
    if policies is not None and policies.call and await _refused(policies, ctx, c, emit):
        return
    hooks = run.hooks
    if hooks is not None:
        hooks.fire("tool_execute_start", run.usage.requests, tool_call=part, args=c.args)
    tracer = run.core.tracer
    span = (
        tracer.tool_span(part.tool_name, part, run.trace_parent, tool.description)
        if tracer is not None
        else None
    )
    run.usage.tool_calls += 1
    c.started = True
    threads = run.core.threads
    try:
        if run.durable is None:
            called = (
                tool.call(ctx, c.args, threads=threads)
                if span is None
                else span.call(tool, ctx, c.args, threads)
            )
        else:
            called = _step(run, run.durable, ctx, c, span)
        timeout = c.limits.timeout if c.limits is not None else None
        # The common case has no timeout: no timer to set, no scope to enter.
        value = await called if timeout is None else await _within(run, c, called, timeout)
        if value is _TIMED_OUT:
            if span is not None:
                span.finish_error("timeout")
        elif policies is not None and policies.returns:
            value = await policies.returned(ctx, part, value)
    except ModelRetry as retry:
        c.failed = True
        c.result = RetryPromptPart(
            content=retry.message, tool_name=part.tool_name, tool_call_id=part.tool_call_id
        )
        if span is not None:
            span.finish_error("retry")
    except _outcome_unknown():
        c.result = _unknown(run, c, "was running when the process running it stopped", span)
    except BaseException as exc:
        if isinstance(exc, Exception):
            c.result = ToolReturnPart(
                tool_name=part.tool_name,
                content=f"The tool failed with an unexpected error ({type(exc).__name__}); the run stopped.",
                tool_call_id=part.tool_call_id,
                outcome="failed",
            )
            if hooks is not None:
                hooks.fire("tool_execute_error", run.usage.requests, tool_call=part, error=exc)
        if span is not None:
            span.fail(exc)
        raise
    else:
        if value is not _TIMED_OUT:
            c.result = _tool_return(run, c, value)
            if span is not None:
                span.finish_result(c.result)
    if hooks is not None:
        hooks.fire("tool_execute_end", run.usage.requests, tool_call=part, result=c.result)
    if emit is not None:
        await emit(FunctionToolResultEvent(cast("ToolReturnPart | RetryPromptPart", c.result)))


_TIMED_OUT: Any = object()


class _NeverRaised(Exception):
    """Stands for `durable.OutcomeUnknown` while `ferrule.agent.durable` is not imported."""


def _outcome_unknown() -> type[Exception]:
    # Only a durable engine raises OutcomeUnknown, and it imported the module to do so: a process
    # without one never loads it (the except clause evaluates this only when a tool raised).
    if "ferrule.agent.durable" not in sys.modules:
        return _NeverRaised
    from .durable import OutcomeUnknown

    return OutcomeUnknown


def _step(run: LoopState, durable: DurableRun, ctx: Any, c: ToolCallState, span: Any) -> Awaitable[Any]:
    """The call as one engine step; workflow-origin tools are deterministic and run inline instead."""
    tool = c.tool
    assert tool is not None
    threads = run.core.threads
    if tool.origin == "workflow":
        return (
            tool.call(ctx, c.args, threads=threads) if span is None else span.call(tool, ctx, c.args, threads)
        )
    # The step of the response that made the call (right on a resumed run too).
    return durable.tool_call(
        run.usage.requests - 1,
        tool,
        c.part,
        lambda: (
            tool.call(ctx, c.args, threads=threads) if span is None else span.call(tool, ctx, c.args, threads)
        ),
    )


async def _refused(policies: PolicyStages, ctx: Any, c: ToolCallState, emit: Emit | None) -> bool:
    """The call stage of the policies: whether one refused the call (its retry prompt in `c.result`)."""
    part = c.part
    try:
        await policies.before_call(ctx, part, c.args)
    except ModelRetry as retry:
        c.failed = True
        c.result = RetryPromptPart(
            content=retry.message, tool_name=part.tool_name, tool_call_id=part.tool_call_id
        )
        if emit is not None:
            await emit(FunctionToolResultEvent(c.result))
        return True
    return False


async def _within(run: LoopState, c: ToolCallState, called: Awaitable[Any], seconds: float) -> Any:
    """The tool's value, or `_TIMED_OUT` (with the timeout's result in `c.result`)."""
    value: Any = None
    with anyio.move_on_after(seconds) as scope:
        value = await called
    if scope.cancelled_caught:
        c.result = _timed_out(run, c, seconds)
        return _TIMED_OUT
    return value


def _timed_out(run: LoopState, c: ToolCallState, timeout: float) -> ToolReturnPart | RetryPromptPart:
    tool = c.tool
    assert tool is not None
    name = c.part.tool_name
    if tool.side_effect == "non_idempotent":
        return _unknown(run, c, f"timed out after {timeout:g} seconds while running")
    c.failed = True
    return RetryPromptPart(
        content=f"Tool {name!r} timed out after {timeout:g} seconds; you may call it again.",
        tool_name=name,
        tool_call_id=c.part.tool_call_id,
    )


def _unknown(run: LoopState, c: ToolCallState, what: str, span: Any = None) -> ToolReturnPart:
    """The result of a non-idempotent call whose outcome is unknown; it is never run again."""
    if span is not None:
        span.finish_error("unknown")
    name = c.part.tool_name
    run.unknown_outcomes.append(c.part)
    return ToolReturnPart(
        tool_name=name,
        content=(
            f"Tool {name!r} {what}. Its outcome is unknown: it may or may not have taken effect. Do not "
            "assume it succeeded, and do not call it again without checking its effect first."
        ),
        tool_call_id=c.part.tool_call_id,
        outcome="interrupted",
        metadata={"ferrule_outcome": "unknown"},
    )


def _failed_after_run(
    c: ToolCallState, reason: str, fix: str = "call it so that it returns less"
) -> ToolReturnPart | RetryPromptPart:
    tool = c.tool
    assert tool is not None
    name = c.part.tool_name
    if tool.side_effect == "non_idempotent":
        return ToolReturnPart(
            tool_name=name,
            content=f"Tool {name!r} ran, but {reason}. Do not call it again for the same purpose.",
            tool_call_id=c.part.tool_call_id,
            outcome="failed",
        )
    c.failed = True
    return RetryPromptPart(
        content=f"Tool {name!r} ran, but {reason}; {fix}.", tool_name=name, tool_call_id=c.part.tool_call_id
    )


def _tool_return(run: LoopState, c: ToolCallState, value: Any) -> ToolReturnPart | RetryPromptPart:
    """The result part of a returned value: follow-ups and size within limits, URLs allowed."""
    limits = c.limits
    assert limits is not None
    part = c.part
    metadata: Any = None
    if isinstance(value, ToolReturn):
        follow_up = value.content
        metadata = value.metadata
        value = value.return_value
        if follow_up is not None:
            problem = _follow_up_problem(follow_up, limits)
            if problem is not None:
                return _failed_after_run(c, problem)
            c.follow_up = follow_up if isinstance(follow_up, str) else list(follow_up)
    content: Any
    if isinstance(value, str):
        size = len(value) if value.isascii() else len(value.encode())
        content = value
    else:
        try:
            raw = msgspec.json.encode(value, enc_hook=enc_hook)
        except (TypeError, msgspec.EncodeError) as exc:
            raise ToolDefinitionError(
                f"tool {part.tool_name!r} returned a value that cannot be encoded as JSON ({type(value).__name__}): "
                f"{exc}; return msgspec-encodable data or a pydantic model"
            ) from exc
        size = len(raw)
        content = cast("Any", value) if isinstance(value, _AS_IS) else msgspec.json.decode(raw)
    if size > limits.max_result_bytes:
        c.follow_up = None
        return _failed_after_run(
            c, f"its result of {size} bytes exceeds the limit of {limits.max_result_bytes} bytes"
        )
    try:
        check_content(run.core.url_policy, content)
        if c.follow_up is not None:
            check_content(run.core.url_policy, c.follow_up)
    except UrlPolicyError as exc:
        c.follow_up = None
        return _failed_after_run(
            c,
            f"it returned content by a URL that may not be fetched ({exc})",
            "return it without that URL",
        )
    return ToolReturnPart(
        tool_name=part.tool_name, content=content, tool_call_id=part.tool_call_id, metadata=metadata
    )


def _follow_up_problem(content: Any, limits: ToolLimits) -> str | None:
    items: list[Any] = [content] if isinstance(content, str) else list(cast("Sequence[Any]", content))
    if len(items) > limits.max_follow_ups:
        return f"it returned {len(items)} follow-up items, more than the limit of {limits.max_follow_ups}"
    total = 0
    for item in items:
        if isinstance(item, str):
            total += len(item.encode())
        elif isinstance(item, BinaryContent):
            total += len(item.data)
        elif hasattr(item, "content") and isinstance(getattr(item, "content", None), str):
            total += len(cast("str", item.content).encode())
    if total > limits.max_follow_up_bytes:
        return (
            f"its follow-up content of {total} bytes exceeds the limit of {limits.max_follow_up_bytes} bytes"
        )
    return None
