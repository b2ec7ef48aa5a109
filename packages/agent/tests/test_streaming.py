"""Streaming: event order, partial output, text before tool calls, no retry after visible output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from ferrule.agent import Agent
from ferrule.agent import DeferredToolCallsEvent
from ferrule.agent import FinalResultEvent
from ferrule.agent import FunctionToolCallEvent
from ferrule.agent import FunctionToolResultEvent
from ferrule.agent import ModelRetry
from ferrule.agent import NativeOutput
from ferrule.agent import PartialOutputEvent
from ferrule.agent import PauseRequiredError
from ferrule.agent import RetryPolicy
from ferrule.agent import StreamedRunResult
from ferrule.agent import Tool
from ferrule.agent.exceptions import OutputRetriesExceeded
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import DeltaToolCall
from ferrule.agent.testing import DeltaToolCalls
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import ServerError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolCallPartDelta
from ferrule.core.profile import ModelProfile

from ._support import Hang

pytestmark = pytest.mark.anyio


class City(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    population: int


def turn(messages: Sequence[Message]) -> int:
    """How many model responses the history already holds."""
    return sum(isinstance(m, ModelResponse) for m in messages)


def text_then_tool() -> Any:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if turn(messages) == 0:
            yield "Let me "
            yield "check."
            yield {0: DeltaToolCall(name="lookup", json_args='{"q":', tool_call_id="c1")}
            yield {0: DeltaToolCall(json_args=' "x"}')}
        else:
            yield "It is "
            yield "sunny."

    return stream


async def test_event_order_and_text_before_tool_call_is_not_final() -> None:
    async def lookup(q: str) -> str:
        return "sunny"

    agent = Agent(FunctionModel(stream_function=text_then_tool()), tools=[lookup])
    events: list[Any] = []
    async with agent.run_stream("weather?") as stream:
        async for event in stream:
            events.append(event)
    assert stream.result.output == "It is sunny."
    kinds = [type(e).__name__ for e in events]
    first_completed = kinds.index("ResponseCompleted")
    # Raw model events of the first response come first, then the agent's tool events.
    assert all(
        k in ("PartStartEvent", "PartDeltaEvent", "PartEndEvent", "PartialOutputEvent")
        for k in kinds[:first_completed]
    )
    assert kinds[first_completed + 1 : first_completed + 3] == [
        "FunctionToolCallEvent",
        "FunctionToolResultEvent",
    ]
    finals = [e for e in events if isinstance(e, FinalResultEvent)]
    assert len(finals) == 1
    assert finals[0].output == "It is sunny."
    assert kinds[-1] == "FinalResultEvent"
    tool_result = next(e for e in events if isinstance(e, FunctionToolResultEvent))
    assert isinstance(tool_result.result, ToolReturnPart)
    assert tool_result.result.content == "sunny"
    # Each partial output event follows the raw delta that caused it.
    for i, event in enumerate(events):
        if isinstance(event, PartialOutputEvent):
            assert isinstance(events[i - 1], (PartDeltaEvent, PartStartEvent))
    partial_texts = [e.snapshot for e in events if isinstance(e, PartialOutputEvent)]
    assert partial_texts == ["Let me ", "Let me check.", "It is ", "It is sunny."]


async def test_stream_text_delta_and_snapshot() -> None:
    async def lookup(q: str) -> str:
        return "sunny"

    agent = Agent(FunctionModel(stream_function=text_then_tool()), tools=[lookup])
    async with agent.run_stream("x") as stream:
        deltas = [d async for d in stream.stream_text(delta=True)]
    assert deltas == ["Let me ", "check.", "It is ", "sunny."]
    async with agent.run_stream("x") as stream:
        snapshots = [s async for s in stream.stream_text()]
    assert snapshots == ["Let me ", "Let me check.", "It is ", "It is sunny."]
    assert stream.result.output == "It is sunny."


def streamed_output_tool(chunks: list[str]) -> Any:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="final_result", tool_call_id="out")}
        for chunk in chunks:
            yield {0: DeltaToolCall(json_args=chunk)}

    return stream


async def test_partial_structured_output_from_tool_arguments() -> None:
    chunks = ['{"na', 'me": "Par', 'is", "popu', 'lation": 21', "00000}"]
    agent = Agent(FunctionModel(stream_function=streamed_output_tool(chunks)), output_type=City)
    snapshots: list[Any] = []
    typed: list[Any] = []
    async with agent.run_stream("x") as stream:
        async for event in stream:
            if isinstance(event, PartialOutputEvent):
                snapshots.append(event.snapshot)
                if event.has_output:
                    typed.append(event.output)
    assert snapshots == [
        {},
        {"name": "Par"},
        {"name": "Paris"},
        {"name": "Paris"},
        {"name": "Paris", "population": 2100000},
    ]
    # Only complete-enough snapshots convert to the output type.
    assert typed == [City("Paris", 2100000)]
    assert stream.result.output == City("Paris", 2100000)


async def test_stream_output_yields_typed_partials_then_final() -> None:
    class Story(msgspec.Struct):
        title: str = ""
        body: str = ""

    chunks = ['{"title": "A', ' tale", "bo', 'dy": "Once', ' upon"}']
    agent = Agent(FunctionModel(stream_function=streamed_output_tool(chunks)), output_type=Story)
    async with agent.run_stream("x") as stream:
        outputs = [o async for o in stream.stream_output()]
    assert outputs[0] == Story(title="A")
    assert Story("A tale", "Once upon") == outputs[-1]
    assert all(isinstance(o, Story) for o in outputs)
    titles = [o.title for o in outputs]
    assert titles == sorted(titles, key=len)


async def test_partials_violating_monotonic_assertions_are_suppressed() -> None:
    # An unknown key (forbidden extra) and a wrong type can never become valid: no partials after them.
    chunks = ['{"name": "A",', ' "zz": 1,', ' "population": 2}']
    agent = Agent(
        FunctionModel(stream_function=streamed_output_tool(chunks)), output_type=City, output_retries=0
    )
    snapshots: list[Any] = []

    async def consume() -> None:
        async with agent.run_stream("x") as stream:
            async for event in stream:
                if isinstance(event, PartialOutputEvent):
                    snapshots.append(event.snapshot)

    with pytest.raises(OutputRetriesExceeded, match="unknown field"):
        await consume()
    assert snapshots == [{"name": "A"}]


async def test_partial_native_output_from_text() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        for chunk in ['{"name": "Ro', 'me", "population": ', "5}"]:
            yield chunk

    agent = Agent(FunctionModel(stream_function=stream), output_type=NativeOutput(City))
    async with agent.run_stream("x") as streamed:
        snapshots = [e.snapshot async for e in streamed if isinstance(e, PartialOutputEvent)]
    assert snapshots == [{"name": "Ro"}, {"name": "Rome"}, {"name": "Rome", "population": 5}]
    assert streamed.result.output == City("Rome", 5)


async def test_partial_validator_retry_suppresses_snapshot() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        for chunk in ["ok ", "bad ", "fine"]:
            yield chunk

    seen_partial: list[bool] = []
    agent = Agent(FunctionModel(stream_function=stream))

    @agent.output_validator
    def no_bad(ctx: Any, output: str) -> str:
        seen_partial.append(ctx.partial_output)
        if ctx.partial_output and output.endswith("bad "):
            raise ModelRetry("no")
        return output

    async with agent.run_stream("x") as streamed:
        snapshots = [e.snapshot async for e in streamed if isinstance(e, PartialOutputEvent)]
    assert snapshots == ["ok ", "ok bad fine"]
    assert seen_partial == [True, True, True, False]


async def test_failure_after_visible_output_is_not_retried() -> None:
    attempts = 0

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        nonlocal attempts
        attempts += 1
        yield "visible"
        raise ServerError("stream broke", provider_name="function")

    agent = Agent(
        FunctionModel(stream_function=stream), retry_policy=RetryPolicy(max_retries=3, initial_delay=0)
    )
    seen: list[Any] = []

    async def consume() -> None:
        async with agent.run_stream("x") as s:
            async for event in s:
                seen.append(event)

    with pytest.raises(ServerError, match="stream broke"):
        await consume()
    assert attempts == 1
    assert any(isinstance(e, PartDeltaEvent) for e in seen)


async def test_failure_before_first_event_is_retried() -> None:
    attempts = 0

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ServerError("overloaded", provider_name="function")
        yield "finally"

    agent = Agent(
        FunctionModel(stream_function=stream), retry_policy=RetryPolicy(max_retries=3, initial_delay=0)
    )
    async with agent.run_stream("x") as s:
        assert await s.get_output() == "finally"
    assert attempts == 3


async def test_leaving_the_stream_early_cancels_and_drains_the_run() -> None:
    slow = Hang()

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="slow", json_args="{}", tool_call_id="s")}

    agent = Agent(FunctionModel(stream_function=stream), tools=[slow.tool("slow")])
    async with agent.run_stream("x") as s:
        async for event in s:
            if isinstance(event, FunctionToolCallEvent):
                await slow.started.wait()
                break
    assert slow.cancelled.is_set()
    assert not s.done


def _one_call(name: str) -> Any:
    """A stream function that calls the tool `name` (no arguments) and, after its result, says "done"."""

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if turn(messages) == 0:
            yield {0: DeltaToolCall(name=name, json_args="{}", tool_call_id="c1")}
        else:
            yield "done"

    return stream


async def test_leaving_the_stream_early_lets_the_runs_shielded_work_finish() -> None:
    # The run's task is cancelled through a cancel scope, not by cancelling the task: what a tool
    # shields from cancellation runs to its end before the block exits, on either backend.
    started = anyio.Event()
    done: list[str] = []

    async def commit() -> str:
        with anyio.CancelScope(shield=True):
            started.set()
            await anyio.sleep(0.05)
            done.append("shielded")
        await anyio.sleep(10)
        done.append("not cancelled")
        return "committed"

    agent = Agent(FunctionModel(stream_function=_one_call("commit")), tools=[commit])
    async with agent.run_stream("x") as s:
        async for event in s:
            if isinstance(event, FunctionToolCallEvent):
                await started.wait()
                break
    assert done == ["shielded"]
    assert not s.done


async def test_an_outer_deadline_while_consuming_cancels_and_drains_the_run() -> None:
    slow = Hang()
    agent = Agent(FunctionModel(stream_function=_one_call("slow")), tools=[slow.tool("slow")])
    with anyio.fail_after(5):
        with anyio.move_on_after(0.05) as outer:
            async with agent.run_stream("x") as s:
                async for _ in s:
                    pass
    assert outer.cancelled_caught
    assert slow.cancelled.is_set()


async def test_an_outer_deadline_while_the_run_drains_waits_for_its_shielded_work() -> None:
    # Left early while the run is in shielded work, and then cancelled from outside as well: the
    # block still waits for the run's task to end before the cancellation goes on.
    started = anyio.Event()
    done: list[str] = []

    async def commit() -> str:
        with anyio.CancelScope(shield=True):
            started.set()
            await anyio.sleep(0.2)
            done.append("shielded")
        return "committed"

    agent = Agent(FunctionModel(stream_function=_one_call("commit")), tools=[commit])
    with anyio.fail_after(5):
        with anyio.move_on_after(0.05) as outer:
            async with agent.run_stream("x") as s:
                async for event in s:
                    if isinstance(event, FunctionToolCallEvent):
                        await started.wait()
                        break
            done.append("left the block")
            await anyio.lowlevel.checkpoint()
    assert outer.cancelled_caught
    # Trio raises the outer cancellation at the next checkpoint after the block, asyncio as it exits.
    assert done[0] == "shielded"


async def test_cancel_method_ends_the_stream() -> None:
    from ferrule.agent.exceptions import RunCancelledError

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        yield "a"
        await anyio.sleep(10)
        yield "b"

    agent = Agent(FunctionModel(stream_function=stream))

    async def consume() -> None:
        async with agent.run_stream("x") as s:
            async for event in s:
                if isinstance(event, PartDeltaEvent):
                    s.cancel()

    with pytest.raises(RunCancelledError):
        await consume()


async def test_a_later_step_is_cancelled_and_timed_out_with_the_run_state() -> None:
    # One cancel scope spans every step of a streamed run: a cancel or a deadline during its
    # second request still ends it with the error and the state of a run stopped in that step.
    from ferrule.agent import run_state_of
    from ferrule.agent.exceptions import RunCancelledError
    from ferrule.agent.exceptions import RunTimeoutError

    async def lookup() -> str:
        return "sunny"

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield {0: DeltaToolCall(name="lookup", json_args="{}", tool_call_id="c1")}
            return
        yield "a"
        await anyio.sleep(10)
        yield "b"

    agent = Agent(FunctionModel(stream_function=stream), tools=[lookup])

    async def cancel_in_second_step() -> None:
        async with agent.run_stream("x") as s:
            async for event in s:
                if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    s.cancel()

    with pytest.raises(RunCancelledError) as cancelled:
        await cancel_in_second_step()
    with anyio.fail_after(5), pytest.raises(RunTimeoutError) as timed_out:
        async with agent.run_stream("x", timeout=0.2) as s:
            await s.get_output()
    for error in (cancelled.value, timed_out.value):
        state = run_state_of(error)
        assert state is not None
        returns = [p for m in state.messages for p in m.parts if isinstance(p, ToolReturnPart)]
        assert [(p.tool_call_id, p.content) for p in returns] == [("c1", "sunny")]


async def test_event_handler_on_run_receives_the_same_events() -> None:
    async def lookup(q: str) -> str:
        return "sunny"

    agent = Agent(FunctionModel(stream_function=text_then_tool()), tools=[lookup])
    handled: list[Any] = []

    async def handler(event: Any) -> None:
        handled.append(event)

    result = await agent.run("x", event_handler=handler)
    assert result.output == "It is sunny."
    assert sum(isinstance(e, ResponseCompleted) for e in handled) == 2
    assert isinstance(handled[-1], FinalResultEvent)


async def test_buffered_function_model_streams_part_by_part() -> None:
    def fn(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("whole answer")])

    async with Agent(FunctionModel(fn)).run_stream("x") as s:
        events = [e async for e in s]
    assert [type(e) for e in events[:4]] == [PartStartEvent, PartDeltaEvent, PartialOutputEvent, PartEndEvent]
    assert s.result.output == "whole answer"


async def test_stream_that_pauses() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="danger", json_args="{}", tool_call_id="d")}

    def danger() -> str:
        return "done"

    agent = Agent(FunctionModel(stream_function=stream), tools=[Tool(danger, requires_approval=True)])
    async with agent.run_stream("x") as s:
        events = [e async for e in s]
    assert isinstance(events[-1], DeferredToolCallsEvent)
    assert s.paused is not None
    with pytest.raises(PauseRequiredError):
        _ = s.result


async def test_stream_errors_reach_the_consumer_unwrapped() -> None:
    class Oops(Exception):
        pass

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        yield {0: DeltaToolCall(name="bad", json_args="{}", tool_call_id="b")}

    def bad() -> str:
        raise Oops

    agent = Agent(FunctionModel(stream_function=stream), tools=[bad])
    s: StreamedRunResult[str] | None = None
    with pytest.raises(Oops):
        async with agent.run_stream("x") as s:
            await s.get_output()
    assert s is not None
    assert isinstance(s.all_messages()[-1], ModelRequest)


@pytest.mark.parametrize("count", [1, 31, 32, 33, 64, 65, 500])
async def test_bursts_of_deltas_arrive_complete_and_in_order(count: int) -> None:
    # The run hands events over in batches up to the stream buffer (64 events, two per delta);
    # bursts below, at and past it must arrive whole, in order, with exact partial snapshots.
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        for i in range(count):
            yield f"{i},"  # no await: the whole burst is produced without the model checkpointing

    agent = Agent(FunctionModel(stream_function=stream))
    async with agent.run_stream("x") as s:
        events = [event async for event in s]
    deltas = [
        e.delta.content_delta
        for e in events
        if isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta)
    ]
    starts = [
        e.part.content
        for e in events
        if isinstance(e, PartStartEvent) and isinstance(e.part, TextPart) and e.part.content
    ]
    expected = [f"{i}," for i in range(count)]
    assert starts + deltas == expected
    snapshots = [e.snapshot for e in events if isinstance(e, PartialOutputEvent)]
    assert snapshots == ["".join(expected[: i + 1]) for i in range(count)]
    assert s.result.output == "".join(expected)
    assert isinstance(events[-1], FinalResultEvent)


async def test_leaving_during_a_burst_closes_the_model_stream() -> None:
    closed = anyio.Event()
    produced: list[int] = []

    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        try:
            for i in range(10_000):
                produced.append(i)
                yield "a"
        finally:
            closed.set()

    agent = Agent(FunctionModel(stream_function=stream))
    seen = 0
    async with agent.run_stream("x") as s:
        async for _ in s:
            seen += 1
            if seen == 3:
                break
    assert closed.is_set()
    assert not s.done
    # Backpressure: the run stopped near the buffer's size, not at the end of the model's stream.
    assert len(produced) < 1_000


def _text_tool_text_agent() -> Agent[None, str]:
    async def lookup(q: str) -> str:
        return "sunny"

    return Agent(FunctionModel(stream_function=text_then_tool()), tools=[lookup])


def _shape(event: Any) -> Any:
    """`event` without what differs between runs (timestamps, run IDs)."""
    if isinstance(event, ResponseCompleted):
        return ("completed", event.response.parts)
    if isinstance(event, FunctionToolResultEvent):
        return ("result", event.result.content)
    return event


async def _handled_events(agent: Agent[None, str]) -> list[Any]:
    """The events an `event_handler` sees: the run makes every partial output itself."""
    handled: list[Any] = []

    async def handler(event: Any) -> None:
        handled.append(_shape(event))

    await agent.run("x", event_handler=handler)
    return handled


async def test_streamed_events_equal_the_event_handlers_with_a_break_after_every_event() -> None:
    # `run_stream`'s consumer makes plain text's partial outputs itself; an iteration left right
    # after any event (a text delta included) resumes with exactly the next one.
    agent = _text_tool_text_agent()
    expected = await _handled_events(agent)
    assert sum(isinstance(e, PartialOutputEvent) for e in expected) == 4
    whole: list[Any] = []
    one_by_one: list[Any] = []
    async with agent.run_stream("x") as s:
        whole = [_shape(e) async for e in s]
    async with agent.run_stream("x") as s:
        while not s.done:
            async for event in s:
                one_by_one.append(_shape(event))
                break
    assert whole == expected
    assert one_by_one == expected


async def test_events_after_stream_text_snapshot_the_text_it_took() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        for piece in ("a", "b", "c", "d"):
            yield piece

    agent = Agent(FunctionModel(stream_function=stream))
    async with agent.run_stream("x") as s:
        taken: list[str] = []
        async for text in s.stream_text(delta=True):
            taken.append(text)
            if len(taken) == 2:
                break
        rest = [e async for e in s]
    assert taken == ["a", "b"]
    # The partial output of "b" was skipped with it; the next ones hold all the text so far.
    assert [e.snapshot for e in rest if isinstance(e, PartialOutputEvent)] == ["abc", "abcd"]
    assert [e.output for e in rest if isinstance(e, FinalResultEvent)] == ["abcd"]


async def test_stream_output_after_a_break_between_a_delta_and_its_partial_output() -> None:
    async def stream(messages: Sequence[Message], info: AgentInfo) -> AsyncIterator[str]:
        for piece in ("a", "b", "c"):
            yield piece

    agent = Agent(FunctionModel(stream_function=stream))
    async with agent.run_stream("x") as s:
        async for event in s:
            if isinstance(event, PartDeltaEvent):
                break  # the first delta: its partial output is the next event
        outputs = [o async for o in s.stream_output()]
    assert outputs == ["a", "ab", "abc", "abc"]


class _ReadsModel(Model):
    """A model whose responses come a network read (a list of events) at a time, as a codec's do."""

    def __init__(self, turns: list[list[list[ModelStreamEvent]]]) -> None:
        self._turns = turns

    @property
    def model_name(self) -> str:
        return "reads"

    @property
    def provider_name(self) -> str:
        return "test"

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile(supports_tools=True)

    def _reads(self, call: ModelCall) -> list[list[ModelStreamEvent]]:
        return self._turns[sum(isinstance(m, ModelResponse) for m in call.messages)]

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        for read in self._reads(call):
            for event in read:
                yield event

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        async def reads() -> AsyncIterator[list[ModelStreamEvent]]:
            for read in self._reads(call):
                yield read

        return reads()


