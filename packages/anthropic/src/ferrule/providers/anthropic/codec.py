"""The Anthropic Messages API wire codec: pure functions, no I/O.

[`AnthropicCodec`][ferrule.providers.anthropic.codec.AnthropicCodec] is the
[`Codec`][ferrule.core.codec.Codec] of one model, built on these:

* [`encode_request`][ferrule.providers.anthropic.codec.encode_request]: a
  [`ModelCall`][ferrule.core.model.ModelCall] → request body bytes (msgspec) and the beta features
  it needs.
* [`decode_response`][ferrule.providers.anthropic.codec.decode_response]: a buffered JSON body →
  [`ModelResponse`][ferrule.core.messages.ModelResponse].
* [`StreamDecoder`][ferrule.providers.anthropic.codec.StreamDecoder]: server-sent events → ferrule
  stream events ending with the complete response, incrementally;
  [`decode_stream`][ferrule.providers.anthropic.codec.decode_stream] runs it over a whole SSE body.

Malformed input raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]; an API
error body or `error` event raises the mapped [`ProviderError`][ferrule.core.errors.ProviderError]
subclass (`overloaded_error` → `ServerError`, `rate_limit_error` → `RateLimitError`, ...).
"""

from __future__ import annotations

from ferrule.core.codec import WireCache
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelResponse
from ferrule.core.model import ModelCall

from ._decode import ERROR_CATEGORIES
from ._decode import FINISH_REASONS
from ._decode import StreamDecoder
from ._decode import decode_response
from ._decode import decode_stream
from ._decode import error_from_body
from ._decode import finish_reason
from ._decode import map_usage
from ._encode import BETA_CODE_EXECUTION
from ._encode import BETA_COMPACTION
from ._encode import BETA_FILES_API
from ._encode import BETA_INTERLEAVED_THINKING
from ._encode import BETA_MCP_CLIENT
from ._encode import BETA_WEB_FETCH
from ._encode import DEFAULT_THINKING_BUDGET
from ._encode import EFFORT_BUDGETS
from ._encode import MAX_CACHE_POINTS
from ._encode import MIN_THINKING_BUDGET
from ._encode import OWNED_BODY_KEYS
from ._encode import PROVIDER_NAME
from ._encode import WIRE_NAME_DETAIL
from ._encode import EncodedRequest
from ._encode import encode_request as _encode_request
from ._schema import strict_schema
from .profiles import AnthropicProfile
from .profiles import anthropic_profile

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
    "AnthropicCodec",
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
    wire_cache: WireCache | None = None,
) -> EncodedRequest:
    """Encode `call` as a Messages API request for `model_name`.

    `profile` defaults to the model family's
    [`anthropic_profile`][ferrule.providers.anthropic.profiles.anthropic_profile]. With
    `wire_cache`, history messages already encoded are reused from it (the body is the same bytes).
    Raises `UserError` for anything the API would reject that is visible before sending (the profile
    check of the call itself is the model's job: see `Model.check`).
    """
    return _encode_request(
        call,
        model_name=model_name,
        profile=profile or anthropic_profile(model_name),
        stream=stream,
        wire_cache=wire_cache,
    )


class AnthropicCodec:
    """The Messages API wire format of one model: a [`Codec`][ferrule.core.codec.Codec].

    `profile` defaults to the model family's; `provider_url` is recorded on decoded responses.
    `encode` returns an [`EncodedRequest`][ferrule.providers.anthropic.codec.EncodedRequest], whose
    `headers` carry the `anthropic-beta` features the request needs.
    """

    __slots__ = ("model_name", "profile", "provider_url", "wire_cache")

    def __init__(
        self,
        *,
        model_name: str | None = None,
        profile: AnthropicProfile | None = None,
        provider_url: str | None = None,
        wire_cache: WireCache | None = None,
    ) -> None:
        self.model_name = model_name
        """The model requests are for; `None` only for decoding."""
        self.profile = profile
        """The family profile requests are encoded with; `None` looks it up from `model_name`."""
        self.provider_url = provider_url
        """The API root, recorded on decoded responses."""
        self.wire_cache = wire_cache
        """Where encoded history messages are kept for later requests (the model's); `None`: none."""

    def encode(self, call: ModelCall, *, stream: bool = False) -> EncodedRequest:
        """The request for `call` (see [`encode_request`][ferrule.providers.anthropic.codec.encode_request])."""
        if self.model_name is None:
            raise UserError("AnthropicCodec needs a model_name to encode a request")
        return encode_request(
            call, model_name=self.model_name, profile=self.profile, stream=stream, wire_cache=self.wire_cache
        )

    def decode(self, body: bytes) -> ModelResponse:
        """Decode a buffered response body."""
        return decode_response(body, model_name=self.model_name, provider_url=self.provider_url)

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        return StreamDecoder(model_name=self.model_name, provider_url=self.provider_url)
