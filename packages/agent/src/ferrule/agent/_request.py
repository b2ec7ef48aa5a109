"""The model request stage: this step's tools and history, the `ModelCall`, and the response.

`request` checks the usage limits, lets the run's extensions take queued messages, choose the
model and prepare this step's tools, applies history processors and the context budget to the
provider-facing view (never to the run's history), checks every content URL, then sends the call
(streamed when someone listens) under the retry policy and records the response and its usage.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from collections.abc import Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.retry import request_with_retry
from ferrule.core.retry import stream_batches_with_retry

from ._errors import UnknownCostError
from ._events import EnqueuedMessagesEvent
from ._handoff import Handoff
from ._partial_output import SPAN_END
from ._partial_output import PartialTracker
from ._state import Emit
from ._state import HistoryView
from ._state import LoopState
from ._step_tools import prepare_tools

if TYPE_CHECKING:
    from ._ext import RunExt
    from .durable import DurableRun

__all__ = ["request"]


async def request(run: LoopState, ext: RunExt | None, emit: Emit | None) -> ModelResponse:
    """Make this step's model request; the response is appended to the history."""
    run.usage_limits.check_before_request(run.usage)
    run.ctx.run_step = run.usage.requests
    if ext is not None:
        taken, run.step_tools = await ext.before_request()
        if taken and emit is not None:
            await emit(EnqueuedMessagesEvent(taken))
    elif run.core.has_prepare:
        run.step_tools = await prepare_tools(run.ctx, run.core.tools.values())
    # The call the model receives: the provider-facing view of the history, tools and output.
    plan = run.plan
    history = HistoryView(run.messages, len(run.messages))
    call = ModelCall(
        messages=await _processed_history(run) if run.history_processors else history,
        instructions=run.instructions,
        tools=run.step_tools.definitions,
        output_tools=plan.tool_defs,
        output=plan.output_format,
        allow_text_output=plan.text_is_output,
        settings=run.settings,
        deadline=run.deadline,
    )
    if ext is not None and ext.budget is not None:
        call = await ext.budget.enforce(call, run.ctx)
    # Every content URL the request carries passes the URL policy first: what entered the
    # history since the last request, and whatever processors or the budget sent instead.
    run.url_check.new_messages(run.messages)
    if call.messages is not history:
        run.url_check.replaced(call.messages, run.messages)
    hooks = run.hooks
    if hooks is not None:
        hooks.fire("model_request_start", run.usage.requests, model=run.model.system, call=call)
    tracer = run.core.tracer
    span = tracer.model_span(run.model, call, run.trace_parent) if tracer is not None else None
    try:
        if run.durable is not None:
            # One engine step: executed once, replayed from its record afterwards.
            response = await _durable(run, run.durable, call, emit)
        elif emit is None:
            response = await request_with_retry(
                run.model, call, policy=run.core.retry_policy, budget=run.retry_budget, deadline=run.deadline
            )
        else:
            response = await _stream(run, call, emit)
    except BaseException as exc:
        if span is not None:
            span.fail(exc)
        if hooks is not None and isinstance(exc, Exception):
            hooks.fire("model_request_error", run.usage.requests, model=run.model.system, error=exc)
        raise
    if response.run_id is None:
        response.run_id = run.run_id
    run.messages.append(response)
    usage = run.usage
    usage.requests += 1
    usage.incr(response.usage)
    if run.cost is not None:
        _add_cost(run, response)
    if span is not None:
        span.finish(response)
    if hooks is not None:
        hooks.fire("model_request_end", run.usage.requests, model=run.model.system, response=response)
    run.usage_limits.check_tokens(run.usage)
    return response


async def _durable(run: LoopState, durable: DurableRun, call: ModelCall, emit: Emit | None) -> ModelResponse:
    """The request as one engine step; a streamed step records its events, and replays them."""
    if emit is None:
        return await durable.model_request(
            run.ctx.run_step,
            call,
            lambda events: request_with_retry(
                run.model, call, policy=run.core.retry_policy, budget=run.retry_budget, deadline=run.deadline
            ),
        )
    listener = emit

    async def live(events: list[ModelStreamEvent]) -> ModelResponse:
        async def collect(event: Any) -> None:
            if isinstance(event, (PartStartEvent, PartDeltaEvent, PartEndEvent)):
                events.append(event)
            await listener(event)

        return await _stream(run, call, collect)

    async def replay(response: ModelResponse, events: Sequence[ModelStreamEvent]) -> None:
        # The same events in the same order as the first time, so a CheckpointedStreamSink's
        # ordinals still name them.
        await _stream(run, call, listener, _recorded(response, events))

    return await durable.model_request(run.ctx.run_step, call, live, replay)


async def _recorded(
    response: ModelResponse, events: Sequence[ModelStreamEvent]
) -> AsyncGenerator[list[ModelStreamEvent]]:
    yield [*events, ResponseCompleted(response)]


