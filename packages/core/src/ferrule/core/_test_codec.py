"""The `ferrule-test` codec: a minimal wire format for testing decoders and `tools/decode.py`.

It follows the codec contract every provider module implements (`decode_response` for a buffered
body, `decode_stream` for the raw SSE text of a streamed one; malformed input raises
[`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError], never an empty success):

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
from .errors import ResponseDecodeError
from .messages import FinishReason, ModelResponse
from .sse import SseEvent, SseParser
from .streaming import ResponseBuilder
from .usage import RequestUsage

__all__ = ["PROVIDER_NAME", "decode_response", "decode_stream"]

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
    parser = SseParser()
    builder = ResponseBuilder()
    done: _Done | None = None
    for event in [*parser.feed(data), *parser.close()]:
        if done is not None:
            raise _error(f"event {event.event!r} after the final `done` event")
        if event.event == "message":
            builder.text(_decode(event, str))
        elif event.event == "done":
            done = _decode(event, _Done)
        else:
            raise _error(f"unknown event type {event.event!r}")
    if done is None:
        raise _error("stream ended before its final `done` event")
    builder.finish()
    return ModelResponse(
        parts=builder.parts,
        usage=done.usage,
        model_name=done.model_name or model_name,
        provider_name=PROVIDER_NAME,
        provider_response_id=done.provider_response_id,
        finish_reason=done.finish_reason,
    )


def _decode(event: SseEvent, tp: type[T]) -> T:
    try:
        return bounded_json.decode(event.data, type=tp, limits=bounded_json.STREAM_EVENT)
    except bounded_json.JsonError as exc:
        raise _error(f"invalid {event.event!r} event data: {exc}") from exc
