"""The output step: decode, produce and validate a candidate output, or ask the model again.

A candidate is the text of a response without tool calls (text, native or prompted output) or the
arguments of an output tool call. `text_output` and `tool_output` return a `Final` or say why the
candidate was rejected; `retry_output` records the retry prompt and counts it against the output
retry budget. Output validators and output functions may raise `ModelRetry` to reject a candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import TypeVar
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolReturnPart

from ._calls import ToolCallState
from ._errors import EmptyResponseError
from ._errors import ModelRetry
from ._errors import OutputRetriesExceeded
from ._errors import PausedStateError
from ._events import OutputRetryEvent
from ._events import RunStep
from ._events import ToolResultsStep
from ._output import OutputChoice
from ._output import TextFunction
from ._state import REQUEST
from ._state import Emit
from ._state import LoopState
from ._tools import Tool
from ._tools import args_error_details

__all__ = [
    "EMPTY_RESPONSE_PROMPT",
    "FINAL_RESULT_PROCESSED",
    "TEXT_NOT_ALLOWED_PROMPT",
    "Final",
    "Rejected",
    "count_output_failure",
    "retry_output",
    "short",
    "text_output",
    "tool_output",
]

T = TypeVar("T")

FINAL_RESULT_PROCESSED = "Final result processed."
EMPTY_RESPONSE_PROMPT = "Your response was empty. Respond with text or call a tool."
TEXT_NOT_ALLOWED_PROMPT = (
    "Plain text responses are not permitted, please include your response in a tool call"
)


class Final(msgspec.Struct):
    """The run's output, and the output tool call that produced it (if any)."""

    value: Any
    """The output."""
    tool_name: str | None
    """The output tool that produced it (`None`: the text of a response)."""
    tool_call_id: str | None
    """The ID of that output tool call."""


class Rejected:
    """A rejected text candidate: `content` is the retry prompt; `empty` for an empty response."""

    __slots__ = ("content", "empty")

    def __init__(self, content: Any, *, empty: bool = False) -> None:
        self.content = content
        self.empty = empty


class _OutputRejected(Exception):
    """Internal: the candidate output is rejected with `content` as the retry prompt."""

    def __init__(self, content: Any) -> None:
        self.content = content
        super().__init__(str(content))


def short(content: Any) -> str:
    """A retry prompt's content as one line (validation errors joined by their messages)."""
    if isinstance(content, str):
        return content
    return "; ".join(str(cast("dict[str, Any]", e).get("msg", e)) for e in cast("list[Any]", content))


# --- text responses --------------------------------------------------------------------------------


async def text_output(run: LoopState, response: ModelResponse) -> Final | Rejected:
    """The output of a response without tool calls, or why it is rejected."""
    if run.decisions is not None:  # pragma: no cover - a paused response always has calls
        raise PausedStateError("the paused response has no tool calls")
    text = "".join([p.content for p in response.parts if isinstance(p, TextPart)])
    plan = run.plan
    if not text.strip():
        return Rejected(EMPTY_RESPONSE_PROMPT, empty=True)
    if not plan.text_is_output:
        return Rejected(TEXT_NOT_ALLOWED_PROMPT)
    hooks = run.hooks
    if hooks is not None:
        hooks.fire("output_validation_start", run.usage.requests, output=text)
    try:
        if plan.mode in ("native", "prompted"):
            choice, value = _decode_text(run, text)
            value = await _produce(run, choice, value, None, None)
        else:
            value = text
            if plan.text_function is not None:
                value = await _call_text_function(run, plan.text_function, text)
            if run.output_validators:
                value = await _validate(run, value, None, None, None)
    except _OutputRejected as rejected:
        if hooks is not None:
            hooks.fire(
                "output_validation_error", run.usage.requests, error=ModelRetry(short(rejected.content))
            )
        return Rejected(rejected.content)
    except Exception as exc:
        if hooks is not None:
            hooks.fire("output_validation_error", run.usage.requests, error=exc)
        raise
    if hooks is not None:
        hooks.fire("output_validation_end", run.usage.requests, output=value)
    return Final(value, None, None)


def _decode_text(run: LoopState, text: str) -> tuple[OutputChoice, Any]:
    return _decoded(
        lambda: run.plan.decode_text(text), "The response is not valid JSON ({}); respond with JSON only."
    )


def _decoded(decode: Callable[[], T], malformed: str) -> T:
    """`decode()`, its failure rejected: malformed JSON with `malformed` (its `{}` the reason),
    anything else with the validation details."""
    try:
        return decode()
    except bounded_json.MalformedJsonError as exc:
        raise _OutputRejected(malformed.format(exc.reason)) from exc
    except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
        raise _OutputRejected(args_error_details(exc)) from exc


