"""The Gemini GenerateContent wire codec: pure functions, tested without sockets.

[`GoogleCodec`][ferrule.providers.google.codec.GoogleCodec] is the
[`Codec`][ferrule.core.codec.Codec] of one model, built on these:

* [`encode_request`][ferrule.providers.google.codec.encode_request] /
  [`build_request`][ferrule.providers.google.codec.build_request]: a neutral
  [`ModelCall`][ferrule.core.model.ModelCall] → the JSON body of `generateContent` and
  `streamGenerateContent`, given [`EncodeOptions`][ferrule.providers.google.codec.EncodeOptions].
* [`decode_response`][ferrule.providers.google.codec.decode_response]: a buffered body → a
  [`ModelResponse`][ferrule.core.messages.ModelResponse].
* [`StreamDecoder`][ferrule.providers.google.codec.StreamDecoder]: streamed chunks → neutral stream
  events and one final response; [`decode_stream`][ferrule.providers.google.codec.decode_stream]
  runs it over the raw SSE text of a whole stream (`tools/decode.py --api gemini`).

Malformed input raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]; a blocked
prompt or a filtered answer raises [`ContentFilterError`][ferrule.core.errors.ContentFilterError].
"""

from __future__ import annotations

from ferrule.core.codec import WireCache
from ferrule.core.codec import WireRequest
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelResponse
from ferrule.core.model import ModelCall

from ._decode import FINISH_REASONS
from ._decode import StreamDecoder
from ._decode import category_for_status
from ._decode import decode_response
from ._decode import decode_stream
from ._decode import error_from_status
from ._decode import map_finish_reason
from ._decode import usage_from_metadata
from ._encode import DUMMY_THOUGHT_SIGNATURE
from ._encode import EXTRA_BODY_TAG
from ._encode import EncodeOptions
from ._encode import build_request
from ._encode import encode_request
from ._schema import SchemaDialect
from ._schema import to_json_schema
from ._schema import to_openapi_schema

__all__ = [
    "DUMMY_THOUGHT_SIGNATURE",
    "EXTRA_BODY_TAG",
    "FINISH_REASONS",
    "EncodeOptions",
    "GoogleCodec",
    "SchemaDialect",
    "StreamDecoder",
    "build_request",
    "category_for_status",
    "decode_response",
    "decode_stream",
    "encode_request",
    "error_from_status",
    "map_finish_reason",
    "to_json_schema",
    "to_openapi_schema",
    "usage_from_metadata",
]


class GoogleCodec:
    """The GenerateContent wire format of one model: a [`Codec`][ferrule.core.codec.Codec].

    `options` say what the endpoint takes besides the call (the model builds them from its
    provider) and name the model and provider; decoding needs only the names. `provider_url` is
    recorded on decoded responses.
    The same body serves `:generateContent` and `:streamGenerateContent?alt=sse`.
    """

    __slots__ = ("model_name", "options", "provider_name", "provider_url", "wire_cache")

    def __init__(
        self,
        *,
        model_name: str | None = None,
        provider_name: str | None = None,
        provider_url: str | None = None,
        options: EncodeOptions | None = None,
        wire_cache: WireCache | None = None,
    ) -> None:
        if options is not None:
            if model_name not in (None, options.model_name) or provider_name not in (
                None,
                options.provider_name,
            ):
                raise UserError(
                    "GoogleCodec takes the model and provider names from options; pass them there"
                )
            model_name, provider_name = options.model_name, options.provider_name
        self.options = options
        """The encode options; `None` encodes with the defaults for `model_name`."""
        self.model_name = model_name
        """The model requests are for."""
        self.provider_name = provider_name or "google-gla"
        """The provider (`"google-gla"` or `"google-vertex"`), recorded on decoded responses."""
        self.provider_url = provider_url
        """The API root, recorded on decoded responses."""
        self.wire_cache = wire_cache
        """Where encoded history messages are kept for later requests (the model's); `None`: none."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> WireRequest:
        """The request body for `call` (identical for a buffered and a streamed request)."""
        del stream
        options = self.options
        if options is None:
            if self.model_name is None:
                raise UserError("GoogleCodec needs a model_name or options to encode a request")
            options = EncodeOptions(model_name=self.model_name, provider_name=self.provider_name)
        return WireRequest(body=encode_request(call, options, self.wire_cache))

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered response body."""
        return decode_response(
            body, model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        return StreamDecoder(
            model_name=self.model_name, provider_name=self.provider_name, provider_url=self.provider_url
        )
