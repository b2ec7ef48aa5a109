"""The Messages API model client."""

from __future__ import annotations

from typing import Final

import msgspec

from ferrule.core.codec import CodecModel
from ferrule.core.codec import StreamDecoder
from ferrule.core.codec import WireRequest
from ferrule.core.errors import UserError
from ferrule.core.messages import ModelResponse
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import QueryParams
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import validate_request_headers

from . import _decode
from ._encode import PROVIDER_NAME
from ._encode import EncodedRequest
from ._provider import AnthropicProvider
from .codec import AnthropicCodec
from .profiles import AnthropicProfile
from .profiles import anthropic_profile

__all__ = ["STREAMING_MAX_TOKENS", "AnthropicModel"]

MESSAGES_PATH: Final = "/v1/messages"

STREAMING_MAX_TOKENS: Final = 21_333
"""Above this `max_tokens`, a buffered request is made over the streaming endpoint instead: a
non-streaming call that may generate this much can outlast the API's ten-minute limit."""


class AnthropicModel(CodecModel[AnthropicProvider]):
    """A Claude model on the Anthropic Messages API, buffered (`request`) and streamed (`stream`).

    The profile comes from the model family (fail-closed for unknown names) unless one is given.
    The client never sees the credential: it hands request bytes to its provider.
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: AnthropicProvider | None = None,
        profile: AnthropicProfile | ModelProfile | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        if not model_name:
            raise UserError("AnthropicModel needs a model name, e.g. 'claude-sonnet-4-5'")
        super().__init__(
            model_name, provider=provider if provider is not None else AnthropicProvider(), settings=settings
        )
        family = anthropic_profile(model_name)
        if isinstance(profile, ModelProfile):
            family = msgspec.structs.replace(family, model=profile)
        elif profile is not None:
            family = profile
        self._family = family

    @property
    def provider_name(self) -> str:
        """Always `"anthropic"`."""
        return PROVIDER_NAME

    @property
    def profile(self) -> ModelProfile:
        """The neutral profile every call is checked against."""
        return self._family.model

    @property
    def anthropic_profile(self) -> AnthropicProfile:
        """The family profile, with the Messages API specifics."""
        return self._family

    def codec(self) -> AnthropicCodec:
        """The codec of this model's requests (its family profile)."""
        return AnthropicCodec(
            model_name=self._model_name,
            profile=self._family,
            provider_url=self._provider.base_url,
            wire_cache=self.wire_cache,
        )

    def encode(self, call: ModelCall, *, stream: bool) -> EncodedRequest:
        """The request this model would send for `call` (checked against the profile first)."""
        self.check(call)
        return self.codec().encode(call, stream=stream)

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        del stream
        return MESSAGES_PATH, None

    def _headers(self, call: ModelCall, wire: WireRequest) -> dict[str, str]:
        # Betas the caller asks for in `extra_headers` are sent together with the ones the request needs.
        headers = validate_request_headers(call.settings.extra_headers or {})
        requested = {b.strip() for b in headers.pop("anthropic-beta", "").split(",") if b.strip()}
        needed = {b for b in wire.headers.get("anthropic-beta", "").split(",") if b}
        betas = sorted(requested | needed)
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        return headers

    # The decoder ignores whatever follows `message_stop`: asking after each read is enough.
    _stream_done_per_read = True

    def _stream_done(self, decoder: StreamDecoder) -> bool:
        # Nothing after `message_stop` can change the response: stop reading there.
        return isinstance(decoder, _decode.StreamDecoder) and decoder.done

    async def _request(self, call: ModelCall) -> ModelResponse:
        codec = self.codec()
        wire = codec.encode(call, stream=False)
        if wire.max_tokens > STREAMING_MAX_TOKENS:
            return await Model._request(self, call)  # the stream, consumed whole
        return await self._send(call, codec, wire)
