"""The codec contract every provider package implements, and the model client built on it.

A codec is a provider's wire format and nothing else: pure, no sockets, no credentials, so it can be
tested on recorded traffic (`ferrule.core.conformance`) and used by `tools/decode.py`. It has three
operations:

* [`encode`][ferrule.core.codec.Codec.encode]: a [`ModelCall`][ferrule.core.model.ModelCall] → a
  [`WireRequest`][ferrule.core.codec.WireRequest], the request body and the headers the format
  needs (a beta flag, a correlation ID);
* [`decode`][ferrule.core.codec.Codec.decode]: a buffered response body →
  [`ModelResponse`][ferrule.core.messages.ModelResponse];
* [`stream_decoder`][ferrule.core.codec.Codec.stream_decoder]: a fresh
  [`StreamDecoder`][ferrule.core.codec.StreamDecoder] for one streamed response. Feed it every
  server-sent event with `feed`, then call `finish` once at the end of the body.

What every codec guarantees (and `ferrule.core.conformance` checks):

* `finish` returns the remaining events, the last of them exactly one
  [`ResponseCompleted`][ferrule.core.model.ResponseCompleted]; a stream that ended before its
  protocol's closing event raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]
  instead, never an empty success;
* malformed input raises `ResponseDecodeError`; an error the provider reports in a body or a
  stream event raises its mapped [`ProviderError`][ferrule.core.errors.ProviderError] subclass;
* a stream decodes to the same response as the buffered body of the same answer.

[`CodecModel`][ferrule.core.codec.CodecModel] is the model client every HTTP provider builds on: a
codec for the wire format, a [`Provider`][ferrule.core.provider.Provider] for the connection.
"""

from __future__ import annotations

import abc
import operator
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import msgspec

from .errors import ResponseDecodeError
from .model import Model, ModelCall, ModelStreamEvent, ResponseCompleted
from .settings import ModelSettings, validate_request_headers
from .sse import SseEvent, SseParser

if TYPE_CHECKING:
    from .messages import ModelResponse
    from .provider import Provider, QueryParams, RequestOptions
    from .redaction import Redactor

__all__ = [
    "Codec",
    "CodecModel",
    "StreamDecoder",
    "WireCache",
    "WireRequest",
    "completed_response",
    "decode_stream",
]


class WireRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request as a codec encoded it: the body, and the headers its wire format needs."""

    body: bytes
    """The request body (JSON for every first-party codec)."""
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    """Headers the format adds to this request (lower-case names); the provider adds its own."""


class StreamDecoder(Protocol):
    """Turns the server-sent events of one streamed response into ferrule stream events."""

    def feed(self, event: SseEvent, /) -> Iterable[ModelStreamEvent]:
        """Decode one server-sent event; returns the stream events it produces (possibly none)."""
        ...

    def finish(self) -> Sequence[ModelStreamEvent]:
        """End of the body: the remaining events, the last one the `ResponseCompleted`.

        Raises `ResponseDecodeError` when the stream ended before it was complete.
        """
        ...


class Codec(Protocol):
    """A provider's wire format: requests out, responses and stream events in (see the module docs)."""

    def encode(self, call: ModelCall, /, *, stream: bool = False) -> WireRequest:
        """The request for `call`; `stream` asks for a streamed response."""
        ...

    def decode(self, body: bytes, /) -> ModelResponse:
        """Decode a buffered response body."""
        ...

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...


def completed_response(events: Sequence[ModelStreamEvent]) -> ModelResponse:
    """The response of the `ResponseCompleted` that ends `events` (what `StreamDecoder.finish` returned)."""
    last = events[-1] if events else None
    if not isinstance(last, ResponseCompleted):
        raise ResponseDecodeError("the stream decoder finished without a completed response")
    return last.response


def decode_stream(decoder: StreamDecoder, data: bytes) -> ModelResponse:
    """Decode the whole SSE body of a streamed response through `decoder` (a fresh one)."""
    parser = SseParser()
    for event in parser.feed(data):
        decoder.feed(event)
    for event in parser.close():
        decoder.feed(event)
    return completed_response(decoder.finish())


_fingerprint = msgspec.msgpack.Encoder().encode
_MessageT = TypeVar("_MessageT")


def _array_header(length: int) -> int:
    """The size of msgpack's array header for `length` items (fixarray, array 16, array 32)."""
    return 1 if length < 16 else 3 if length < 65536 else 5