async def test_reads_of_text_deltas_stream_the_events_an_event_handler_sees() -> None:
    # Reads of nothing but text deltas are handed to `run_stream`'s consumer whole; mixed reads
    # event by event: either way, the events and partial outputs of the per-event path.
    call = ToolCallPart("lookup", '{"q": "x"}', "c1")
    first = ModelResponse(parts=[TextPart("Let me look. Now"), call, TextPart("after")])
    second = ModelResponse(parts=[TextPart("It is sunny.")])
    model = _ReadsModel(
        [
            [
                [PartStartEvent(0, TextPart("Let ")), PartDeltaEvent(0, TextPartDelta("me "))],
                [PartDeltaEvent(0, TextPartDelta("look.")), PartDeltaEvent(0, TextPartDelta(" Now"))],
                [PartEndEvent(0, TextPart("Let me look. Now")), PartStartEvent(1, call)],
                [PartEndEvent(1, call), PartStartEvent(2, TextPart(""))],
                [PartDeltaEvent(2, TextPartDelta("after"))],
                [PartEndEvent(2, TextPart("after")), ResponseCompleted(first)],
            ],
            [
                [PartStartEvent(0, TextPart(""))],
                [PartDeltaEvent(0, TextPartDelta("It is ")), PartDeltaEvent(0, TextPartDelta("sunny."))],
                [PartEndEvent(0, TextPart("It is sunny.")), ResponseCompleted(second)],
            ],
        ]
    )

    async def lookup(q: str) -> str:
        return "sunny"

    agent = Agent(model, tools=[lookup])
    expected = await _handled_events(agent)
    async with agent.run_stream("x") as s:
        events = [_shape(e) async for e in s]
    assert events == expected
    assert [e.snapshot for e in events if isinstance(e, PartialOutputEvent)] == [
        "Let ",
        "Let me ",
        "Let me look.",
        "Let me look. Now",
        "It is ",
        "It is sunny.",
    ]
    async with agent.run_stream("x") as s:
        deltas = [d async for d in s.stream_text(delta=True)]
    assert deltas == ["Let ", "me ", "look.", " Now", "after", "It is ", "sunny."]
    assert s.result.output == "It is sunny."


