"""The Messages API model client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Final

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import ModelResponse
from ferrule.core.model import Model, ModelCall, ModelStreamEvent, ResponseCompleted
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import RequestOptions
from ferrule.core.redaction import Redactor
from ferrule.core.settings import ModelSettings, validate_request_headers

from ._decode import StreamDecoder, decode_response
from ._encode import PROVIDER_NAME, EncodedRequest, encode_request
from ._provider import AnthropicProvider
from .profiles import AnthropicProfile, anthropic_profile

__all__ = ["STREAMING_MAX_TOKENS", "AnthropicModel"]

MESSAGES_PATH: Final = "/v1/messages"

STREAMING_MAX_TOKENS: Final = 21_333
"""Above this `max_tokens`, a buffered request is made over the streaming endpoint instead: a
non-streaming call that may generate this much can outlast the API's ten-minute limit."""


class AnthropicModel(Model):
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
        self._model_name = model_name
        self._provider = provider if provider is not None else AnthropicProvider()
        family = anthropic_profile(model_name)
        if isinstance(profile, ModelProfile):
            family = msgspec.structs.replace(family, model=profile)
        elif profile is not None:
            family = profile
        self._family = family
        self.settings = settings

    @property
    def model_name(self) -> str:
        """The model ID sent as `model`."""
        return self._model_name

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

    @property
    def provider(self) -> AnthropicProvider:
        """The provider this model sends its requests through."""
        return self._provider

    @property
    def redactor(self) -> Redactor:
        """The provider's redactor: every error leaving `request` and `stream` is scrubbed with it."""
        return self._provider.redactor

    def encode(self, call: ModelCall, *, stream: bool) -> EncodedRequest:
        """The request this model would send for `call` (checked against the profile first)."""
        self.check(call)
        return encode_request(call, model_name=self._model_name, profile=self._family, stream=stream)

    def _headers(self, call: ModelCall, betas: Iterable[str]) -> dict[str, str]:
        headers = validate_request_headers(call.settings.extra_headers or {})
        requested = {b.strip() for b in headers.pop("anthropic-beta", "").split(",") if b.strip()}
        all_betas = sorted(requested | set(betas))
        if all_betas:
            headers["anthropic-beta"] = ",".join(all_betas)
        return headers

    def _options(self, call: ModelCall, betas: Iterable[str]) -> RequestOptions:
        options = self._provider.call_options(call, self._model_name)
        options["headers"] = self._headers(call, betas)
        return options

    async def _request(self, call: ModelCall) -> ModelResponse:
        encoded = encode_request(call, model_name=self._model_name, profile=self._family, stream=False)
        if encoded.max_tokens > STREAMING_MAX_TOKENS:
            return await super()._request(call)
        response = await self._provider.request(
            "POST", MESSAGES_PATH, content=encoded.body, **self._options(call, encoded.betas)
        )
        return decode_response(
            response.content, model_name=self._model_name, provider_url=self._provider.base_url
        )

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        encoded = encode_request(call, model_name=self._model_name, profile=self._family, stream=True)
        decoder = StreamDecoder(model_name=self._model_name, provider_url=self._provider.base_url)
        async with self._provider.stream_sse(
            "POST", MESSAGES_PATH, content=encoded.body, **self._options(call, encoded.betas)
        ) as events:
            async for event in events:
                for item in decoder.feed(event.event, event.data):
                    yield item
                if decoder.done:
                    break
        closing, response = decoder.close()
        for item in closing:
            yield item
        yield ResponseCompleted(response)
