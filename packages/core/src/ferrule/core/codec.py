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
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

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


class WireCache:
    """The wire form of history messages, encoded once and reused by later requests of one model.

    A codec asks [`fragment`][ferrule.core.codec.WireCache.fragment] for each message of a request;
    the cache answers the JSON it encoded for that same message object the last time, provided
    the message still encodes to the same canonical bytes (a msgpack fingerprint of the whole
    message, checked on every request, so a message changed in place is encoded again) and `view`
    (what else the encoding depends on: the codec's dialect, provider and model) is equal. The
    cache holds the messages it answers for, so an object ID is never reused for another message
    while its entry lives. It is bounded by `max_bytes` (fingerprints and fragments together):
    going over clears it. The canonical history is only read, never changed.
    """

    __slots__ = ("_entries", "_size", "max_bytes")

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        """The most bytes of fingerprints and fragments kept before the cache is cleared."""
        self._entries: dict[int, tuple[object, object, bytes, bytes]] = {}
        self._size = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry."""
        self._entries = {}
        self._size = 0

    def fragment(self, message: _MessageT, view: object, encode: Callable[[_MessageT], bytes], /) -> bytes:
        """The encoded wire fragment of `message` under `view`: cached, or `encode(message)` (then cached).

        A message that cannot be fingerprinted (content msgpack cannot encode) is encoded every time.
        """
        try:
            fingerprint = _fingerprint(message)
        except (TypeError, ValueError, OverflowError):
            return encode(message)
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message and entry[2] == fingerprint and entry[1] == view:
            return entry[3]
        fragment = encode(message)
        if entry is not None:
            self._size -= len(entry[2]) + len(entry[3])
        size = len(fingerprint) + len(fragment)
        if self._size + size > self.max_bytes:
            self.clear()
        if size <= self.max_bytes:
            self._entries[id(message)] = (message, view, fingerprint, fragment)
            self._size += size
        return fragment


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
        call = await self._prepare(call)
        codec = self.codec()
        wire = codec.encode(call, stream=True)
        path, options = self._options(call, wire, stream=True)
        decoder = codec.stream_decoder()
        async with self._provider.stream_sse("POST", path, content=wire.body, **options) as events:
            async for event in events:
                for out in decoder.feed(event):
                    yield out
                if self._stream_done(decoder):
                    break
        for out in decoder.finish():
            if isinstance(out, ResponseCompleted):
                self._check_response(out.response)
            yield out
