"""The Anthropic Messages API wire codec: pure functions, no I/O.

* [`encode_request`][ferrule.providers.anthropic.codec.encode_request]: a
  [`ModelCall`][ferrule.core.model.ModelCall] → request body bytes (msgspec) and the beta features
  it needs.
* [`decode_response`][ferrule.providers.anthropic.codec.decode_response]: a buffered JSON body →
  [`ModelResponse`][ferrule.core.messages.ModelResponse].
* [`StreamDecoder`][ferrule.providers.anthropic.codec.StreamDecoder]: server-sent events → ferrule
  stream events and the complete response, incrementally;
  [`decode_stream`][ferrule.providers.anthropic.codec.decode_stream] runs it over a whole SSE body.

Malformed input raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]; an API
error body or `error` event raises the mapped [`ProviderError`][ferrule.core.errors.ProviderError]
subclass (`overloaded_error` → `ServerError`, `rate_limit_error` → `RateLimitError`, ...).
"""

from __future__ import annotations

from ferrule.core.model import ModelCall

from ._decode import (
    ERROR_CATEGORIES,
    FINISH_REASONS,
    StreamDecoder,
    decode_response,
    decode_stream,
    error_from_body,
    finish_reason,
    map_usage,
)
from ._encode import (
    BETA_CODE_EXECUTION,
    BETA_COMPACTION,
    BETA_FILES_API,
    BETA_INTERLEAVED_THINKING,
    BETA_MCP_CLIENT,
    BETA_WEB_FETCH,
    DEFAULT_THINKING_BUDGET,
    EFFORT_BUDGETS,
    MAX_CACHE_POINTS,
    MIN_THINKING_BUDGET,
    OWNED_BODY_KEYS,
    PROVIDER_NAME,
    WIRE_NAME_DETAIL,
    EncodedRequest,
)
from ._encode import encode_request as _encode_request
from ._schema import strict_schema
from .profiles import AnthropicProfile, anthropic_profile

__all__ = [
    "BETA_CODE_EXECUTION",
    "BETA_COMPACTION",
    "BETA_FILES_API",
    "BETA_INTERLEAVED_THINKING",
    "BETA_MCP_CLIENT",
    "BETA_WEB_FETCH",
    "DEFAULT_THINKING_BUDGET",
    "EFFORT_BUDGETS",
    "ERROR_CATEGORIES",
    "FINISH_REASONS",
    "MAX_CACHE_POINTS",
    "MIN_THINKING_BUDGET",
    "OWNED_BODY_KEYS",
    "PROVIDER_NAME",
    "WIRE_NAME_DETAIL",
    "EncodedRequest",
    "StreamDecoder",
    "decode_response",
    "decode_stream",
    "encode_request",
    "error_from_body",
    "finish_reason",
    "map_usage",
    "strict_schema",
]


def encode_request(
    call: ModelCall,
    *,
    model_name: str,
    profile: AnthropicProfile | None = None,
    stream: bool = False,
) -> EncodedRequest:
    """Encode `call` as a Messages API request for `model_name`.

    `profile` defaults to the model family's
    [`anthropic_profile`][ferrule.providers.anthropic.profiles.anthropic_profile]. Raises
    `UserError` for anything the API would reject that is visible before sending (the profile check
    of the call itself is the model's job: see `Model.check`).
    """
    return _encode_request(
        call, model_name=model_name, profile=profile or anthropic_profile(model_name), stream=stream
    )