async def test_reads_mixing_text_and_an_output_tool_stream_the_event_handlers_events() -> None:
    # Text may be the output too: the text's partial outputs (the consumer's), then the output
    # tool's (the run's, each right after its delta), in the order the per-event path gives.
    call = ToolCallPart("final_result", '{"name": "A", "population": 1}', "o1")
    response = ModelResponse(parts=[TextPart("Hi there"), call])
    model = _ReadsModel(
        [
            [
                [
                    PartStartEvent(0, TextPart("Hi")),
                    PartDeltaEvent(0, TextPartDelta(" there")),
                    PartEndEvent(0, TextPart("Hi there")),
                    PartStartEvent(1, ToolCallPart("final_result", None, "o1")),
                    PartDeltaEvent(1, ToolCallPartDelta(args_delta='{"name": "A",')),
                    PartDeltaEvent(1, ToolCallPartDelta(args_delta=' "population": 1}')),
                ],
                [PartEndEvent(1, call), ResponseCompleted(response)],
            ]
        ]
    )
    agent = Agent(model, output_type=[str, City])
    expected = await _handled_events(agent)
    async with agent.run_stream("x") as s:
        events = [_shape(e) async for e in s]
    assert events == expected
    partials = [e for e in events if isinstance(e, PartialOutputEvent)]
    assert [p.snapshot for p in partials if p.tool_name is None] == ["Hi", "Hi there"]
    assert partials[-1] == PartialOutputEvent(
        {"name": "A", "population": 1}, City("A", 1), True, "final_result"
    )
    assert s.result.output == City("A", 1)


