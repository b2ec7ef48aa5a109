"""The Gemini GenerateContent wire codec: pure functions, tested without sockets.

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

from ._decode import (
    FINISH_REASONS,
    StreamDecoder,
    category_for_status,
    decode_response,
    decode_stream,
    error_from_status,
    map_finish_reason,
    usage_from_metadata,
)
from ._encode import DUMMY_THOUGHT_SIGNATURE, EXTRA_BODY_TAG, EncodeOptions, build_request, encode_request
from ._schema import SchemaDialect, to_json_schema, to_openapi_schema

__all__ = [
    "DUMMY_THOUGHT_SIGNATURE",
    "EXTRA_BODY_TAG",
    "FINISH_REASONS",
    "EncodeOptions",
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
