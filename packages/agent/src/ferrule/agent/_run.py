"""The step loop: every way of running an agent drives a `Run` through `advance()`.

One step is either the model request (`_request.request`) or the handling of its response: a
response without tool calls is a candidate output (`_output_step`); a response with calls is sorted
(`_calls.classify`), checked by argument policies, paused when a call needs a decision (`_pause`),
and otherwise run by the scheduler (`_scheduler.run_calls`), whose results close the step. A run
ends with output (`DONE`), a pause (`PAUSED`) or an exception that carries the run's state.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

import anyio

from ferrule.core import bounded_json
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import Model
from ferrule.core.retry import DeadlineExceededError
from ferrule.core.settings import ModelSettings

from ._calls import ToolCallState
from ._calls import apply_argument_policies
from ._calls import classify
from ._calls import plain_return
from ._errors import ContentFilteredResponseError
from ._errors import IncompleteToolCallError
from ._errors import OutputTruncatedError
from ._errors import RunCancelledError
from ._errors import RunTimeoutError
from ._errors import ToolRetriesExceeded
from ._errors import attach_state
from ._events import EnqueuedMessagesEvent
from ._events import FinalResultEvent
from ._events import FinalStep
from ._events import FunctionToolCallEvent
from ._events import FunctionToolResultEvent
from ._events import ModelResponseStep
from ._events import OutputRetryEvent
from ._events import RunStep
from ._events import ToolResultsStep
from ._guard import apply_guard
from ._guard import confirmed
from ._output_step import Final
from ._output_step import Rejected
from ._output_step import count_output_failure
from ._output_step import retry_output
from ._output_step import text_output
from ._pause import apply_decisions
from ._pause import deferred_calls
from ._pause import pause
from ._receipts import TOOL_NOT_EXECUTED
from ._request import request
from ._scheduler import run_calls
from ._state import DONE
from ._state import HANDLE
from ._state import REQUEST
from ._state import Emit
from ._state import LoopState
from .hooks import HookDispatcher

if TYPE_CHECKING:
    from ._ext import RunExt
    from ._run_options import RunOptions

__all__ = ["TOOL_NOT_EXECUTED", "Run", "new_run_id"]


_TIMEOUT_MESSAGE = (
    "the run deadline passed; in-flight work was cancelled (raise run_timeout / timeout= to allow more)"
)
# Stands in (reusable) for the extension session of a run without extensions.
_NO_SESSION = contextlib.nullcontext()
# Stands in for the run's cancel scope where it needs none (no deadline, no handle).
_NO_SCOPE = contextlib.nullcontext()


class Run(LoopState):
    """One agent invocation: its state and the loop that advances it."""

    # Class-level defaults, no `__init__` of its own: building a run costs what `LoopState` costs
    # (forwarding its keyword arguments would cost a microsecond). A run that is extended,
    # cancellable or cancelled writes its own values (into a small instance dict).
    ext: RunExt | None = None
    """The run's extension state; `None` unless the agent or the run uses an extension."""
    cancellable: bool = False
    """Whether a handle can cancel the run (`iter`, `run_stream`): steps then run in a cancel scope."""
    _scope: anyio.CancelScope | None = None
    _cancel_requested: bool = False

    def extend(
        self,
        options: RunOptions,
        settings_layers: tuple[ModelSettings | None, ModelSettings | None],
        resumed_capabilities: Sequence[str] = (),
    ) -> None:
        """Give the run its extension state (toolsets, capabilities, policies, hooks, budget, queue)."""
        self.settings_layers = settings_layers
        self.queue = options.pending_messages
        from ._ext import RunExt  # the extension machinery, for the runs that use it

        self.ext = RunExt(self, options, resumed_capabilities=resumed_capabilities)

    def start_span(self, parent: Any = None) -> None:
        """Open the run's telemetry span (instrumented agents only), a child of `parent` if given."""
        tracer = self.core.tracer
        if tracer is not None:
            self.run_span = tracer.run_span(self.model, self.run_id, self.correlation, parent)
            self.trace_parent = self.run_span.context

    # --- driving -----------------------------------------------------------------------------------

    def session(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """The extension session of one invocation (toolsets entered); nothing without extensions."""
        return self.ext.session() if self.ext is not None else _NO_SESSION

    async def run_to_end(self, emit: Emit | None = None) -> None:
        """Advance until the run finishes or pauses (inside the run's extension session, if any)."""
        # One cancel scope for every step, rather than one per step (`advance` steps inside it):
        # entering a scope costs several microseconds, and a streamed run's steps are short.
        scoped = self.deadline is not None or self.cancellable
        if self.ext is None and not scoped:
            # No session or scope to enter: skips two awaited no-op context methods per run.
            while self.phase < DONE:
                await self.advance(emit)
            return
        scope = (
            anyio.CancelScope(deadline=self.deadline if self.deadline is not None else math.inf)
            if scoped
            else None
        )
        async with self.session():
            with scope if scope is not None else _NO_SCOPE:
                self._scope = scope
                try:
                    while self.phase < DONE:
                        await self.advance(emit)
                finally:
                    self._scope = None
            if scope is not None and scope.cancelled_caught:
                # The run's own cancellation or deadline, reported (inside the session) as
                # `_step_in_scope` reports it.
                error = (
                    RunCancelledError("the run was cancelled")
                    if self._cancel_requested
                    else RunTimeoutError(_TIMEOUT_MESSAGE)
                )
                self.fail(error)
                raise error

    def cancel(self) -> None:
        """Cancel the step in progress (and every later one)."""
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()

    async def advance(self, emit: Emit | None = None) -> RunStep:
        """Run one step: a model request, or the handling of the last response."""
        if self._cancel_requested:
            error = RunCancelledError("the run was cancelled")
            attach_state(error, self.state())
            self.terminal(error)
            raise error
        if emit is not None and self.hooks is not None:
            emit = _hooked(emit, self.hooks, self)
        scope = self._scope
        try:
            # A run without deadline or handle has no scope to enter, nor one inside `run_to_end`'s:
            # the same step, one branch cheaper.
            if scope is not None or (self.deadline is None and not self.cancellable):
                step = await self._step(emit)
            else:
                step = await self._step_in_scope(emit)
        except DeadlineExceededError as exc:
            error = RunTimeoutError(_TIMEOUT_MESSAGE)
            attach_state(error, self.state())
            self.fail(error)
            raise error from exc
        except BaseException as exc:
            if scope is not None and scope.cancel_called and isinstance(exc, anyio.get_cancelled_exc_class()):
                raise  # the cancellation of `run_to_end`'s scope, which ends the run when it catches it
            self.fail(exc)
            raise
        if self.phase >= DONE and (self.hooks is not None or self.run_span is not None):
            self._ended()
        return step

    async def _step_in_scope(self, emit: Emit | None) -> RunStep:
        """`_step` inside the run's cancel scope: its deadline, and cancellation by the handle."""
        deadline = self.deadline if self.deadline is not None else math.inf
        with anyio.CancelScope(deadline=deadline) as scope:
            self._scope = scope
            try:
                return await self._step(emit)
            finally:
                self._scope = None
        # Only a scope that caught its own cancellation gets here: the handle's, or the deadline's.
        if self._cancel_requested:
            raise RunCancelledError("the run was cancelled")
        raise RunTimeoutError(_TIMEOUT_MESSAGE)

    async def _step(self, emit: Emit | None) -> RunStep:
        """One step: the model request, or the handling of its response."""
        if self.phase == REQUEST:
            response = await request(self, self.ext, emit)
            self.response = response
            self.phase = HANDLE
            return ModelResponseStep(response)
        if self.phase == HANDLE:
            assert self.response is not None
            return await self._handle(self.response, emit)
        raise RuntimeError("the run has already finished")

    def _ended(self) -> None:
        hooks = self.hooks
        if hooks is not None:
            try:
                hooks.fire(
                    "run_end",
                    self.usage.requests,
                    output=self.output,
                    usage=self.usage,
                    model=self.model.system,
                )
            except BaseException as exc:
                self.fail(exc)
                raise
        if self.run_span is not None:
            self.run_span.finish_run(self.usage)
            self.run_span = None

    # --- handling a response -----------------------------------------------------------------------

    async def _handle(self, response: ModelResponse, emit: Emit | None) -> RunStep:
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        _check_finish(self.model, response, calls)
        if self.durable is not None and len(calls) > 1:
            self.durable.check_calls(self.usage.requests - 1, calls)
        if calls:
            return await self._handle_calls(calls, emit)
        outcome = await text_output(self, response)
        if isinstance(outcome, Rejected):
            return await retry_output(self, outcome, emit)
        return await self._finish(outcome, emit)

    async def _handle_calls(self, parts: list[ToolCallPart], emit: Emit | None) -> RunStep:
        calls = [classify(p, self.plan, self.step_tools, self.core.limits_for) for p in parts]
        if self.policies is not None and self.policies.arguments:
            await apply_argument_policies(self, calls)
        controls = self.core.side_effects
        if controls is not None and controls.guard is not None:
            await apply_guard(self, controls.guard, calls)
        if self.decisions is not None:
            await apply_decisions(self, calls, self.decisions)
        else:
            deferred = await deferred_calls(self, calls)
            confirm = controls.confirm if controls is not None else None
            if deferred and (confirm is None or not await confirmed(self, confirm, calls, deferred)):
                loaded = self.ext.loaded_on_demand if self.ext is not None else ()
                return await pause(self, calls, deferred, loaded, emit)
        if emit is not None:
            for c in calls:
                if c.kind != "output":
                    await emit(FunctionToolCallEvent(c.part))
        hooks = self.hooks
        dispatched = [c.part for c in calls if c.kind != "output"] if hooks is not None else []
        if hooks is not None:
            hooks.fire("tool_dispatch_start", self.usage.requests, tool_calls=dispatched)
        try:
            final = await run_calls(self, calls, emit)
            step = await self._close_step(calls, final, emit)
        except Exception as exc:
            if hooks is not None:
                hooks.fire("tool_dispatch_error", self.usage.requests, tool_calls=dispatched, error=exc)
            raise
        if hooks is not None:
            hooks.fire("tool_dispatch_end", self.usage.requests, tool_calls=dispatched)
        return step

    async def _close_step(
        self, calls: list[ToolCallState], final: Final | None, emit: Emit | None
    ) -> RunStep:
        """Record the results of a response's calls, count retries, and choose the next step."""
        parts, follow_ups, unrun = self._results(calls, final)
        if emit is not None:
            for c in unrun:
                if c.kind != "output":
                    await emit(FunctionToolResultEvent(cast("ToolReturnPart | RetryPromptPart", c.result)))
        ext = self.ext
        if ext is not None:
            ext.after_results([(c.part, c.result) for c in calls])
            await ext.commit(parts)
        request = ModelRequest(parts=parts + follow_ups, run_id=self.run_id)
        self.messages.append(request)
        if self.resume_queued is not None:
            queued = self.resume_queued
            self.resume_queued = None
            await self._enqueue(queued, emit)
        if final is not None:
            return await self._finish(final, emit)
        self._count_tool_retries(calls)
        rejected = (
            [c for c in calls if c.kind == "output" and isinstance(c.result, RetryPromptPart)]
            if self.plan.by_tool_name
            else None
        )
        if rejected:
            if emit is not None:
                for c in rejected:
                    assert isinstance(c.result, RetryPromptPart)
                    await emit(OutputRetryEvent(c.result))
            count_output_failure(self, rejected[-1].retry_content)
        self.phase = REQUEST
        return ToolResultsStep(request)

    def _results(
        self, calls: list[ToolCallState], final: Final | None
    ) -> tuple[list[ModelRequestPart], list[ModelRequestPart], list[ToolCallState]]:
        """Every call's result part in call order, the follow-ups, and the calls that got a result
        only now (they did not run)."""
        parts: list[ModelRequestPart] = []
        follow_ups: list[ModelRequestPart] = []
        unrun: list[ToolCallState] = []
        for c in calls:
            result = c.result
            if result is None:
                if final is not None:
                    result = plain_return(c, TOOL_NOT_EXECUTED)
                else:
                    result = RetryPromptPart(
                        content=c.retry_content, tool_name=c.part.tool_name, tool_call_id=c.part.tool_call_id
                    )
                c.result = result
                unrun.append(c)
            parts.append(result)
            if c.follow_up is not None:
                follow_ups.append(UserPromptPart(content=c.follow_up))
        return parts, follow_ups, unrun

    def _count_tool_retries(self, calls: list[ToolCallState]) -> None:
        """A tool that failed in this step uses a retry; one that only succeeded starts over."""
        failed = {c.part.tool_name for c in calls if c.failed and c.kind != "output"}
        retries = self.tool_retries
        if retries:  # only a tool with retries so far has a count to reset
            for c in calls:
                name = c.part.tool_name
                if c.started and not c.failed and name in retries and name not in failed:
                    retries[name] = 0
        for name in failed:
            count = retries.get(name, 0) + 1
            retries[name] = count
            tool = self.step_tools.by_name.get(name)
            limit = self.core.max_retries_for(tool) if tool is not None else self.core.retries
            if count > limit:
                raise ToolRetriesExceeded(name, limit)

    async def _enqueue(self, requests: list[ModelRequest], emit: Emit | None) -> None:
        for message in requests:
            message.run_id = self.run_id
            self.messages.append(message)
        if emit is not None and requests:
            await emit(EnqueuedMessagesEvent(requests))

    async def _finish(self, final: Final, emit: Emit | None) -> RunStep:
        queue = self.queue
        if queue is not None:
            # The final answer is provisional while messages wait: they get another model step.
            taken = queue.take_or_close()
            if taken:
                await self._enqueue(taken, emit)
                self.phase = REQUEST
                return ToolResultsStep(taken[-1])
        self.output = final.value
        self.output_tool_name = final.tool_name
        self.phase = DONE
        if emit is not None:
            await emit(FinalResultEvent(final.value, final.tool_name, final.tool_call_id))
        return FinalStep(final.value)


def _check_finish(model: Model, response: ModelResponse, calls: list[ToolCallPart]) -> None:
    """Refuse a response the model did not finish: filtered, truncated, or with a broken call."""
    reason = response.finish_reason
    if reason == "content_filter":
        raise ContentFilteredResponseError(
            f"{model.system} stopped the response on content-policy grounds (finish reason content_filter)",
            body=response.provider_details,
        )
    for call in calls:
        if not call.tool_name:
            raise IncompleteToolCallError(
                f"{model.system} sent a tool call without a name (call id {call.tool_call_id!r})"
            )
    if reason == "length" or response.state == "incomplete":
        for call in calls:
            if (
                isinstance(call.args, str)
                and call.args.strip()
                and not bounded_json.is_valid(call.args, bounded_json.TOOL_ARGUMENTS)
            ):
                raise IncompleteToolCallError(
                    f"the arguments of tool call {call.tool_name!r} were cut off at the token limit; "
                    "raise ModelSettings.max_tokens"
                )
        raise OutputTruncatedError(
            f"{model.system} stopped at its token limit (finish reason length) before finishing; "
            "raise ModelSettings.max_tokens or ask for shorter output"
        )


def _hooked(emit: Emit, hooks: HookDispatcher, run: LoopState) -> Emit:
    """`emit`, with the stream-event hooks around each event."""
    usage = run.usage

    async def deliver(event: Any) -> None:
        hooks.fire("stream_event_start", usage.requests, event=event)
        try:
            await emit(event)
        except Exception as exc:
            hooks.fire("stream_event_error", usage.requests, event=event, error=exc)
            raise
        hooks.fire("stream_event_end", usage.requests, event=event)

    return deliver


def new_run_id() -> str:
    """A fresh run identifier (128 random bits, hex)."""
    return os.urandom(16).hex()
