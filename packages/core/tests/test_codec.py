"""`CodecModel` over real HTTP with the `ferrule-test` codec, and the conformance helpers' own checks."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from ferrule.core._test_codec import FerruleTestCodec
from ferrule.core._test_codec import TestStreamDecoder
from ferrule.core.codec import CodecModel
from ferrule.core.codec import StreamDecoder
from ferrule.core.codec import WireRequest
from ferrule.core.codec import completed_response
from ferrule.core.conformance import ConformanceError
from ferrule.core.conformance import Interaction
from ferrule.core.conformance import assert_same_response
from ferrule.core.conformance import check_stream
from ferrule.core.conformance import feed_sse
from ferrule.core.conformance import load_cassette
from ferrule.core.conformance import replay
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import Provider
from ferrule.core.provider import QueryParams
from ferrule.core.settings import ModelSettings
from ferrule.core.sse import SseEvent
from tests.support.http_server import Conn
from tests.support.http_server import LocalServer
from tests.support.http_server import Request
from tests.support.http_server import json_reply
from tests.support.http_server import sse_reply

Serve = Callable[..., LocalServer]

STREAM = b'data: "Hel"\n\ndata: "lo"\n\nevent: done\ndata: {"finish_reason": "stop"}\n\n'
CALL = ModelCall(messages=[ModelRequest.user_text_prompt("hi")], request_id="req-1")


class _Codec(FerruleTestCodec):
    """The test codec with one header of its own, as a wire format may need."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        wire = super().encode(call, stream=stream)
        return WireRequest(body=wire.body, headers={"x-format": "test", "x-request": call.request_id or ""})


class _Model(CodecModel[Provider]):
    def __init__(self, provider: Provider, *, stop_after: int | None = None, refuse: bool = False) -> None:
        super().__init__("m1", provider=provider)
        self.stop_after = stop_after
        self.refuse = refuse
        self.fed = 0

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile()

    def codec(self) -> _Codec:
        return _Codec(model_name=self.model_name)

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        return ("/stream", {"alt": "sse"}) if stream else ("/generate", None)

    def _stream_done(self, decoder: StreamDecoder) -> bool:
        self.fed += 1
        return self.stop_after is not None and self.fed >= self.stop_after

    def _check_response(self, response: ModelResponse) -> None:
        if self.refuse:
            raise ContentFilterError("refused", provider_name=self.provider_name)


def _provider(server: LocalServer) -> Provider:
    return Provider(base_url=server.url, api_key="sk-test-SECRET", url_policy=server.policy)


pytestmark = pytest.mark.anyio


async def test_buffered_request_goes_through_codec_and_provider(serve: Serve) -> None:
    body = msgspec.json.encode(ModelResponse(parts=[TextPart("hi")], finish_reason="stop"))
    server = serve(json_reply(msgspec.json.decode(body)))
    model = _Model(_provider(server))
    call = msgspec.structs.replace(CALL, settings=ModelSettings(extra_headers={"X-Extra": "1"}))
    response = await model.request(call)
    assert (response.text, response.model_name, response.provider_name) == ("hi", "m1", "ferrule-test")
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/generate")
    assert (sent.headers["x-format"], sent.headers["x-request"], sent.headers["x-extra"]) == (
        "test",
        "req-1",
        "1",
    )
    assert sent.headers["authorization"] == "Bearer sk-test-SECRET"
    assert msgspec.json.decode(sent.body)["stream"] is False
    assert model.provider_name == "provider"
    assert model.redactor is model.provider.redactor


async def test_stream_yields_the_decoder_events_with_params(serve: Serve) -> None:
    server = serve(sse_reply(STREAM))
    events = [event async for event in _Model(_provider(server)).stream(CALL)]
    assert check_stream(events).text == "Hello"
    (sent,) = server.requests
    assert sent.path == "/stream?alt=sse"
    assert sent.headers["accept"] == "text/event-stream"
    assert msgspec.json.decode(sent.body)["stream"] is True


