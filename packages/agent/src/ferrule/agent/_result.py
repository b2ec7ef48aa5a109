"""Run results and the handles of step-wise and streamed runs."""

from __future__ import annotations

import itertools
import operator
from collections.abc import AsyncGenerator
from collections.abc import AsyncIterator
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic

from typing_extensions import TypeVar

from ferrule.core.messages import Message
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import TextPartDelta
from ferrule.core.usage import RunUsage

from ._deferred import Paused
from ._deferred import PauseRequiredError
from ._errors import RunCancelledError
from ._errors import attach_state
from ._events import AgentStreamEvent
from ._events import FinalResultEvent
from ._events import PartialOutputEvent
from ._events import RunStep
from ._handoff import BUFFER
from ._handoff import Background
from ._handoff import Handoff
from ._handoff import let_others_run
from ._partial_output import SPAN_END
from ._partial_output import PlainText
from ._receipts import ActionReceipt
from ._receipts import run_actions

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["AgentRun", "AgentRunResult", "StreamedRunResult", "drive_stream", "streaming"]

OutputT = TypeVar("OutputT", default=str, covariant=True)


def _messages_json(messages: list[Message]) -> bytes:
    from ferrule.core import history

    return history.dump_pydantic_ai(messages)


class AgentRunResult(Generic[OutputT]):
    """The outcome of a finished run: the output, the history and the usage."""

    __slots__ = (
        "_actions",
        "_messages",
        "_new_index",
        "_tools",
        "_usage",
        "output",
        "output_tool_name",
        "run_id",
        "unknown_outcomes",
    )

    def __init__(self, run: Run) -> None:
        self.output: OutputT = run.output
        """The validated output."""
        self.output_tool_name: str | None = run.output_tool_name
        """The output tool that produced the output (tool output mode), else `None`."""
        self.run_id: str = run.run_id
        """The run's identifier."""
        self.unknown_outcomes: list[ToolCallPart] = list(run.unknown_outcomes)
        """Calls of non-idempotent tools whose outcome is unknown (timed out while running)."""
        self._messages = run.messages
        self._new_index = run.new_message_index
        self._usage = run.usage
        self._tools = (run.step_tools.by_name, run.core.tools)
        self._actions: list[ActionReceipt] | None = None

    @property
    def actions(self) -> list[ActionReceipt]:
        """A receipt for every call this run made of a tool that is not read-only, in result order.

        Read from the history on first access (not per step); `unknown_outcomes` are the calls of
        the `unknown` receipts.
        """
        if self._actions is None:
            self._actions = run_actions(self._messages, self._new_index, *self._tools)
        return list(self._actions)

    def all_messages(self) -> list[Message]:
        """The whole history: the `message_history` passed in plus this run's messages."""
        return list(self._messages)

    def new_messages(self) -> list[Message]:
        """The messages this run added."""
        return self._messages[self._new_index :]

    def all_messages_json(self) -> bytes:
        """`all_messages()` as the JSON list PydanticAI reads (`ferrule.core.history.dump_pydantic_ai`)."""
        return _messages_json(self._messages)

    def new_messages_json(self) -> bytes:
        """`new_messages()` as JSON."""
        return _messages_json(self.new_messages())

    @property
    def usage(self) -> RunUsage:
        """The run's aggregated usage."""
        return self._usage

    def __repr__(self) -> str:
        return f"AgentRunResult(output={self.output!r})"


class _RunInProgress:
    """What the handles of a run still in progress (`AgentRun`, `StreamedRunResult`) both read from it."""

    __slots__ = ("_run",)

    def __init__(self, run: Run) -> None:
        self._run = run

    @property
    def paused(self) -> Paused | None:
        """The pause, if the run paused for deferred calls."""
        return self._run.paused

    @property
    def usage(self) -> RunUsage:
        """Usage so far."""
        return self._run.usage

    def all_messages(self) -> list[Message]:
        """The history so far."""
        return list(self._run.messages)

    def new_messages(self) -> list[Message]:
        """The messages this run added so far."""
        return self._run.messages[self._run.new_message_index :]


