from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Callable

import pytest

from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile

from ._support import FixedModel

pytestmark = pytest.mark.anyio

CALL = ModelCall(messages=[ModelRequest.user_text_prompt("hi")])


class ScriptedModel(FixedModel):
    """A model whose stream is a fixed list of events; records whether I/O started."""

    def __init__(
        self, events: Callable[[], list[ModelStreamEvent]], profile: ModelProfile | None = None
    ) -> None:
        super().__init__("scripted", profile=profile)
        self._events = events
        self.started = False
        self.closed = False

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        self.started = True
        try:
            for event in self._events():
                yield event
        finally:
            self.closed = True


def done(text: str = "hello") -> ResponseCompleted:
    return ResponseCompleted(ModelResponse(parts=[TextPart(text)]))


async def test_stream_ends_with_exactly_one_completed_response() -> None:
    model = ScriptedModel(lambda: [PartDeltaEvent(0, TextPartDelta("hel")), done()])
    events = [e async for e in model.stream(CALL)]
    assert isinstance(events[-1], ResponseCompleted)
    assert (await model.request(CALL)).text == "hello"


async def test_stream_without_completion_raises_instead_of_empty_success() -> None:
    model = ScriptedModel(lambda: [PartDeltaEvent(0, TextPartDelta("partial"))])
    with pytest.raises(ResponseDecodeError, match="without a completed response"):
        [e async for e in model.stream(CALL)]
    with pytest.raises(ResponseDecodeError):
        await model.request(CALL)


async def test_events_after_completion_are_a_protocol_error() -> None:
    model = ScriptedModel(lambda: [done(), PartDeltaEvent(0, TextPartDelta("late"))])
    with pytest.raises(ResponseDecodeError, match="after its completed response"):
        [e async for e in model.stream(CALL)]


async def test_unsupported_call_fails_before_any_io() -> None:
    model = ScriptedModel(lambda: [done()])
    call = ModelCall(messages=CALL.messages, tools=[ToolDefinition(name="t")])
    with pytest.raises(UnsupportedFeatureError):
        model.stream(call)
    with pytest.raises(UnsupportedFeatureError):
        await model.request(call)
    assert not model.started


async def test_early_consumer_exit_closes_the_provider_stream() -> None:
    model = ScriptedModel(lambda: [PartDeltaEvent(0, TextPartDelta("a")), done()])
    stream = model.stream(CALL)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert model.closed


def test_repr_and_system() -> None:
    model = ScriptedModel(lambda: [])
    assert model.system == "test:scripted"
    assert repr(model) == "ScriptedModel('test:scripted')"


# --- stream_batches: the same stream a list at a time ------------------------------------------


class BatchedModel(ScriptedModel):
    """`ScriptedModel` whose events come in the lists `batches` gives (as a codec's reads)."""

    def __init__(self, batches: list[list[ModelStreamEvent]]) -> None:
        super().__init__(lambda: [event for batch in batches for event in batch])
        self._batches = batches

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        async def batches() -> AsyncIterator[list[ModelStreamEvent]]:
            self.started = True
            try:
                for batch in self._batches:
                    yield batch
            finally:
                self.closed = True

        return batches()


async def _batches_and_error(model: Model) -> tuple[list[list[ModelStreamEvent]], str | None]:
    seen: list[list[ModelStreamEvent]] = []
    try:
        async for batch in model.stream_batches(CALL):
            seen.append(batch)
    except ResponseDecodeError as exc:
        return seen, str(exc)
    return seen, None


async def test_stream_batches_of_an_event_by_event_model_are_its_events_one_a_list() -> None:
    events: list[ModelStreamEvent] = [PartDeltaEvent(0, TextPartDelta("hel")), done()]
    model = ScriptedModel(lambda: events)
    assert await _batches_and_error(model) == ([[events[0]], [events[1]]], None)
    assert model.closed


async def test_stream_batches_keep_the_contract_and_what_precedes_a_violation() -> None:
    a, b = PartDeltaEvent(0, TextPartDelta("a")), PartDeltaEvent(0, TextPartDelta("b"))
    whole = done()
    model = BatchedModel([[a, b], [whole]])
    assert await _batches_and_error(model) == ([[a, b], [whole]], None)
    assert [e async for e in model.stream(CALL)] == [a, b, whole]
    # An event after the completed response, in the same list: the list up to it, then the error,
    # as the same events one by one give.
    model = BatchedModel([[a], [whole, b]])
    seen, error = await _batches_and_error(model)
    assert seen == [[a], [whole]]
    assert error is not None
    assert "after its completed response" in error
    assert model.closed
    one_by_one = ScriptedModel(lambda: [a, whole, b])
    with pytest.raises(ResponseDecodeError, match="after its completed response"):
        [e async for e in one_by_one.stream(CALL)]
    model = BatchedModel([[whole], [b]])
    assert (await _batches_and_error(model))[0] == [[whole]]
    model = BatchedModel([[a, b]])
    seen, error = await _batches_and_error(model)
    assert seen == [[a, b]]
    assert error is not None
    assert "without a completed response" in error


async def test_stream_batches_check_the_call_before_any_io() -> None:
    model = BatchedModel([[done()]])
    call = ModelCall(messages=CALL.messages, tools=[ToolDefinition(name="t")])
    with pytest.raises(UnsupportedFeatureError):
        model.stream_batches(call)
    assert not model.started