class _Encoded:
    """One history as last encoded: its messages (held, so no ID is reused), their msgpack
    fingerprint as one array, and the joined wire fragments, with where each message ends in both."""

    __slots__ = ("fingerprint", "fingerprint_ends", "header", "messages", "wire", "wire_ends")

    def __init__(
        self,
        messages: list[Any],
        fingerprint: bytes,
        header: int,
        fingerprint_ends: list[int],
        wire: bytes,
        wire_ends: list[int],
    ) -> None:
        self.messages = messages
        self.fingerprint = fingerprint
        self.header = header
        self.fingerprint_ends = fingerprint_ends
        self.wire = wire
        self.wire_ends = wire_ends

    @property
    def size(self) -> int:
        return len(self.fingerprint) + len(self.wire)

    def unchanged(self, messages: Sequence[Any], fingerprint: bytes, header: int) -> int:
        """How many leading `messages` are this history's objects and still encode to the same bytes."""
        count = min(len(messages), len(self.messages))
        same = self.messages
        # In C: the common case is a history that grew, or one whose last message is a new object.
        identical = list(map(operator.is_, messages, same))  # `map` stops at the shorter: `count` items
        if False in identical:
            count = identical.index(False)
        if count == 0:
            return 0
        ends = self.fingerprint_ends
        old = memoryview(self.fingerprint)
        if fingerprint.startswith(old[self.header : self.header + ends[count - 1]], header):
            return count
        # Something changed in place: the longest prefix whose bytes are equal (msgpack items are
        # self-delimiting, so equal bytes up to a message's end mean equal messages up to it).
        low, high = 0, count - 1
        while low < high:
            mid = (low + high + 1) // 2
            if fingerprint.startswith(old[self.header : self.header + ends[mid - 1]], header):
                low = mid
            else:
                high = mid - 1
        return low


class WireCache:
    """The wire form of history messages, encoded once and reused by later requests of one model.

    A codec hands [`encode`][ferrule.core.codec.WireCache.encode] the history of a request; the
    cache finds the history it encoded last that starts with the same message object (under the
    same `view`: what else the encoding depends on, such as the codec's dialect, provider and
    model) and reuses its wire bytes for the longest prefix of messages that are the same objects
    AND still encode to the same canonical bytes: the whole history is fingerprinted with msgpack
    on every request (one C call), so a message changed in place, anywhere in it, is encoded
    again. The messages after that prefix are encoded with the codec's function. The cache holds
    the messages it answers for, so an object ID is never reused for another message while its
    entry lives; it keeps at most `max_histories` histories and `max_bytes` of fingerprints and
    wire bytes, forgetting the least recently used first. The canonical history is only read.

    One limit of the fingerprint: msgpack writes a naive datetime, a date, a time, a UUID or a
    Decimal as the string of its text, so a field of a held message changed in place from one of
    those to that same text as a `str` (or back) is not seen as a change.
    """

    __slots__ = ("_histories", "_size", "max_bytes", "max_histories")

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024, max_histories: int = 64) -> None:
        self.max_bytes = max_bytes
        """The most bytes of fingerprints and wire fragments kept."""
        self.max_histories = max_histories
        """The most histories kept (one per conversation the model is serving)."""
        self._histories: dict[tuple[int, object], _Encoded] = {}
        self._size = 0

    def __len__(self) -> int:
        """How many messages are held, over every history kept."""
        return sum(len(h.messages) for h in self._histories.values())

    def clear(self) -> None:
        """Forget every history."""
        self._histories = {}
        self._size = 0

    def encode(
        self, messages: Sequence[_MessageT], view: Hashable, encode: Callable[[_MessageT], bytes], /
    ) -> bytes:
        """The wire fragments of `messages` joined with commas (the empty ones left out).

        `encode(message)` gives one message's fragment: JSON items without the enclosing brackets,
        possibly none (`b""`). A history that cannot be fingerprinted (content msgpack cannot
        encode) is encoded in full, every time.
        """
        if not messages:
            return b""
        try:
            fingerprint = _fingerprint(messages)
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
            return b",".join([f for f in map(encode, messages) if f])
        header = _array_header(len(messages))
        key = (id(messages[0]), view)
        previous = self._histories.pop(key, None)
        kept = 0
        if previous is not None:
            self._size -= previous.size
            kept = previous.unchanged(messages, fingerprint, header)
        if kept:
            assert previous is not None
            fingerprint_ends = previous.fingerprint_ends[:kept]
            wire_ends = previous.wire_ends[:kept]
            end = wire_ends[-1]
            # A view, not a slice: the kept prefix is copied once, by the join below.
            pieces: list[bytes | memoryview] = [memoryview(previous.wire)[:end]] if end else []
            position = fingerprint_ends[-1]
        else:
            fingerprint_ends, wire_ends, pieces, end, position = [], [], [], 0, 0
        for message in messages[kept:]:
            position += len(_fingerprint(message))
            fingerprint_ends.append(position)
            fragment = encode(message)
            if fragment:
                end += len(fragment) + (1 if pieces else 0)
                pieces.append(fragment)
            wire_ends.append(end)
        wire = b",".join(pieces)
        if position + header == len(fingerprint):
            self._keep(key, _Encoded(list(messages), fingerprint, header, fingerprint_ends, wire, wire_ends))
        return wire

    def _keep(self, key: tuple[int, object], encoded: _Encoded) -> None:
        size = encoded.size
        if size > self.max_bytes:
            return
        histories = self._histories
        while histories and (self._size + size > self.max_bytes or len(histories) >= self.max_histories):
            oldest = next(iter(histories))
            self._size -= histories.pop(oldest).size
        histories[key] = encoded
        self._size += size


_ProviderT = TypeVar("_ProviderT", bound="Provider")


