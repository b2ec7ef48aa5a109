"""The `ferrule-test` codec: a minimal wire format for testing decoders and `tools/decode.py`.

[`FerruleTestCodec`][ferrule.core._test_codec.FerruleTestCodec] is a
[`Codec`][ferrule.core.codec.Codec] like every provider's (malformed input raises
[`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError], never an empty success), and
`decode_response` / `decode_stream` decode whole bodies:

* a request is the `ModelCall` as JSON, with a `stream` flag;
* a buffered body is one ferrule `ModelResponse` as JSON;
* a stream is server-sent events whose `data` is a JSON string of text to append, ended by one
  `event: done` whose data is a JSON object with the response's `finish_reason`, `usage`,
  `model_name` and `provider_response_id` (all optional):

```text
data: "Hel"

data: "lo"

event: done
data: {"finish_reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 2}}
```
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

from . import bounded_json
from . import codec
from .codec import WireRequest
from .errors import ResponseDecodeError
from .messages import FinishReason
from .messages import ModelResponse
from .model import ModelCall
from .model import ModelStreamEvent
from .model import ResponseCompleted
from .sse import SseEvent
from .streaming import ResponseBuilder
from .usage import RequestUsage

__all__ = ["PROVIDER_NAME", "FerruleTestCodec", "TestStreamDecoder", "decode_response", "decode_stream"]

T = TypeVar("T")

PROVIDER_NAME = "ferrule-test"
"""The provider name the codec reports."""


class _Done(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    finish_reason: FinishReason | None = None
    usage: RequestUsage = msgspec.field(default_factory=RequestUsage)
    model_name: str | None = None
    provider_response_id: str | None = None


def _error(message: str) -> ResponseDecodeError:
    return ResponseDecodeError(message, provider_name=PROVIDER_NAME)


def decode_response(body: bytes, *, model_name: str | None = None) -> ModelResponse:
    """Decode a buffered body: one ferrule `ModelResponse` as JSON."""
    try:
        response = bounded_json.decode(body, type=ModelResponse, limits=bounded_json.PROVIDER_RESPONSE)
    except bounded_json.JsonError as exc:
        raise _error(f"invalid response body: {exc}") from exc
    if response.provider_name is None:
        response.provider_name = PROVIDER_NAME
    if response.model_name is None:
        response.model_name = model_name
    return response


def decode_stream(data: bytes, *, model_name: str | None = None) -> ModelResponse:
    """Decode the raw SSE text of a streamed response into the complete response."""
    return codec.decode_stream(TestStreamDecoder(model_name=model_name), data)


class TestStreamDecoder:
    """The stream decoder of the `ferrule-test` format: text deltas, then one `done` event."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self, *, model_name: str | None = None) -> None:
        self.model_name = model_name
        """The model recorded on the response when the `done` event names none."""
        self._builder = ResponseBuilder()
        self._done: _Done | None = None

    def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
        """Decode one event: a `message` appends text, `done` ends the stream."""
        if self._done is not None:
            raise _error(f"event {event.event!r} after the final `done` event")
        if event.event == "message":
            return self._builder.text(_decode(event, str))
        if event.event == "done":
            self._done = _decode(event, _Done)
            return []
        raise _error(f"unknown event type {event.event!r}")

    def finish(self) -> list[ModelStreamEvent]:
        """The closing part-end events and the `ResponseCompleted`."""
        done = self._done
        if done is None:
            raise _error("stream ended before its final `done` event")
        events = self._builder.finish()
        response = ModelResponse(
            parts=self._builder.parts,
            usage=done.usage,
            model_name=done.model_name or self.model_name,
            provider_name=PROVIDER_NAME,
            provider_response_id=done.provider_response_id,
            finish_reason=done.finish_reason,
        )
        events.append(ResponseCompleted(response))
        return events


class FerruleTestCodec:
    """The `ferrule-test` wire format as a [`Codec`][ferrule.core.codec.Codec]."""

    def __init__(self, *, model_name: str | None = None) -> None:
        self.model_name = model_name
        """The model recorded on responses that name none."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        """The call as JSON, with `stream`."""
        return WireRequest(body=msgspec.json.encode({"call": call, "stream": stream}))

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered body."""
        return decode_response(body, model_name=self.model_name)

    def stream_decoder(self) -> TestStreamDecoder:
        """A fresh stream decoder."""
        return TestStreamDecoder(model_name=self.model_name)


def _decode(event: SseEvent, tp: type[T]) -> T:
    try:
        return bounded_json.decode(event.data, type=tp, limits=bounded_json.STREAM_EVENT)
    except bounded_json.JsonError as exc:
        raise _error(f"invalid {event.event!r} event data: {exc}") from exc