async def test_stream_done_stops_reading_and_finishes(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        conn.chunk(b'data: "Hel"\n\nevent: done\ndata: {}\n\n')
        conn.hang()  # never ends the body: only stopping early finishes the stream
        return False

    server = serve(handler)
    model = _Model(_provider(server), stop_after=2)
    events = [event async for event in model.stream(CALL)]
    assert check_stream(events).text == "Hel"


async def _drain(model: CodecModel[Provider], seen: list[ModelStreamEvent]) -> None:
    async for event in model.stream(CALL):
        seen.append(event)


async def test_check_response_refuses_buffered_and_streamed(serve: Serve) -> None:
    server = serve(sse_reply(STREAM))
    seen: list[ModelStreamEvent] = []
    with pytest.raises(ContentFilterError):
        await _drain(_Model(_provider(server), refuse=True), seen)
    assert [type(e) for e in seen] == [PartStartEvent, PartDeltaEvent, PartDeltaEvent, PartEndEvent]
    body = msgspec.json.encode(ModelResponse(parts=[TextPart("hi")]))
    buffered = serve(json_reply(msgspec.json.decode(body)))
    with pytest.raises(ContentFilterError):
        await _Model(_provider(buffered), refuse=True).request(CALL)


async def test_a_read_s_events_come_whole_and_a_failure_keeps_what_preceded_it(serve: Serve) -> None:
    # One write: every event arrives in one read, which `stream_batches` hands on as one list.
    assert (await _flat(_Model(_provider(serve(sse_reply(STREAM)))))) == (
        [PartStartEvent, PartDeltaEvent, PartDeltaEvent, PartEndEvent, ResponseCompleted],
        None,
    )
    # The third event of the read is not JSON: the events before it are delivered, then the error,
    # both one by one and a list at a time.
    broken = b'data: "Hel"\n\ndata: "lo"\n\ndata: {not json\n\ndata: "late"\n\n'
    seen: list[ModelStreamEvent] = []
    with pytest.raises(ResponseDecodeError):
        await _drain(_Model(_provider(serve(sse_reply(broken)))), seen)
    assert [type(e) for e in seen] == [PartStartEvent, PartDeltaEvent, PartDeltaEvent]
    kinds, error = await _flat(_Model(_provider(serve(sse_reply(broken)))))
    assert kinds == [PartStartEvent, PartDeltaEvent, PartDeltaEvent]
    assert isinstance(error, ResponseDecodeError)
    # A refused answer: its part-end events first, as one by one.
    kinds, error = await _flat(_Model(_provider(serve(sse_reply(STREAM))), refuse=True))
    assert kinds == [PartStartEvent, PartDeltaEvent, PartDeltaEvent, PartEndEvent]
    assert isinstance(error, ContentFilterError)


async def _flat(model: _Model) -> tuple[list[type], Exception | None]:
    kinds: list[type] = []
    try:
        async for batch in model.stream_batches(CALL):
            assert batch
            kinds.extend(type(e) for e in batch)
    except (ResponseDecodeError, ContentFilterError) as exc:
        return kinds, exc
    return kinds, None


# -- the conformance helpers ------------------------------------------------------------------------


def _events(*events: ModelStreamEvent) -> list[ModelStreamEvent]:
    return list(events)


DONE = ResponseCompleted(ModelResponse(parts=[TextPart("ab")]))


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (_events(), "exactly one ResponseCompleted"),
        (_events(DONE, DONE), "exactly one ResponseCompleted"),
        (_events(PartStartEvent(1, TextPart("")), DONE), "the next index is 0"),
        (_events(PartDeltaEvent(0, TextPartDelta("a")), DONE), "never started"),
        (
            _events(
                PartStartEvent(0, TextPart("")),
                PartEndEvent(0, TextPart("ab")),
                PartDeltaEvent(0, TextPartDelta("a")),
                DONE,
            ),
            "after its end",
        ),
        (_events(PartStartEvent(0, TextPart("")), DONE), "never ended"),
        (_events(PartStartEvent(0, TextPart("")), PartEndEvent(0, TextPart("a")), DONE), "differs"),
        (
            _events(
                PartStartEvent(0, TextPart("")),
                PartEndEvent(0, TextPart("ab")),
                ResponseCompleted(ModelResponse(parts=[])),
            ),
            "the completed response has 0",
        ),
    ],
)
def test_check_stream_names_each_broken_invariant(events: list[ModelStreamEvent], message: str) -> None:
    with pytest.raises(ConformanceError, match=message):
        check_stream(events)