class CodecModel(Model, Generic[_ProviderT]):
    """A model client made of a [`Codec`][ferrule.core.codec.Codec] and a provider.

    A subclass gives `profile`, [`codec`][ferrule.core.codec.CodecModel.codec] and `_endpoint`; this
    class sends the encoded request through the provider (buffered or as server-sent events) with
    the call's deadline, timeout, error-body capture and headers, and decodes the answer. Hooks:
    `_prepare` (rewrite the call before encoding, e.g. download URL content), `_headers`,
    `_check_response` (refuse a decoded answer) and `_stream_done` (stop reading a stream early).
    Errors leaving `request` and `stream` are scrubbed with the provider's redactor.
    """

    def __init__(
        self, model_name: str, *, provider: _ProviderT, settings: ModelSettings | None = None
    ) -> None:
        self._model_name = model_name
        self._provider = provider
        self.settings = settings
        self._wire_cache: WireCache | None = None

    @property
    def wire_cache(self) -> WireCache:
        """The encoded history messages this model's codecs reuse across requests (see `WireCache`)."""
        cache = self._wire_cache
        if cache is None:
            cache = self._wire_cache = WireCache()
        return cache

    @property
    def model_name(self) -> str:
        """The model name sent to the provider."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """The provider's name, e.g. `"openai"`."""
        return self._provider.name

    @property
    def provider(self) -> _ProviderT:
        """The provider this model sends its requests through."""
        return self._provider

    @property
    def redactor(self) -> Redactor:
        """The provider's redactor: every error leaving `request` and `stream` is scrubbed with it."""
        return self._provider.redactor

    @abc.abstractmethod
    def codec(self) -> Codec:
        """The codec of this model's next request (built from its current settings)."""

    @abc.abstractmethod
    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        """The path (relative to the provider's root) and query parameters of a buffered or streamed request."""

    async def _prepare(self, call: ModelCall) -> ModelCall:
        """The call as it is encoded; by default `call` itself."""
        return call

    def _headers(self, call: ModelCall, wire: WireRequest) -> dict[str, str]:
        """The headers of one request: the call's `extra_headers` (checked), then the codec's."""
        headers = validate_request_headers(call.settings.extra_headers or {})
        headers.update(wire.headers)
        return headers

    def _check_response(self, response: ModelResponse) -> None:
        """Raise for a decoded answer the client refuses to return; by default nothing is refused."""

    def _stream_done(self, decoder: StreamDecoder) -> bool:
        """Whether to stop reading the stream after the last event; by default it is read to its end.

        Reading to the end lets the connection go back to the pool.
        """
        del decoder
        return False

    def _options(self, call: ModelCall, wire: WireRequest, *, stream: bool) -> tuple[str, RequestOptions]:
        path, params = self._endpoint(stream=stream)
        options = self._provider.call_options(call, self._model_name)
        options["headers"] = self._headers(call, wire)
        options["params"] = params
        return path, options

    async def _send(self, call: ModelCall, codec: Codec, wire: WireRequest) -> ModelResponse:
        """The buffered exchange of one encoded request."""
        path, options = self._options(call, wire, stream=False)
        response = await self._provider.request("POST", path, content=wire.body, **options)
        decoded = codec.decode(response.content)
        self._check_response(decoded)
        return decoded

    async def _request(self, call: ModelCall) -> ModelResponse:
        call = await self._prepare(call)
        codec = self.codec()
        return await self._send(call, codec, codec.encode(call, stream=False))

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        async for batch in self._decoded(call):
            for event in batch:
                yield event

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        # A subclass with a `_stream` of its own is streamed through it, event by event.
        return self._decoded(call) if type(self)._stream is CodecModel[Any]._stream else None

    async def _decoded(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]]:
        """The stream's events, those each network read completes in one list (never empty).

        A decoder that fails on an event still delivers what the events before it gave, first.
        """
        call = await self._prepare(call)
        codec = self.codec()
        wire = codec.encode(call, stream=True)
        path, options = self._options(call, wire, stream=True)
        decoder = codec.stream_decoder()
        feed = decoder.feed
        # Most clients read to the end: no call per event to ask whether to stop.
        stop = None if type(self)._stream_done is CodecModel[Any]._stream_done else self._stream_done
        from .provider import sse_batches  # loaded with every provider; not at this module's import

        async with self._provider.stream_sse("POST", path, content=wire.body, **options) as events:
            batches = sse_batches(events)
            while batch := await batches():
                out: list[ModelStreamEvent] = []
                failure: Exception | None = None
                done = False
                try:
                    for event in batch:
                        out += feed(event)
                        if stop is not None and stop(decoder):
                            done = True
                            break
                except Exception as exc:
                    failure = exc
                if out:
                    yield out
                if failure is not None:
                    raise failure
                if done:
                    break
        out = []
        for event in decoder.finish():
            if isinstance(event, ResponseCompleted):
                if out:
                    yield out  # delivered before the answer is checked, as one by one
                    out = []
                self._check_response(event.response)
            out.append(event)
        if out:
            yield out