class AgentRun(_RunInProgress, Generic[OutputT]):
    """A run driven one step at a time: `async for step in run` (or `await run.next()`)."""

    __slots__ = ()

    async def next(self) -> RunStep:
        """Run the next step: a model request, or the handling of the last response."""
        return await self._run.advance()

    def __aiter__(self) -> AsyncIterator[RunStep]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[RunStep]:
        while not self._run.done:
            yield await self._run.advance()

    @property
    def done(self) -> bool:
        """Whether the run finished or paused."""
        return self._run.done

    @property
    def result(self) -> AgentRunResult[OutputT] | None:
        """The result once the run finished with output, else `None`."""
        run = self._run
        if run.done and run.paused is None:
            return AgentRunResult(run)
        return None

    def cancel(self) -> None:
        """Cancel the step in progress; later steps raise `RunCancelledError`."""
        self._run.cancel()


class StreamedRunResult(_RunInProgress, Generic[OutputT]):
    """A run whose events are streamed: iterate it for every event, or use the helpers.

    Events arrive in order: each model event first, then the agent events it caused. Iterate only
    once (the helpers consume the same stream). Leaving the `async with` block before the run ends
    cancels it and drains its work.
    """

    def __init__(self, run: Run, handoff: Handoff, errors: list[BaseException]) -> None:
        super().__init__(run)
        self._handoff = handoff
        self._errors = errors
        # The events taken from the run and not yet delivered: an iteration left early (a `break`)
        # leaves the rest here for the next one, so no event is lost or delivered twice.
        self._held: Iterator[Any] = iter(())
        # The `PlainText` of the response streaming (between it and `SPAN_END` in the hand-off),
        # and the partial output it made for the event delivered last, when the iteration that
        # delivered that event was left before the partial output (delivered first by the next).
        self._plain: PlainText | None = None
        self._owed: PartialOutputEvent | None = None
        self._finished = False
        self._cancelled = False

    def __aiter__(self) -> AsyncIterator[AgentStreamEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[AgentStreamEvent]:
        owed = self._owed
        if owed is not None:
            self._owed = None
            yield owed
        # A text delta is two events here (it and the partial output made of it): half a buffer of items.
        async for held in self._batches(BUFFER // 2):
            for event in held:
                plain = self._plain
                if plain is not None:
                    if type(event) is PartDeltaEvent and type(event.delta) is TextPartDelta:
                        partial = plain.delta(event.delta.content_delta)
                    elif type(event) is PlainText or event is SPAN_END:
                        self._span(event)
                        continue
                    else:
                        partial = plain.see(event)
                    if partial is not None:
                        self._owed = partial
                        yield event
                        self._owed = None
                        yield partial
                        continue
                elif type(event) is PlainText:
                    self._span(event)
                    continue
                yield event

    def _span(self, marker: object) -> None:
        """A response's `PlainText` starts, or `SPAN_END` ends it."""
        self._plain = marker if type(marker) is PlainText else None

    async def _batches(self, most: int) -> AsyncIterator[Iterator[Any]]:
        """The held events, then each batch the run hands over, as iterators over `_held` of at
        most `most` items between checkpoints (the rest stays in `_held`): a consumer that never
        awaits still lets other tasks run every `most` items."""
        if self._finished:
            return
        handoff = self._handoff
        room = most  # items the consumer may still take before the next checkpoint
        while True:
            held = self._held
            left = operator.length_hint(held)  # a list's iterator knows what is left of it
            while left > room:
                if room:
                    yield itertools.islice(held, room)
                    left -= room
                await let_others_run()
                room = most
            room -= left
            yield held
            # Waiting for the run is a checkpoint: the count starts again after it.
            waits = not handoff.items
            batch = await handoff.take()
            if not batch:
                break
            if waits:
                room = most
            self._held = iter(batch)
        self._finished = True
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._errors:
            raise self._errors[0]
        if self._cancelled:
            raise _with_state(RunCancelledError("the streamed run was cancelled"), self._run)

    async def stream_text(self, *, delta: bool = False) -> AsyncIterator[str]:
        """The text the model streams: deltas, or the text so far of the current response.

        Text is visible as it streams, including text that precedes tool calls in the same
        response; only the final result is the run's output.
        """
        current: list[str] = []
        self._owed = None  # a partial output, which this does not deliver
        # The batches directly, not `async for event in self`: one generator less per event.
        async for held in self._batches(BUFFER):
            for event in held:
                plain = self._plain
                if type(event) is PartDeltaEvent and type(event.delta) is TextPartDelta:
                    # Most events of a text stream. A partial output would need its text later.
                    text = event.delta.content_delta
                    if plain is not None:
                        plain.skip(text)
                else:
                    if type(event) is PlainText or event is SPAN_END:
                        self._span(event)
                        continue
                    if plain is not None:
                        plain.see(event)
                    if isinstance(event, PartDeltaEvent):
                        if not isinstance(event.delta, TextPartDelta):
                            continue
                        text = event.delta.content_delta
                    elif isinstance(event, PartStartEvent):
                        if event.index == 0:
                            current = []
                        if not isinstance(event.part, TextPart):
                            continue
                        text = event.part.content
                    else:
                        continue  # a partial output among them
                if text:
                    if delta:
                        yield text
                    else:
                        current.append(text)
                        yield "".join(current)

    async def stream_output(self) -> AsyncIterator[OutputT]:
        """Partial outputs that already convert to the output type, then the final output."""
        async for event in self:
            if (isinstance(event, PartialOutputEvent) and event.has_output) or isinstance(
                event, FinalResultEvent
            ):
                yield event.output

    async def get_output(self) -> OutputT:
        """Consume the rest of the stream and return the output."""
        async for _ in self:
            pass
        return self.result.output

    @property
    def done(self) -> bool:
        """Whether the run has finished."""
        return self._finished

    @property
    def result(self) -> AgentRunResult[OutputT]:
        """The result; raises if the run has not finished, failed, or paused."""
        if not self._finished:
            raise RuntimeError(
                "the stream has not finished; consume it first (e.g. await stream.get_output())"
            )
        self._raise_if_failed()
        if self._run.paused is not None:
            error = PauseRequiredError(self._run.paused)
            error.called("run_stream")
            raise _with_state(error, self._run)
        return AgentRunResult(self._run)

    def cancel(self) -> None:
        """Cancel the run; the stream ends and raises `RunCancelledError`."""
        self._cancelled = True
        self._run.cancel()


def _with_state(error: BaseException, run: Run) -> BaseException:
    attach_state(error, run.state())
    return error


async def drive_stream(run: Run, handoff: Handoff, errors: list[BaseException]) -> None:
    """The background task of a streamed run: the loop, handing each event to the consumer."""
    try:
        await run.run_to_end(handoff)
    except Exception as exc:  # handed to the consumer instead of surfacing as an ExceptionGroup
        errors.append(exc)
    finally:
        handoff.close()


@asynccontextmanager
async def streaming(run: Run) -> AsyncGenerator[StreamedRunResult[Any]]:
    """Drive `run` in a background task of its own; the body consumes its events in order."""
    handoff = Handoff()
    errors: list[BaseException] = []
    body_error: Exception | None = None
    async with Background(drive_stream, run, handoff, errors) as task:
        try:
            yield StreamedRunResult(run, handoff, errors)
        except Exception as exc:
            # Re-raised below, once the run's task has ended, so the caller sees it as it was.
            body_error = exc
        finally:
            # Leaving early cancels the run; its work is drained before the block exits. A run
            # that has ended has nothing to cancel (and anyio's cancel formats the task's repr).
            if not handoff.closed:
                task.cancel()
    if body_error is not None:
        raise body_error