async def _processed_history(run: LoopState) -> Sequence[Message]:
    view: Sequence[Message] = HistoryView(run.messages, len(run.messages))
    for processor, takes_ctx, is_async in run.history_processors:
        current = list(view)
        result = processor(run.ctx, current) if takes_ctx else processor(current)
        if is_async:
            result = await result
        view = cast("list[Message]", result)
    return view


async def _stream(
    run: LoopState, call: ModelCall, emit: Emit, source: AsyncGenerator[list[ModelStreamEvent]] | None = None
) -> ModelResponse:
    """The streamed request: every event to `emit`, each followed by the partial output it makes
    (which the consumer of the run's own hand-off makes itself from plain text).

    `source` replays recorded events instead of sending the request.
    """
    tracker = PartialTracker(run)
    response: ModelResponse | None = None
    stream = (
        stream_batches_with_retry(
            run.model, call, policy=run.core.retry_policy, budget=run.retry_budget, deadline=run.deadline
        )
        if source is None
        else source
    )
    plain = tracker.plain
    # The run's own hand-off takes each event without a coroutine, awaiting only when the
    # consumer is behind; any other `emit` (hooks, a durable recorder) is awaited per event. The
    # model's events come a network read's worth at a time: one resume per read, not per event.
    handoff = emit if isinstance(emit, Handoff) else None
    out = _Awaited(emit) if handoff is None else handoff
    offer = out.offer
    # Plain text output into the run's own hand-off: the consumer makes the partial outputs of
    # text from the events it already gets, and only when it iterates events (`PlainText`);
    # the text deltas of a read then go over a run at a time (`_hand_over`; a read of one event
    # goes the cheaper way of every event). Anywhere else the run makes them (`local`). The
    # markers are offered without waiting: the next event waits if the consumer is behind.
    bulk = handoff if plain is not None else None
    local = plain if bulk is None else None
    if bulk is not None:
        offer(plain)
    try:
        async with aclosing(stream):
            async for batch in stream:
                if bulk is not None and len(batch) > 1:
                    completed = await _hand_over(bulk, tracker, batch)
                    if completed is not None:
                        response = completed
                    continue
                for event in batch:
                    if offer(event):
                        await out.wait()
                    if (
                        plain is not None
                        and type(event) is PartDeltaEvent
                        and type(event.delta) is TextPartDelta
                    ):
                        # Most events of a text stream: their partial output without a coroutine.
                        if local is None:
                            continue
                        partial = local.delta(event.delta.content_delta)
                    elif isinstance(event, ResponseCompleted):
                        response = event.response
                        continue
                    else:
                        partial = local.see(event) if local is not None else None
                        if partial is None:
                            partial = await tracker.update(event)
                    if partial is not None and offer(partial):
                        await out.wait()
    finally:
        if bulk is not None:
            offer(SPAN_END)
    assert response is not None  # the model contract guarantees a completed response
    return response


async def _hand_over(
    handoff: Handoff, tracker: PartialTracker, batch: list[ModelStreamEvent]
) -> ModelResponse | None:
    """A read's events into the run's own hand-off, whose consumer makes plain text's partial
    outputs: the text deltas between the events the tracker sees go over a run at a time, each
    other event with the partial output it makes right after it. The completed response, if the
    read ends with it."""
    response: ModelResponse | None = None
    start = 0
    for index, event in enumerate(batch):
        if type(event) is PartDeltaEvent and type(event.delta) is TextPartDelta:
            continue
        await handoff.extend(batch[start : index + 1])
        start = index + 1
        if isinstance(event, ResponseCompleted):
            response = event.response
            continue
        partial = await tracker.update(event)
        if partial is not None and handoff.offer(partial):
            await handoff.wait()
    if start < len(batch):
        await handoff.extend(batch[start:] if start else batch)
    return response


class _Awaited:
    """`Handoff`'s `offer` and `wait` over any `emit`: every event is awaited."""

    __slots__ = ("_emit", "_event")

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._event: Any = None

    def offer(self, event: Any) -> bool:
        self._event = event
        return True

    async def wait(self) -> None:
        event, self._event = self._event, None
        await self._emit(event)


def _add_cost(run: LoopState, response: ModelResponse) -> None:
    """Add the response's exact price to the run's cost (`None` for good once a price is unknown)."""
    cost = run.cost
    pricing = run.pricing
    assert cost is not None
    assert pricing is not None
    known = cost.known
    run.usage.cost_nano_usd = total = cost.add(pricing.request_cost(response, run.model))
    if total is None and known and run.usage_limits.cost_limit_nano_usd is not None:
        # Fail closed: an unpriced request would silently lift the cost limit.
        raise UnknownCostError(
            f"the run has a cost limit, but the price of {response.model_name or run.model.model_name!r} "
            f"({response.provider_name or run.model.provider_name}) is unknown; give its prices with "
            "Pricing(overrides=...) or remove cost_limit_nano_usd"
        )