def test_check_stream_accepts_a_well_formed_stream() -> None:
    events = feed_sse(TestStreamDecoder(), STREAM, chunk_sizes=(1,))
    assert check_stream(events).text == "Hello"
    with pytest.raises(ValueError, match="positive"):
        feed_sse(TestStreamDecoder(), STREAM, chunk_sizes=(0,))


def test_assert_same_response_ignores_only_what_it_is_told() -> None:
    first = ModelResponse(parts=[ToolCallPart("f", {}, "call_1")])
    second = ModelResponse(parts=[ToolCallPart("f", {}, "call_2")])
    assert_same_response(first, second, ignore=("timestamp", "tool_call_id"))
    with pytest.raises(ConformanceError, match="differ"):
        assert_same_response(first, second)


def test_completed_response_needs_a_completed_event() -> None:
    with pytest.raises(ResponseDecodeError):
        completed_response([PartStartEvent(0, TextPart(""))])


CASSETTE = """\
interactions:
- request:
    method: POST
    uri: https://api.example.test/v1/generate
    body: '{"stream": true}'
  response:
    status: {code: 200, message: OK}
    headers:
      content-type: [text/event-stream]
    body: {string: "data: \\"Hel\\"\\n\\ndata: \\"lo\\"\\n\\nevent: done\\ndata: {}\\n\\n"}
- request:
    method: POST
    uri: https://api.example.test/v1/generate
    parsed_body: {stream: false}
  response:
    status: {code: 200, message: OK}
    headers:
      content-type: [application/json]
    body: {string: '{"parts": [{"part_kind": "text", "content": "hi"}]}'}
"""


def test_a_cassette_replays_through_a_codec(tmp_path: Path) -> None:
    path = tmp_path / "test_generate.yaml"
    path.write_text(CASSETTE)
    streamed, buffered = load_cassette(path)
    assert isinstance(streamed, Interaction)
    assert (streamed.is_stream, buffered.is_stream) == (True, False)
    assert (buffered.request_json, streamed.request_text) == ({"stream": False}, '{"stream": true}')
    assert streamed.id == f"{tmp_path.name}/test_generate#0"
    assert replay(FerruleTestCodec(), streamed).text == "Hello"
    assert replay(FerruleTestCodec(), buffered).text == "hi"


# -- the batch path ----------------------------------------------------------------------------------


class _BatchDecoder(TestStreamDecoder):
    """The test decoder with a `feed_many` that records each batch, then feeds its events one by one."""

    def __init__(self, *, model_name: str | None = None, skew: bool = False) -> None:
        super().__init__(model_name=model_name)
        self.batches: list[int] = []
        self.fed = 0
        self.skew = skew

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        self.fed += 1
        return super().feed(event)

    def feed_many(self, events: Sequence[SseEvent], out: list[ModelStreamEvent]) -> None:
        self.batches.append(len(events))
        for event in events:
            out += self.feed(event)
            if self.skew:
                out += self._builder.text("!")  # not what `feed` gives: conformance must say so


class _BatchCodec(FerruleTestCodec):
    def __init__(self, *, skew: bool = False) -> None:
        super().__init__()
        self.skew = skew
        self.decoders: list[_BatchDecoder] = []

    def stream_decoder(self) -> _BatchDecoder:
        decoder = _BatchDecoder(model_name=self.model_name, skew=self.skew)
        self.decoders.append(decoder)
        return decoder