@pytest.mark.parametrize("how", ["events", "stream_text"])
async def test_a_consumer_that_never_awaits_sees_at_most_64_events_between_checkpoints(how: str) -> None:
    # Reads of 280 text deltas: the run still hands them over at most a buffer's worth at a
    # time, counting a delta and the partial output the consumer makes of it as two events.
    text = "ab" * 560
    response = ModelResponse(parts=[TextPart(text)])
    read: list[ModelStreamEvent] = [PartDeltaEvent(0, TextPartDelta("ab")) for _ in range(280)]
    model = _ReadsModel(
        [
            [
                [PartStartEvent(0, TextPart(""))],
                read,
                read,
                [PartEndEvent(0, TextPart(text)), ResponseCompleted(response)],
            ]
        ]
    )
    ticks = 0

    async def tick() -> None:
        # Runs once in every round of the scheduler: between any two of the consumer's checkpoints.
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    longest = seen = 0
    last = -1
    output = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        async with Agent(model).run_stream("x") as s:
            items = s if how == "events" else s.stream_text(delta=True)
            async for _ in items:
                if ticks != last:
                    last, seen = ticks, 0
                seen += 1
                longest = max(longest, seen)
            output = s.result.output
        tg.cancel_scope.cancel()
    assert 32 <= longest <= 64
    assert output == text


