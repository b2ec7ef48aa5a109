"""The one agent loop: every way of running an agent drives a `_Run` through `advance()`."""

from __future__ import annotations

import hashlib
import inspect
import itertools
import math
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import anyio
import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import UrlPolicyError
from ferrule.core.messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    Message,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
    VideoUrl,
)
from ferrule.core.model import (
    Model,
    ModelCall,
    PartDeltaEvent,
    PartStartEvent,
    ResponseCompleted,
    TextPartDelta,
    ToolCallPartDelta,
    ToolDefinition,
)
from ferrule.core.retry import DeadlineExceededError, RetryBudget, request_with_retry, stream_with_retry
from ferrule.core.settings import ModelSettings
from ferrule.core.usage import RunUsage, UsageLimitExceeded, UsageLimits

from ._context import RunContext
from ._deferred import (
    Approved,
    Decision,
    DeferredCall,
    Denied,
    ExternalResult,
    Paused,
    PausedState,
    new_state_id,
    now_utc,
)
from ._events import (
    DeferredToolCallsEvent,
    EnqueuedMessagesEvent,
    FinalResultEvent,
    FinalStep,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelResponseStep,
    OutputRetryEvent,
    PartialOutputEvent,
    PausedStep,
    RunStep,
    ToolResultsStep,
)
from ._output import OutputChoice, OutputPlan, TextFunction
from ._partial import JsonPrefix
from ._schema import partial_ok
from ._tools import Tool, ToolLimits, ToolReturn, args_error_details
from ._url_check import UrlCheck, check_content
from ._errors import (
    ContentFilteredResponseError,
    DecisionError,
    EmptyResponseError,
    IncompleteToolCallError,
    ModelRetry,
    OutputRetriesExceeded,
    OutputTruncatedError,
    PausedStateError,
    RunCancelledError,
    RunState,
    RunTimeoutError,
    ToolDefinitionError,
    ToolRetriesExceeded,
    attach_state,
)

if TYPE_CHECKING:
    from ._agent import _AgentCore  # pyright: ignore[reportPrivateUsage]
    from ._ext import RunExt
    from .correlation import RunCorrelation
    from .hooks import HookDispatcher
    from .pricing import Pricing

Emit = Callable[[Any], Awaitable[None]]

_REQUEST = 0
_HANDLE = 1
_DONE = 2
_PAUSED = 3

_RICH = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl, BinaryContent, UploadedFile)
_PLAIN = (str, int, float, bool, type(None), dict, list)

TOOL_NOT_EXECUTED = "Tool not executed - a final result was already processed."
OUTPUT_NOT_USED = "Output tool not used - a final result was already processed."
FINAL_RESULT_PROCESSED = "Final result processed."
EMPTY_RESPONSE_PROMPT = "Your response was empty. Respond with text or call a tool."
TEXT_NOT_ALLOWED_PROMPT = (
    "Plain text responses are not permitted, please include your response in a tool call"
)