# --- output tool calls -----------------------------------------------------------------------------


async def tool_output(run: LoopState, c: ToolCallState) -> Final | None:
    """Try one output tool call: its `Final`, or `None` with the retry prompt in `c.result`."""
    hooks = run.hooks
    if hooks is None:
        return await _try_tool_output(run, c)
    hooks.fire("output_validation_start", run.usage.requests, output=c.part.args, tool_call=c.part)
    try:
        final = await _try_tool_output(run, c)
    except Exception as exc:
        hooks.fire("output_validation_error", run.usage.requests, error=exc, tool_call=c.part)
        raise
    if final is None:
        hooks.fire(
            "output_validation_error",
            run.usage.requests,
            error=ModelRetry(short(c.retry_content)),
            tool_call=c.part,
        )
    else:
        hooks.fire("output_validation_end", run.usage.requests, output=final.value, tool_call=c.part)
    return final


async def _try_tool_output(run: LoopState, c: ToolCallState) -> Final | None:
    part = c.part
    choice = run.plan.by_tool_name[part.tool_name]
    try:
        value = _decoded(
            lambda: choice.decode(part.args, bounded_json.PROVIDER_RESPONSE),
            "The arguments are not valid JSON ({}); send a JSON object.",
        )
        value = await _produce(run, choice, value, part.tool_name, part.tool_call_id)
    except _OutputRejected as rejected:
        c.retry_content = rejected.content
        c.result = RetryPromptPart(
            content=rejected.content, tool_name=part.tool_name, tool_call_id=part.tool_call_id
        )
        return None
    c.result = ToolReturnPart(
        tool_name=part.tool_name, content=FINAL_RESULT_PROCESSED, tool_call_id=part.tool_call_id
    )
    return Final(value, part.tool_name, part.tool_call_id)


# --- producing and validating ----------------------------------------------------------------------


async def _produce(
    run: LoopState, choice: OutputChoice, value: Any, tool_name: str | None, tool_call_id: str | None
) -> Any:
    if choice.function is not None:
        value = await _call_output_function(run, choice.function, value, tool_name, tool_call_id)
    if run.output_validators:
        value = await _validate(run, value, choice, tool_name, tool_call_id)
    return value


async def _call_output_function(
    run: LoopState, tool: Tool[Any], raw: Any, tool_name: str | None, tool_call_id: str | None
) -> Any:
    ctx = run.output_context(tool_name or tool.name, tool_call_id)
    try:
        return await tool.call(ctx, raw, threads=run.core.threads)
    except ModelRetry as retry:
        raise _OutputRejected(retry.message) from retry


async def _call_text_function(run: LoopState, function: TextFunction, text: str) -> Any:
    ctx = run.output_context(None, None)
    try:
        return await function.call(ctx, text, threads=run.core.threads)
    except ModelRetry as retry:
        raise _OutputRejected(retry.message) from retry


async def _validate(
    run: LoopState, value: Any, choice: OutputChoice | None, tool_name: str | None, tool_call_id: str | None
) -> Any:
    """Run the output validators (callers skip the coroutine when there are none)."""
    validators = run.output_validators
    ctx = run.output_context(tool_name, tool_call_id)
    original = value
    for fn, takes_ctx, is_async in validators:
        try:
            result = fn(ctx, value) if takes_ctx else fn(value)
            if is_async:
                result = await result
        except ModelRetry as retry:
            raise _OutputRejected(retry.message) from retry
        value = result
    if choice is not None and value is not original:
        try:
            value = choice.revalidate(value)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise _OutputRejected(args_error_details(exc)) from exc
    return value


# --- retries ---------------------------------------------------------------------------------------


async def retry_output(run: LoopState, rejected: Rejected, emit: Emit | None) -> RunStep:
    """Send a rejected text candidate back as a retry prompt; the next step is a request."""
    part = RetryPromptPart(content=rejected.content)
    request = ModelRequest(parts=[part], run_id=run.run_id)
    run.messages.append(request)
    count_output_failure(run, rejected.content, empty=rejected.empty)
    if emit is not None:
        await emit(OutputRetryEvent(part))
    run.phase = REQUEST
    return ToolResultsStep(request)


def count_output_failure(run: LoopState, content: Any, *, empty: bool = False) -> None:
    """Count one rejected output; raise when the output retry budget is spent."""
    run.output_retries += 1
    run.ctx.output_retries = run.output_retries
    limit = run.core.output_retries
    if run.output_retries > limit:
        if empty:
            raise EmptyResponseError(
                f"{run.model.system} returned an empty response (no text and no tool call) "
                f"{run.output_retries} times; output retry budget is {limit}"
            )
        raise OutputRetriesExceeded(limit, short(content))