class _CountedReads(_ReadsModel):
    """`_ReadsModel` that counts the reads the run has taken from it."""

    taken = 0

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        async def reads() -> AsyncIterator[list[ModelStreamEvent]]:
            for read in self._reads(call):
                self.taken += 1
                yield read

        return reads()


@pytest.mark.parametrize("how", ["events", "stream_text"])
async def test_the_run_reads_no_further_ahead_of_a_consumer_that_stops_taking_events(how: str) -> None:
    # Reads of 10 text deltas handed over whole: the run waits once 64 events are waiting. The
    # consumer took the first 72 (the response's marker, its start and 7 reads of deltas) and
    # sleeps after one of them: the run takes 7 reads more (70 waiting) and then no more.
    reads: list[list[ModelStreamEvent]] = [[PartStartEvent(0, TextPart(""))]]
    deltas: list[ModelStreamEvent] = [PartDeltaEvent(0, TextPartDelta("ab")) for _ in range(10)]
    reads += [list(deltas) for _ in range(20)]
    text = "ab" * 200
    reads.append([PartEndEvent(0, TextPart(text)), ResponseCompleted(ModelResponse(parts=[TextPart(text)]))])
    model = _CountedReads([reads])
    async with Agent(model).run_stream("x") as s:
        items = s if how == "events" else s.stream_text(delta=True)
        iterator = aiter(items)
        await anext(iterator)
        await anyio.sleep(0.05)  # plenty of turns for a run that would not wait
        assert model.taken == 1 + 7 + 7
        rest = [item async for item in iterator]
        assert rest
        assert s.result.output == text
    assert model.taken == len(reads)