class HistoryView(Sequence[Message]):
    """A read-only view of the first `n` messages of the run's append-only history (no copy)."""

    __slots__ = ("_items", "_len")

    def __init__(self, items: list[Message], length: int) -> None:
        self._items = items
        self._len = length

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._items[: self._len][index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        return itertools.islice(self._items, self._len)

    def __repr__(self) -> str:
        return f"HistoryView({self._len} messages)"


class _Call:
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

    def __init__(self, part: ToolCallPart, kind: Literal["function", "output", "unknown", "invalid"]) -> None:
        self.part = part
        self.kind = kind
        self.tool: Tool[Any] | None = None
        self.args: Any = None
        self.limits: ToolLimits | None = None
        self.result: ToolReturnPart | RetryPromptPart | None = None
        self.follow_up: Any = None
        self.retry_content: Any = None
        self.decision: Decision | None = None
        self.started = False
        self.failed = False  # counts against the tool's retry budget


class _Final:
    __slots__ = ("tool_call_id", "tool_name", "value")

    def __init__(self, value: Any, tool_name: str | None, tool_call_id: str | None) -> None:
        self.value = value
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class _OutputRejected(Exception):
    """Internal: the candidate output is rejected with `content` as the retry prompt."""

    def __init__(self, content: Any) -> None:
        self.content = content
        super().__init__(str(content))


def _short(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "; ".join(str(cast("dict[str, Any]", e).get("msg", e)) for e in cast("list[Any]", content))


class Run:
    """The state of one agent invocation and the loop that advances it."""

    # Slots keep attribute access fast: a plain instance dict stops sharing keys past 30 attributes.
    __slots__ = (
        "_cancel_requested",
        "_resume_queued",
        "_scope",
        "_step_tool_map",
        "_step_tools",
        "cancellable",
        "core",
        "correlation",
        "cost",
        "ctx",
        "deadline",
        "decisions",
        "ext",
        "history_processors",
        "hooks",
        "instructions",
        "messages",
        "model",
        "new_message_index",
        "output",
        "output_retries",
        "output_tool_name",
        "output_validators",
        "paused",
        "pending_state",
        "phase",
        "plan",
        "pricing",
        "response",
        "retry_budget",
        "run_id",
        "run_span",
        "settings",
        "settings_layers",
        "tool_retries",
        "trace_parent",
        "unknown_outcomes",
        "url_check",
        "usage",
        "usage_limits",
    )

    def __init__(
        self,
        core: _AgentCore,
        *,
        model: Model,
        plan: OutputPlan,
        deps: Any,
        messages: list[Message],
        new_message_index: int,
        instructions: str | None,
        settings: ModelSettings,
        usage_limits: UsageLimits,
        deadline: float | None,
        usage: RunUsage,
        prompt: Any,
        run_id: str,
        tool_retries: dict[str, int] | None = None,
        output_retries: int = 0,
    ) -> None:
        self.core = core
        self.model = model
        self.plan = plan
        self.messages = messages
        self.new_message_index = new_message_index
        self.instructions = instructions
        self.settings = settings
        self.usage_limits = usage_limits
        self.deadline = deadline
        self.usage = usage
        self.run_id = run_id
        self.tool_retries: dict[str, int] = tool_retries if tool_retries is not None else {}
        self.output_retries = output_retries
        self.ctx: RunContext[Any] = RunContext(
            deps=deps,
            model=model,
            usage=usage,
            messages=messages,
            prompt=prompt,
            retries=self.tool_retries,
            run_id=run_id,
            deadline=deadline,
            output_retries=output_retries,
        )
        self.retry_budget = RetryBudget()
        self.unknown_outcomes: list[ToolCallPart] = []
        self.phase = _REQUEST
        self.response: ModelResponse | None = None
        self.decisions: dict[str, Decision] | None = None
        self.pending_state: PausedState | None = None
        self.output: Any = None
        self.output_tool_name: str | None = None
        self.paused: Paused | None = None
        self.cancellable = False
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._step_tools: tuple[ToolDefinition, ...] = core.tool_defs
        self._step_tool_map: dict[str, Tool[Any]] = core.tools
        self.run_span: Any = None
        self.trace_parent: Any = None
        self.correlation: RunCorrelation | None = None
        # Extension points; all stay at these cheap defaults unless the agent or run uses them.
        self.ext: RunExt | None = None
        self.hooks: HookDispatcher | None = None
        self.output_validators = core.output_validators
        self.history_processors = core.history_processors
        self.settings_layers: tuple[ModelSettings | None, ModelSettings | None] = (None, None)
        self.pricing: Pricing | None = None
        self.cost: _Cost | None = None
        self._resume_queued: list[ModelRequest] | None = None
        self.url_check = UrlCheck(core.url_policy)
        if core.pricing is not None:
            self.enable_pricing(core.pricing)

    @property
    def resuming(self) -> bool:
        """Whether the run continues at a paused response (its calls are handled next)."""
        return self.phase == _HANDLE and self.pending_state is not None

    def enable_pricing(self, pricing: Pricing) -> None:
        """Price this run's requests (when the agent does not, but the run has a cost limit)."""
        self.pricing = pricing
        self.cost = _Cost(self.usage.cost_nano_usd if self.usage.requests else 0)

    def resume_from(self, state: PausedState, decisions: dict[str, Decision]) -> None:
        """Continue at the paused response: handle its calls with `decisions`; never re-request it."""
        last = self.messages[-1]
        assert isinstance(last, ModelResponse)
        self.response = last
        self.phase = _HANDLE
        self.decisions = decisions
        self.pending_state = state
        if state.queued_messages:
            self._resume_queued = [m for m in state.queued_messages if isinstance(m, ModelRequest)]

    def start_span(self, parent: Any = None) -> None:
        """Open the run's telemetry span (instrumented agents only), a child of `parent` if given."""
        tracer = self.core.tracer
        if tracer is not None:
            self.run_span = tracer.run_span(self.model, self.run_id, self.correlation, parent)
            self.trace_parent = self.run_span.context

    # --- public driving API ----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the run finished (with output) or paused."""
        return self.phase >= _DONE

    def cancel(self) -> None:
        """Cancel the step in progress (and every later one)."""
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()

    def state(self) -> RunState:
        """The run's state, for errors."""
        return RunState(
            messages=self.messages,
            new_message_index=self.new_message_index,
            usage=self.usage,
            tool_retries=dict(self.tool_retries),
            output_retries=self.output_retries,
            unknown_outcomes=self.unknown_outcomes,
        )

    async def advance(self, emit: Emit | None = None) -> RunStep:
        """Run one step: a model request, or the handling of the last response."""
        if self._cancel_requested:
            error = self._with_state(RunCancelledError("the run was cancelled"))
            self._terminal(error)
            raise error
        if emit is not None and self.hooks is not None:
            emit = self._hooked(emit, self.hooks)
        try:
            if self.deadline is None and not self.cancellable:
                step = await self._advance(emit)
            else:
                step = await self._advance_controlled(emit)
        except DeadlineExceededError as exc:
            error = RunTimeoutError(self._timeout_message())
            attach_state(error, self.state())
            self.fail(error)
            raise error from exc
        except BaseException as exc:
            self.fail(exc)
            raise
        if self.phase >= _DONE:
            if self.hooks is not None:
                self._run_end(self.hooks)
            if self.run_span is not None:
                self.run_span.finish_run(self.usage)
                self.run_span = None
        return step

    def _run_end(self, hooks: HookDispatcher) -> None:
        try:
            hooks.fire(
                "run_end", self.usage.requests, output=self.output, usage=self.usage, model=self.model.system
            )
        except BaseException as exc:
            self.fail(exc)
            raise

    def fail(self, exc: BaseException) -> None:
        """End the run with `exc`: attach its state, notify hooks and telemetry."""
        if isinstance(exc, Exception):
            attach_state(exc, self.state())
        self._terminal(exc)
        self._end_span(exc)

    def _terminal(self, exc: BaseException) -> None:
        if self.ext is not None:
            self.ext.fail(exc)
        hooks = self.hooks
        if hooks is not None and isinstance(exc, Exception):
            hooks.fire_quietly("run_error", self.usage.requests, exc, usage=self.usage)

    def _hooked(self, emit: Emit, hooks: HookDispatcher) -> Emit:
        usage = self.usage

        async def deliver(event: Any) -> None:
            hooks.fire("stream_event_start", usage.requests, event=event)
            try:
                await emit(event)
            except Exception as exc:
                hooks.fire("stream_event_error", usage.requests, event=event, error=exc)
                raise
            hooks.fire("stream_event_end", usage.requests, event=event)

        return deliver

    async def _advance_controlled(self, emit: Emit | None) -> RunStep:
        deadline = self.deadline if self.deadline is not None else math.inf
        with anyio.CancelScope(deadline=deadline) as scope:
            self._scope = scope
            try:
                return await self._advance(emit)
            finally:
                self._scope = None
        if self._cancel_requested:
            raise RunCancelledError("the run was cancelled")
        raise RunTimeoutError(self._timeout_message())

    def _end_span(self, exc: BaseException) -> None:
        if self.run_span is not None:
            self.run_span.fail(exc)
            self.run_span = None

    async def run_to_end(self, emit: Emit | None = None) -> None:
        """Advance until the run finishes or pauses (inside the run's extension session, if any)."""
        if self.ext is None:
            while self.phase < _DONE:
                await self.advance(emit)
            return
        async with self.ext.session():
            while self.phase < _DONE:
                await self.advance(emit)

    def _timeout_message(self) -> str:
        return "the run deadline passed; in-flight work was cancelled (raise run_timeout / timeout= to allow more)"

    def _with_state(self, error: BaseException) -> BaseException:
        attach_state(error, self.state())
        return error

    async def _advance(self, emit: Emit | None) -> RunStep:
        if self.phase == _REQUEST:
            response = await self._request(emit)
            self.response = response
            self.phase = _HANDLE
            return ModelResponseStep(response)
        if self.phase == _HANDLE:
            assert self.response is not None
            return await self._handle(self.response, emit)
        raise RuntimeError("the run has already finished")

    # --- model requests ----------------------------------------------------------------------------

    async def _prepare_tools(self) -> None:
        core = self.core
        if not core.has_prepare:
            return
        defs: list[ToolDefinition] = []
        tool_map: dict[str, Tool[Any]] = {}
        for tool in core.tools.values():
            definition: ToolDefinition | None = tool.definition
            if tool.prepare is not None:
                prepared = tool.prepare(self.ctx, tool.definition)
                if inspect.isawaitable(prepared):
                    prepared = await prepared
                definition = prepared
                if definition is not None and definition.name != tool.name:
                    raise ToolDefinitionError(
                        f"prepare() of tool {tool.name!r} renamed it to {definition.name!r}; tools cannot be renamed"
                    )
            if definition is not None:
                defs.append(definition)
                tool_map[tool.name] = tool
        self._step_tools = tuple(defs)
        self._step_tool_map = tool_map

    async def _history_for_call(self) -> Sequence[Message]:
        view: Sequence[Message] = HistoryView(self.messages, len(self.messages))
        for processor, takes_ctx, is_async in self.history_processors:
            current = list(view)
            result = processor(self.ctx, current) if takes_ctx else processor(current)
            if is_async:
                result = await result
            view = cast("list[Message]", result)
        return view

    async def _request(self, emit: Emit | None) -> ModelResponse:
        self.usage_limits.check_before_request(self.usage)
        self.ctx.run_step = self.usage.requests
        ext = self.ext
        if ext is not None:
            taken = await ext.before_request()
            if taken and emit is not None:
                await emit(EnqueuedMessagesEvent(taken))
        elif self.core.has_prepare:
            await self._prepare_tools()
        plan = self.plan
        history = HistoryView(self.messages, len(self.messages))
        call = ModelCall(
            messages=await self._history_for_call() if self.history_processors else history,
            instructions=self.instructions,
            tools=self._step_tools,
            output_tools=plan.tool_defs,
            output=plan.output_format,
            allow_text_output=plan.text_is_output,
            settings=self.settings,
            deadline=self.deadline,
        )
        if ext is not None and ext.budget is not None:
            call = await ext.budget.enforce(call, self.ctx)
        # Every content URL the request carries passes the URL policy first: what entered the
        # history since the last request, and whatever processors or the budget sent instead.
        self.url_check.new_messages(self.messages)
        if call.messages is not history:
            self.url_check.replaced(call.messages, self.messages)
        hooks: HookDispatcher | None = None
        if ext is not None:
            hooks = self.hooks
            if hooks is not None:
                hooks.fire("model_request_start", self.usage.requests, model=self.model.system, call=call)
        tracer = self.core.tracer
        span = tracer.model_span(self.model, call, self.trace_parent) if tracer is not None else None
        try:
            if emit is None:
                response = await request_with_retry(
                    self.model,
                    call,
                    policy=self.core.retry_policy,
                    budget=self.retry_budget,
                    deadline=self.deadline,
                )
            else:
                response = await self._stream(call, emit)
        except BaseException as exc:
            if span is not None:
                span.fail(exc)
            if hooks is not None and isinstance(exc, Exception):
                hooks.fire("model_request_error", self.usage.requests, model=self.model.system, error=exc)
            raise
        if response.run_id is None:
            response.run_id = self.run_id
        self.messages.append(response)
        usage = self.usage
        usage.requests += 1
        usage.incr(response.usage)
        if self.cost is not None:
            self.cost.add(self, response)
        if span is not None:
            span.finish(response)
        if hooks is not None:
            hooks.fire("model_request_end", usage.requests, model=self.model.system, response=response)
        self.usage_limits.check_tokens(usage)
        return response

    async def _stream(self, call: ModelCall, emit: Emit) -> ModelResponse:
        tracker = _PartialTracker(self)
        response: ModelResponse | None = None
        stream = stream_with_retry(
            self.model, call, policy=self.core.retry_policy, budget=self.retry_budget, deadline=self.deadline
        )
        async with aclosing(stream):
            async for event in stream:
                await emit(event)
                if isinstance(event, ResponseCompleted):
                    response = event.response
                else:
                    partial = await tracker.update(event)
                    if partial is not None:
                        await emit(partial)
        assert response is not None  # the model contract guarantees a completed response
        return response

    # --- handling a response -------------------------------------------------------------------------

    def _check_finish(self, response: ModelResponse, calls: list[ToolCallPart]) -> None:
        reason = response.finish_reason
        if reason == "content_filter":
            raise ContentFilteredResponseError(
                f"{self.model.system} stopped the response on content-policy grounds (finish reason content_filter)",
                body=response.provider_details,
            )
        for call in calls:
            if not call.tool_name:
                raise IncompleteToolCallError(
                    f"{self.model.system} sent a tool call without a name (call id {call.tool_call_id!r})"
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
                f"{self.model.system} stopped at its token limit (finish reason length) before finishing; "
                "raise ModelSettings.max_tokens or ask for shorter output"
            )

    async def _handle(self, response: ModelResponse, emit: Emit | None) -> RunStep:
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        self._check_finish(response, calls)
        if calls:
            return await self._handle_calls(calls, emit)
        return await self._handle_text(response, emit)

    async def _handle_text(self, response: ModelResponse, emit: Emit | None) -> RunStep:
        if self.decisions is not None:  # pragma: no cover - a paused response always has calls
            raise PausedStateError("the paused response has no tool calls")
        texts = [p.content for p in response.parts if isinstance(p, TextPart)]
        text = "".join(texts)
        plan = self.plan
        if not text.strip():
            return await self._output_retry(EMPTY_RESPONSE_PROMPT, None, None, emit, empty=True)
        if not plan.text_is_output:
            return await self._output_retry(TEXT_NOT_ALLOWED_PROMPT, None, None, emit)
        hooks = self.hooks
        if hooks is not None:
            hooks.fire("output_validation_start", self.usage.requests, output=text)
        try:
            if plan.mode in ("native", "prompted"):
                choice, value = self._decode_text(text)
                value = await self._produce(choice, value, None, None)
            else:
                value = text
                if plan.text_function is not None:
                    value = await self._call_text_function(plan.text_function, text)
                value = await self._validate(value, None, None, None)
        except _OutputRejected as rejected:
            if hooks is not None:
                hooks.fire(
                    "output_validation_error", self.usage.requests, error=ModelRetry(_short(rejected.content))
                )
            return await self._output_retry(rejected.content, None, None, emit)
        except Exception as exc:
            if hooks is not None:
                hooks.fire("output_validation_error", self.usage.requests, error=exc)
            raise
        if hooks is not None:
            hooks.fire("output_validation_end", self.usage.requests, output=value)
        return await self._finish(_Final(value, None, None), None, emit)

    def _decode_text(self, text: str) -> tuple[OutputChoice, Any]:
        try:
            return self.plan.decode_text(text)
        except bounded_json.MalformedJsonError as exc:
            raise _OutputRejected(
                f"The response is not valid JSON ({exc.reason}); respond with JSON only."
            ) from exc
        except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
            raise _OutputRejected(args_error_details(exc)) from exc

    async def _output_retry(
        self,
        content: Any,
        tool_name: str | None,
        tool_call_id: str | None,
        emit: Emit | None,
        *,
        empty: bool = False,
    ) -> RunStep:
        part = (
            RetryPromptPart(content=content, tool_name=tool_name, tool_call_id=tool_call_id)
            if tool_call_id is not None
            else RetryPromptPart(content=content, tool_name=tool_name)
        )
        request = ModelRequest(parts=[part], run_id=self.run_id)
        self.messages.append(request)
        self._count_output_failure(content, empty=empty)
        if emit is not None:
            await emit(OutputRetryEvent(part))
        self.phase = _REQUEST
        return ToolResultsStep(request)

    def _count_output_failure(self, content: Any, *, empty: bool = False) -> None:
        self.output_retries += 1
        self.ctx.output_retries = self.output_retries
        limit = self.core.output_retries
        if self.output_retries > limit:
            if empty:
                raise EmptyResponseError(
                    f"{self.model.system} returned an empty response (no text and no tool call) "
                    f"{self.output_retries} times; output retry budget is {limit}"
                )
            raise OutputRetriesExceeded(limit, _short(content))

    # --- output ----------------------------------------------------------------------------------------

    async def _call_output_function(
        self, tool: Tool[Any], raw: Any, tool_name: str | None, tool_call_id: str | None
    ) -> Any:
        ctx = self.ctx.for_call(
            tool_name or tool.name, tool_call_id or "", self.output_retries, self.core.output_retries
        )
        try:
            return await tool.call(ctx, raw, threads=self.core.threads)
        except ModelRetry as retry:
            raise _OutputRejected(retry.message) from retry

    async def _call_text_function(self, function: TextFunction, text: str) -> Any:
        ctx = self.ctx.for_call("", "", self.output_retries, self.core.output_retries)
        try:
            return await function.call(ctx, text, threads=self.core.threads)
        except ModelRetry as retry:
            raise _OutputRejected(retry.message) from retry

    async def _validate(
        self, value: Any, choice: OutputChoice | None, tool_name: str | None, tool_call_id: str | None
    ) -> Any:
        validators = self.output_validators
        if not validators:
            return value
        ctx = self.ctx.for_call(
            tool_name or "", tool_call_id or "", self.output_retries, self.core.output_retries
        )
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

    async def _produce(
        self, choice: OutputChoice, value: Any, tool_name: str | None, tool_call_id: str | None
    ) -> Any:
        if choice.function is not None:
            value = await self._call_output_function(choice.function, value, tool_name, tool_call_id)
        return await self._validate(value, choice, tool_name, tool_call_id)

    async def _try_output_call(self, c: _Call) -> _Final | None:
        hooks = self.hooks
        if hooks is None:
            return await self._try_output(c)
        hooks.fire("output_validation_start", self.usage.requests, output=c.part.args, tool_call=c.part)
        try:
            final = await self._try_output(c)
        except Exception as exc:
            hooks.fire("output_validation_error", self.usage.requests, error=exc, tool_call=c.part)
            raise
        if final is None:
            hooks.fire(
                "output_validation_error",
                self.usage.requests,
                error=ModelRetry(_short(c.retry_content)),
                tool_call=c.part,
            )
        else:
            hooks.fire("output_validation_end", self.usage.requests, output=final.value, tool_call=c.part)
        return final

    async def _try_output(self, c: _Call) -> _Final | None:
        choice = self.plan.by_tool_name[c.part.tool_name]
        part = c.part
        try:
            try:
                value = choice.decode(part.args, bounded_json.PROVIDER_RESPONSE)
            except bounded_json.MalformedJsonError as exc:
                raise _OutputRejected(
                    f"The arguments are not valid JSON ({exc.reason}); send a JSON object."
                ) from exc
            except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
                raise _OutputRejected(args_error_details(exc)) from exc
            value = await self._produce(choice, value, part.tool_name, part.tool_call_id)
        except _OutputRejected as rejected:
            c.retry_content = rejected.content
            c.result = RetryPromptPart(
                content=rejected.content, tool_name=part.tool_name, tool_call_id=part.tool_call_id
            )
            return None
        c.result = ToolReturnPart(
            tool_name=part.tool_name, content=FINAL_RESULT_PROCESSED, tool_call_id=part.tool_call_id
        )
        return _Final(value, part.tool_name, part.tool_call_id)

    async def _finish(self, final: _Final, closing: ModelRequest | None, emit: Emit | None) -> RunStep:
        if closing is not None:
            self.messages.append(closing)
        ext = self.ext
        if ext is not None and ext.queue is not None:
            # The final answer is provisional while messages wait: they get another model step.
            taken = ext.queue.take_or_close()
            if taken:
                for request in taken:
                    request.run_id = self.run_id
                    self.messages.append(request)
                if emit is not None:
                    await emit(EnqueuedMessagesEvent(taken))
                self.phase = _REQUEST
                return ToolResultsStep(taken[-1])
        self.output = final.value
        self.output_tool_name = final.tool_name
        self.phase = _DONE
        if emit is not None:
            await emit(FinalResultEvent(final.value, final.tool_name, final.tool_call_id))
        return FinalStep(final.value)

    # --- tool calls ------------------------------------------------------------------------------------

    def _classify(self, part: ToolCallPart) -> _Call:
        name = part.tool_name
        if name in self.plan.by_tool_name:
            return _Call(part, "output")
        tool = self._step_tool_map.get(name)
        if tool is None:
            c = _Call(part, "unknown")
            available = ", ".join(sorted([*self._step_tool_map, *self.plan.by_tool_name])) or "none"
            c.retry_content = f"Unknown tool name: {name!r}. Available tools: {available}"
            c.failed = True
            return c
        c = _Call(part, "function")
        c.tool = tool
        c.limits = self.core.limits_for(tool)
        try:
            c.args = tool.validate_args(part.args)
        except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
            c.kind = "invalid"
            c.retry_content = args_error_details(exc)
            c.failed = True
        return c

    async def _needs_approval(self, c: _Call) -> bool:
        tool = c.tool
        assert tool is not None
        if tool.kind == "external":
            return True
        predicate = tool.requires_approval
        ext = self.ext
        if predicate is False and (ext is None or not ext.approval_policies):
            return False
        if predicate is True:
            return True
        ctx = self.ctx.for_call(
            tool.name,
            c.part.tool_call_id,
            self.tool_retries.get(tool.name, 0),
            self.core.max_retries_for(tool),
        )
        if predicate is not False:
            verdict = predicate(ctx, c.args)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict:
                return True
        if ext is not None and ext.approval_policies and not ext.is_framework(tool):
            return await ext.needs_approval(ctx, c.part, c.args)
        return False

    def _fingerprint(self, calls: list[_Call]) -> str:
        digest = hashlib.sha256()
        names = sorted({c.tool.name for c in calls if c.tool is not None})
        for name in names:
            tool = self._step_tool_map[name]
            digest.update(msgspec.json.encode([name, tool.kind, tool.parameters_json_schema]))
        return digest.hexdigest()

    async def _handle_calls(self, parts: list[ToolCallPart], emit: Emit | None) -> RunStep:
        calls = [self._classify(p) for p in parts]
        ext = self.ext
        if ext is not None and ext.argument_policies:
            await self._argument_policies(ext, calls)
        decisions = self.decisions
        if decisions is not None:
            await self._apply_decisions(calls, decisions)
        else:
            deferred: list[DeferredCall] = []
            for c in calls:
                if c.kind == "function" and await self._needs_approval(c):
                    assert c.tool is not None
                    deferred.append(
                        DeferredCall(
                            tool_call_id=c.part.tool_call_id,
                            tool_name=c.part.tool_name,
                            args=c.part.args,
                            kind="external" if c.tool.kind == "external" else "approval",
                        )
                    )
            if deferred:
                return await self._pause(calls, deferred, emit)
        if emit is not None:
            for c in calls:
                if c.kind != "output":
                    await emit(FunctionToolCallEvent(c.part))
        hooks = self.hooks
        if hooks is None:
            final = await self._run_with_strategy(calls, emit)
            return await self._close_step(calls, final, emit)
        dispatched = [c.part for c in calls if c.kind != "output"]
        hooks.fire("tool_dispatch_start", self.usage.requests, tool_calls=dispatched)
        try:
            final = await self._run_with_strategy(calls, emit)
            step = await self._close_step(calls, final, emit)
        except Exception as exc:
            hooks.fire("tool_dispatch_error", self.usage.requests, tool_calls=dispatched, error=exc)
            raise
        hooks.fire("tool_dispatch_end", self.usage.requests, tool_calls=dispatched)
        return step

    async def _argument_policies(self, ext: RunExt, calls: list[_Call]) -> None:
        for c in calls:
            tool = c.tool
            if c.kind != "function" or tool is None or ext.is_framework(tool):
                continue
            name = c.part.tool_name
            ctx = self.ctx.for_call(
                name, c.part.tool_call_id, self.tool_retries.get(name, 0), self.core.max_retries_for(tool)
            )
            try:
                c.args = await ext.apply_arguments(ctx, tool, c.part, c.args)
            except ModelRetry as retry:
                c.kind = "invalid"
                c.retry_content = retry.message
                c.failed = True
            except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
                c.kind = "invalid"
                c.retry_content = args_error_details(exc)
                c.failed = True

    async def _apply_decisions(self, calls: list[_Call], decisions: dict[str, Decision]) -> None:
        state = self.pending_state
        assert state is not None
        by_id = {c.part.tool_call_id: c for c in calls}
        if self._fingerprint([c for c in calls if c.tool is not None]) != state.tool_fingerprint:
            raise PausedStateError(
                "the tools called by the paused response changed since the pause (names, kinds or schemas differ); "
                "resume with an agent built from the same definition"
            )
        # The state says which calls wait for a decision, but an unsigned (or hand-built) state can
        # say anything: which calls need one is derived again from the tools, before anything runs.
        for c in calls:
            if c.kind != "function" or c.part.tool_call_id in decisions:
                continue
            assert c.tool is not None
            if await self._needs_approval(c):
                what = "is external" if c.tool.kind == "external" else "needs approval"
                raise PausedStateError(
                    f"the paused state does not list call {c.part.tool_call_id!r} ({c.part.tool_name}) as pending, "
                    f"but the tool {what}; the state was modified or built by hand. Nothing was executed: "
                    "resume only states written by run_until_pause (sign them with integrity_key)"
                )
        for call_id, decision in decisions.items():
            c = by_id.get(call_id)
            if c is None or c.kind != "function":
                raise DecisionError(f"the paused call {call_id!r} is no longer a valid call of a known tool")
            assert c.tool is not None
            if c.tool.kind == "external" and isinstance(decision, Approved):
                raise DecisionError(
                    f"call {call_id!r} ({c.part.tool_name}) is of an external tool: supply ExternalResult "
                    "(or Denied); the paused state lists it with the wrong kind"
                )
            if c.tool.kind != "external" and isinstance(decision, ExternalResult):
                raise DecisionError(
                    f"call {call_id!r} ({c.part.tool_name}) needs approval: decide with Approved or Denied; "
                    "the paused state lists it with the wrong kind"
                )
            if isinstance(decision, Approved) and decision.override_args is not None:
                assert c.tool is not None
                try:
                    c.args = c.tool.validate_args(decision.override_args)
                except (bounded_json.JsonError, msgspec.ValidationError, ValueError, TypeError) as exc:
                    raise DecisionError(f"override_args for call {call_id!r} are invalid: {exc}") from exc
            c.decision = decision
        self.decisions = None
        self.pending_state = None

    async def _pause(self, calls: list[_Call], deferred: list[DeferredCall], emit: Emit | None) -> RunStep:
        pending_ids = {d.tool_call_id for d in deferred}
        state = PausedState(
            run_id=self.run_id,
            state_id=new_state_id(),
            created_at=now_utc(),
            messages=list(self.messages),
            new_message_index=self.new_message_index,
            instructions=self.instructions,
            usage=msgspec.structs.replace(self.usage, details=dict(self.usage.details)),
            tool_retries=dict(self.tool_retries),
            output_retries=self.output_retries,
            pending=deferred,
            immediate_call_ids=[
                c.part.tool_call_id
                for c in calls
                if c.kind == "function" and c.part.tool_call_id not in pending_ids
            ],
            tool_fingerprint=self._fingerprint([c for c in calls if c.tool is not None]),
            model=self.model.system,
        )
        ext = self.ext
        if ext is not None:
            state.capabilities = list(ext.loaded_on_demand)
            if ext.queue is not None:
                state.queued_messages = list(ext.queue.take())
        self.paused = Paused(state)
        self.phase = _PAUSED
        if emit is not None:
            await emit(DeferredToolCallsEvent(list(deferred)))
        return PausedStep(list(deferred))

    async def _run_with_strategy(self, calls: list[_Call], emit: Emit | None) -> _Final | None:
        strategy = self.core.end_strategy
        output_calls = [c for c in calls if c.kind == "output"]
        if not output_calls:
            await self._execute([c for c in calls if c.kind == "function"], calls, emit)
            return None
        final: _Final | None = None
        if strategy == "early":
            for c in output_calls:
                if final is None:
                    final = await self._try_output_call(c)
                else:
                    c.result = self._plain_return(c, OUTPUT_NOT_USED)
            if final is None:
                await self._execute([c for c in calls if c.kind == "function"], calls, emit)
            return final
        if strategy == "exhaustive":
            await self._execute([c for c in calls if c.kind == "function"], calls, emit)
            for c in output_calls:
                if final is None:
                    final = await self._try_output_call(c)
                else:
                    c.result = self._plain_return(c, OUTPUT_NOT_USED)
            return final
        # graceful: ordinary calls before the first successful output call run; later ones are skipped
        batch: list[_Call] = []
        for c in calls:
            if c.kind == "function":
                batch.append(c)
            elif c.kind == "output":
                if final is None:
                    await self._execute(batch, calls, emit)
                    batch = []
                    final = await self._try_output_call(c)
                else:
                    c.result = self._plain_return(c, OUTPUT_NOT_USED)
        if final is None:
            await self._execute(batch, calls, emit)
        return final

    @staticmethod
    def _plain_return(c: _Call, content: str) -> ToolReturnPart:
        return ToolReturnPart(tool_name=c.part.tool_name, content=content, tool_call_id=c.part.tool_call_id)

    async def _close_step(self, calls: list[_Call], final: _Final | None, emit: Emit | None) -> RunStep:  # noqa: C901 - the step-closing sequence; to be split with the agent-loop refactor
        parts: list[ModelRequestPart] = []
        follow_ups: list[ModelRequestPart] = []
        failed_tools: set[str] = set()
        succeeded_tools: set[str] = set()
        output_failed: Any = None
        for c in calls:
            result = c.result
            if result is None:
                if final is not None:
                    result = self._plain_return(c, TOOL_NOT_EXECUTED)
                else:
                    result = RetryPromptPart(
                        content=c.retry_content, tool_name=c.part.tool_name, tool_call_id=c.part.tool_call_id
                    )
                c.result = result
                if emit is not None and c.kind != "output":
                    await emit(FunctionToolResultEvent(result))
            parts.append(result)
            if c.follow_up is not None:
                follow_ups.append(UserPromptPart(content=c.follow_up))
            if c.kind == "output":
                if isinstance(result, RetryPromptPart):
                    output_failed = c.retry_content
            elif final is None:
                if c.failed:
                    failed_tools.add(c.part.tool_name)
                elif c.started:
                    succeeded_tools.add(c.part.tool_name)
        ext = self.ext
        if ext is not None:
            ext.after_results([(c.part, c.result) for c in calls])
            await ext.commit(parts)
        request = ModelRequest(parts=parts + follow_ups, run_id=self.run_id)
        self.messages.append(request)
        if self._resume_queued is not None:
            queued = self._resume_queued
            self._resume_queued = None
            for message in queued:
                message.run_id = self.run_id
                self.messages.append(message)
            if emit is not None and queued:
                await emit(EnqueuedMessagesEvent(queued))
        if final is not None:
            return await self._finish(final, None, emit)
        for name in succeeded_tools - failed_tools:
            if name in self.tool_retries:
                self.tool_retries[name] = 0
        for name in failed_tools:
            count = self.tool_retries.get(name, 0) + 1
            self.tool_retries[name] = count
            tool = self._step_tool_map.get(name)
            limit = self.core.max_retries_for(tool) if tool is not None else self.core.retries
            if count > limit:
                raise ToolRetriesExceeded(name, limit)
        if output_failed is not None:
            if emit is not None:
                for c in calls:
                    if c.kind == "output" and isinstance(c.result, RetryPromptPart):
                        await emit(OutputRetryEvent(c.result))
            self._count_output_failure(output_failed)
        self.phase = _REQUEST
        return ToolResultsStep(request)

    # --- the scheduler -----------------------------------------------------------------------------------

    def _check_call_limits(self, count: int) -> None:
        limit = self.usage_limits.tool_calls_limit
        if limit is not None and self.usage.tool_calls + count > limit:
            raise UsageLimitExceeded("tool_calls_limit", limit, self.usage.tool_calls + count)
        limit = self.core.tool_limits.max_tool_calls
        if limit is not None and self.usage.tool_calls + count > limit:
            raise UsageLimitExceeded("max_tool_calls", limit, self.usage.tool_calls + count)

    async def _execute(self, batch: list[_Call], all_calls: list[_Call], emit: Emit | None) -> None:
        """Run a batch of validated function calls (decisions applied), results kept per call."""
        if not batch:
            return
        runnable: list[_Call] = []
        agent_limits = self.core.tool_limits
        envelope = agent_limits.max_concurrency + agent_limits.max_queue
        per_tool: dict[str, int] = {}
        for c in batch:
            decision = c.decision
            if decision is not None and not isinstance(decision, Approved):
                c.result = self._decided(c, decision)
                if emit is not None:
                    await emit(FunctionToolResultEvent(c.result))
                continue
            assert c.limits is not None
            seen = per_tool.get(c.part.tool_name, 0)
            per_tool[c.part.tool_name] = seen + 1
            if len(runnable) >= envelope or seen >= c.limits.max_concurrency + c.limits.max_queue:
                limit = (
                    envelope if len(runnable) >= envelope else c.limits.max_concurrency + c.limits.max_queue
                )
                c.result = RetryPromptPart(
                    content=f"Tool call rejected without running: more than {limit} calls were queued at once. "
                    "Call fewer tools per response.",
                    tool_name=c.part.tool_name,
                    tool_call_id=c.part.tool_call_id,
                )
                if emit is not None:
                    await emit(FunctionToolResultEvent(c.result))
                continue
            runnable.append(c)
        if not runnable:
            return
        try:
            self._check_call_limits(len(runnable))
            i = 0
            while i < len(runnable):
                c = runnable[i]
                assert c.tool is not None
                if c.tool.sequential:
                    await self._exec(c, emit)
                    i += 1
                    continue
                j = i + 1
                while j < len(runnable) and not cast("Tool[Any]", runnable[j].tool).sequential:
                    j += 1
                if j - i == 1:
                    await self._exec(c, emit)
                else:
                    await self._parallel(runnable[i:j], emit)
                i = j
        except BaseException as exc:
            self._close_interrupted(all_calls, exc)
            raise

    def _decided(self, c: _Call, decision: Decision) -> ToolReturnPart:
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

    def _close_interrupted(self, calls: list[_Call], exc: BaseException) -> None:
        """Give every unfinished call a result so the history stays valid, then record it."""
        parts: list[ModelRequestPart] = []
        for c in calls:
            result = c.result
            if result is None:
                name = c.part.tool_name
                if c.started and c.tool is not None and c.tool.side_effect == "non_idempotent":
                    self.unknown_outcomes.append(c.part)
                    content = (
                        f"The call of {name!r} was interrupted while running ({type(exc).__name__}); "
                        "its outcome is unknown: it may or may not have taken effect."
                    )
                    metadata: Any = {"ferrule_outcome": "unknown"}
                elif c.started:
                    content = (
                        f"The call of {name!r} was interrupted before it finished ({type(exc).__name__})."
                    )
                    metadata = None
                else:
                    content = f"The call of {name!r} was not executed: the run ended ({type(exc).__name__})."
                    metadata = None
                result = ToolReturnPart(
                    tool_name=name,
                    content=content,
                    tool_call_id=c.part.tool_call_id,
                    outcome="interrupted",
                    metadata=metadata,
                )
            parts.append(result)
        self.messages.append(ModelRequest(parts=parts, run_id=self.run_id, state="interrupted"))

    async def _parallel(self, group: list[_Call], emit: Emit | None) -> None:
        agent_limits = self.core.tool_limits
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
                    self._guarded,
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
        self,
        c: _Call,
        emit: Emit | None,
        agent_limiter: anyio.CapacityLimiter | None,
        tool_limiter: anyio.CapacityLimiter | None,
        fatal: list[BaseException],
        scope: anyio.CancelScope,
    ) -> None:
        try:
            if tool_limiter is not None:
                async with tool_limiter:
                    if agent_limiter is not None:
                        async with agent_limiter:
                            await self._exec(c, emit)
                    else:
                        await self._exec(c, emit)
            elif agent_limiter is not None:
                async with agent_limiter:
                    await self._exec(c, emit)
            else:
                await self._exec(c, emit)
        except Exception as exc:
            if not fatal:
                fatal.append(exc)
            scope.cancel()

    async def _exec(self, c: _Call, emit: Emit | None) -> None:  # noqa: C901 - one tool call through policies, hooks and timeout; to be split with the agent-loop refactor
        """Run one accepted call: call/return policies and hooks (when extensions are active), the
        tool under its timeout, and the result part in `c.result`."""
        tool = c.tool
        limits = c.limits
        assert tool is not None
        assert limits is not None
        part = c.part
        name = part.tool_name
        ctx = self.ctx.for_call(
            name, part.tool_call_id, self.tool_retries.get(name, 0), self.core.max_retries_for(tool)
        )
        ext = self.ext
        if ext is not None and (ext.call_policies or ext.return_policies) and ext.is_framework(tool):
            ext = None  # policies never see the framework's own tools
        if ext is not None and ext.call_policies:
            try:
                await ext.before_call(ctx, part, c.args)
            except ModelRetry as retry:
                c.failed = True
                c.result = RetryPromptPart(
                    content=retry.message, tool_name=name, tool_call_id=part.tool_call_id
                )
                if emit is not None:
                    await emit(FunctionToolResultEvent(c.result))
                return
        hooks = self.hooks
        if hooks is not None:
            hooks.fire("tool_execute_start", self.usage.requests, tool_call=part, args=c.args)
        tracer = self.core.tracer
        span = tracer.tool_span(name, part, self.trace_parent) if tracer is not None else None
        self.usage.tool_calls += 1
        c.started = True
        threads = self.core.threads
        try:
            timeout = limits.timeout
            value: Any = None
            if timeout is None:
                value = await (
                    tool.call(ctx, c.args, threads=threads)
                    if span is None
                    else span.call(tool, ctx, c.args, threads)
                )
            else:
                with anyio.move_on_after(timeout) as scope:
                    value = await (
                        tool.call(ctx, c.args, threads=threads)
                        if span is None
                        else span.call(tool, ctx, c.args, threads)
                    )
                if scope.cancelled_caught:
                    c.result = self._timed_out(c, timeout)
                    if span is not None:
                        span.finish_error("timeout")
                    if hooks is not None:
                        hooks.fire("tool_execute_end", self.usage.requests, tool_call=part, result=c.result)
                    if emit is not None:
                        await emit(FunctionToolResultEvent(c.result))
                    return
            if ext is not None and ext.return_policies:
                value = await ext.returned(ctx, part, value)
        except ModelRetry as retry:
            c.failed = True
            c.result = RetryPromptPart(content=retry.message, tool_name=name, tool_call_id=part.tool_call_id)
            if span is not None:
                span.finish_error("retry")
        except BaseException as exc:
            if isinstance(exc, Exception):
                c.result = ToolReturnPart(
                    tool_name=name,
                    content=f"The tool failed with an unexpected error ({type(exc).__name__}); the run stopped.",
                    tool_call_id=part.tool_call_id,
                    outcome="failed",
                )
                if hooks is not None:
                    hooks.fire("tool_execute_error", self.usage.requests, tool_call=part, error=exc)
            if span is not None:
                span.fail(exc)
            raise
        else:
            c.result = self._tool_return(c, value)
            if span is not None:
                span.finish_result(c.result)
        if hooks is not None:
            hooks.fire("tool_execute_end", self.usage.requests, tool_call=part, result=c.result)
        if emit is not None:
            await emit(FunctionToolResultEvent(c.result))

    def _timed_out(self, c: _Call, timeout: float) -> ToolReturnPart | RetryPromptPart:
        tool = c.tool
        assert tool is not None
        name = c.part.tool_name
        if tool.side_effect == "non_idempotent":
            self.unknown_outcomes.append(c.part)
            return ToolReturnPart(
                tool_name=name,
                content=(
                    f"Tool {name!r} timed out after {timeout:g} seconds while running. Its outcome is unknown: it may "
                    "or may not have taken effect. Do not assume it succeeded, and do not call it again without "
                    "checking its effect first."
                ),
                tool_call_id=c.part.tool_call_id,
                outcome="interrupted",
                metadata={"ferrule_outcome": "unknown"},
            )
        c.failed = True
        return RetryPromptPart(
            content=f"Tool {name!r} timed out after {timeout:g} seconds; you may call it again.",
            tool_name=name,
            tool_call_id=c.part.tool_call_id,
        )

    def _failed_after_run(
        self, c: _Call, reason: str, fix: str = "call it so that it returns less"
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
            content=f"Tool {name!r} ran, but {reason}; {fix}.",
            tool_name=name,
            tool_call_id=c.part.tool_call_id,
        )

    def _tool_return(self, c: _Call, value: Any) -> ToolReturnPart | RetryPromptPart:
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
                    return self._failed_after_run(c, problem)
                c.follow_up = follow_up if isinstance(follow_up, str) else list(follow_up)
        content: Any
        if isinstance(value, str):
            size = len(value) if value.isascii() else len(value.encode())
            content = value
        else:
            try:
                raw = msgspec.json.encode(value)
            except (TypeError, msgspec.EncodeError) as exc:
                raise ToolDefinitionError(
                    f"tool {part.tool_name!r} returned a value that cannot be encoded as JSON ({type(value).__name__}): "
                    f"{exc}; return msgspec-encodable data"
                ) from exc
            size = len(raw)
            content = cast("Any", value) if isinstance(value, (*_PLAIN, *_RICH)) else msgspec.json.decode(raw)
        if size > limits.max_result_bytes:
            c.follow_up = None
            return self._failed_after_run(
                c, f"its result of {size} bytes exceeds the limit of {limits.max_result_bytes} bytes"
            )
        try:
            check_content(self.core.url_policy, content)
            check_content(self.core.url_policy, c.follow_up)
        except UrlPolicyError as exc:
            c.follow_up = None
            return self._failed_after_run(
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


class _PartialTracker:
    """Turns streamed deltas of output-bearing parts into `PartialOutputEvent`s."""

    __slots__ = ("named", "names", "prefixes", "run", "saw_tool_call", "text")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.text: JsonPrefix | str | None = None
        self.prefixes: dict[int, JsonPrefix] = {}
        self.names: dict[int, str] = {}
        self.named: set[int] = set()  # parts whose start event already carried the whole name
        self.saw_tool_call = False

    async def update(self, event: Any) -> PartialOutputEvent | None:
        plan = self.run.plan
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                return await self._text(part.content) if part.content else None
            if isinstance(part, ToolCallPart):
                self.saw_tool_call = True
                self.names[event.index] = part.tool_name
                if part.tool_name:
                    self.named.add(event.index)
                if part.tool_name in plan.by_tool_name and part.args:
                    return await self._args(event.index, part.args)
            return None
        if isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                return await self._text(delta.content_delta)
            if isinstance(delta, ToolCallPartDelta):
                self.saw_tool_call = True
                if delta.tool_name_delta and event.index not in self.named:
                    self.names[event.index] = self.names.get(event.index, "") + delta.tool_name_delta
                if delta.args_delta and self.names.get(event.index) in plan.by_tool_name:
                    return await self._args(event.index, delta.args_delta)
        return None

    async def _text(self, delta: str) -> PartialOutputEvent | None:
        plan = self.run.plan
        if self.saw_tool_call or not delta:
            return None
        if plan.mode in ("native", "prompted"):
            if not isinstance(self.text, JsonPrefix):
                self.text = JsonPrefix(skip_prose=True)
            self.text.feed(delta)
            return await self._snapshot(self.text, plan.choices[0] if len(plan.choices) == 1 else None, None)
        if not plan.allow_text:
            return None
        # One concatenation per delta (a copy of the text so far, which the snapshot needs anyway),
        # not a join over every delta so far.
        snapshot = delta if not isinstance(self.text, str) else self.text + delta
        self.text = snapshot
        if plan.text_function is not None:
            return PartialOutputEvent(snapshot)
        ok, value = await self._validated(snapshot, None)
        if not ok:
            return None
        return PartialOutputEvent(snapshot, value, True)

    async def _args(self, index: int, delta: str | dict[str, Any]) -> PartialOutputEvent | None:
        name = self.names[index]
        choice = self.run.plan.by_tool_name[name]
        if isinstance(delta, dict):
            return await self._checked(delta, choice, name)
        prefix = self.prefixes.get(index)
        if prefix is None:
            prefix = self.prefixes[index] = JsonPrefix()
        prefix.feed(delta)
        return await self._snapshot(prefix, choice, name)

    async def _snapshot(
        self, prefix: JsonPrefix, choice: OutputChoice | None, name: str | None
    ) -> PartialOutputEvent | None:
        ok, snapshot = prefix.snapshot()
        if not ok:
            return None
        if choice is None:
            return PartialOutputEvent(snapshot, tool_name=name)
        return await self._checked(snapshot, choice, name)

    async def _checked(
        self, snapshot: Any, choice: OutputChoice, name: str | None
    ) -> PartialOutputEvent | None:
        if not partial_ok(snapshot, choice.schema, choice.defs, True):
            return None
        visible: Any = snapshot
        if choice.wrapped and isinstance(snapshot, dict):
            visible = cast("dict[str, Any]", snapshot).get("value")
        ok, value = choice.partial(snapshot)
        if ok:
            ok, value = await self._validated(value, choice)
            if not ok:
                return None
            return PartialOutputEvent(visible, value, True, name)
        return PartialOutputEvent(visible, tool_name=name)

    async def _validated(self, value: Any, choice: OutputChoice | None) -> tuple[bool, Any]:
        validators = self.run.output_validators
        if not validators:
            return True, value
        ctx = self.run.ctx._replace(partial_output=True)  # pyright: ignore[reportPrivateUsage]
        for fn, takes_ctx, is_async in validators:
            try:
                result = fn(ctx, value) if takes_ctx else fn(value)
                if is_async:
                    result = await result
            except ModelRetry:
                return False, None
            value = result
        return True, value


class _Cost:
    """The run's exact cost: adds each response's price to `usage.cost_nano_usd`."""

    __slots__ = ("total",)

    def __init__(self, start_nano: int | None) -> None:
        from .pricing import RunCost

        self.total = RunCost(start_nano)

    def add(self, run: Run, response: ModelResponse) -> None:
        pricing = run.pricing
        assert pricing is not None
        known = self.total.known
        run.usage.cost_nano_usd = cost = self.total.add(pricing.request_cost(response, run.model))
        if cost is None and known and run.usage_limits.cost_limit_nano_usd is not None:
            from ._errors import UnknownCostError

            # Fail closed: an unpriced request would silently lift the cost limit.
            raise UnknownCostError(
                f"the run has a cost limit, but the price of {response.model_name or run.model.model_name!r} "
                f"({response.provider_name or run.model.provider_name}) is unknown; give its prices with "
                "Pricing(overrides=...) or remove cost_limit_nano_usd"
            )


def new_run_id() -> str:
    """A fresh run identifier (128 random bits, hex)."""
    return os.urandom(16).hex()