class _BatchModel(CodecModel[Provider]):
    def __init__(self, provider: Provider) -> None:
        super().__init__("m1", provider=provider)
        self.batch_codec = _BatchCodec()
        self.asked: int = 0

    @property
    def profile(self) -> ModelProfile:
        return ModelProfile()

    def codec(self) -> _BatchCodec:
        return self.batch_codec

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        return ("/stream", None) if stream else ("/generate", None)


class _StoppingBatchModel(_BatchModel):
    def _stream_done(self, decoder: StreamDecoder) -> bool:
        self.asked += 1
        return False


async def test_a_batch_decoder_gets_each_read_at_once_unless_the_model_asks_to_stop(serve: Serve) -> None:
    model = _BatchModel(_provider(serve(sse_reply(STREAM))))
    events = [event async for event in model.stream(CALL)]
    assert check_stream(events).text == "Hello"
    (decoder,) = model.batch_codec.decoders
    # One write: the events come in fewer reads than events (the first may be read on its own).
    assert sum(decoder.batches) == decoder.fed == 3
    assert len(decoder.batches) < 3
    # A model that asks after each event whether to stop is fed one event at a time.
    stopping = _StoppingBatchModel(_provider(serve(sse_reply(STREAM))))
    events = [event async for event in stopping.stream(CALL)]
    assert check_stream(events).text == "Hello"
    (decoder,) = stopping.batch_codec.decoders
    assert (decoder.batches, decoder.fed, stopping.asked) == ([], 3, 3)


async def test_a_batch_decoder_failing_mid_read_delivers_what_preceded_it(serve: Serve) -> None:
    broken = b'data: "Hel"\n\ndata: "lo"\n\ndata: {not json\n\ndata: "late"\n\n'
    seen: list[ModelStreamEvent] = []
    model = _BatchModel(_provider(serve(sse_reply(broken))))
    with pytest.raises(ResponseDecodeError):
        await _drain(model, seen)
    assert [type(e) for e in seen] == [PartStartEvent, PartDeltaEvent, PartDeltaEvent]
    assert sum(model.batch_codec.decoders[0].batches) == 4


def test_feed_sse_batched_gives_each_chunk_s_events_to_feed_many() -> None:
    decoder = _BatchDecoder()
    events = feed_sse(decoder, STREAM, chunk_sizes=[13], batched=True)
    assert check_stream(events).text == "Hello"
    assert decoder.fed == sum(decoder.batches) == 3  # no call for a chunk that completes no event
    assert all(decoder.batches)
    one_by_one = _BatchDecoder()
    assert check_stream(feed_sse(one_by_one, STREAM)).text == "Hello"
    assert (one_by_one.batches, one_by_one.fed) == ([], 3)


def test_replay_checks_a_batch_decoder_against_feed(tmp_path: Path) -> None:
    path = tmp_path / "test_generate.yaml"
    path.write_text(CASSETTE)
    streamed, _ = load_cassette(path)
    codec = _BatchCodec()
    assert replay(codec, streamed).text == "Hello"
    # Fed one by one whole and split, then through `feed_many` whole and split.
    assert [sum(d.batches) for d in codec.decoders if d.fed] == [0, 0, 3, 3]
    assert next(d.batches for d in codec.decoders if d.batches) == [3]
    with pytest.raises(ConformanceError, match="feed_many"):
        replay(_BatchCodec(skew=True), streamed)


class _PerReadModel(_BatchModel):
    _stream_done_per_read = True

    def _stream_done(self, decoder: StreamDecoder) -> bool:
        self.asked += 1
        return isinstance(decoder, _BatchDecoder) and decoder.fed == 3


async def test_a_model_may_ask_to_stop_once_a_read(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        conn.chunk(STREAM)
        conn.hang()  # never ends the body: only stopping early finishes the stream
        return False

    model = _PerReadModel(_provider(serve(handler)))
    events = [event async for event in model.stream(CALL)]
    assert check_stream(events).text == "Hello"
    (decoder,) = model.batch_codec.decoders
    assert sum(decoder.batches) == decoder.fed == 3
    assert model.asked == len(decoder.batches)  # once a read, not once an event
