"""The GenerateContent model client shared by the Gemini API and Vertex AI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelResponse
from ferrule.core.model import Model, ModelCall, ModelStreamEvent
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import RequestOptions
from ferrule.core.redaction import Redactor
from ferrule.core.settings import ModelSettings, validate_request_headers

from ._decode import StreamDecoder, decode_response
from ._encode import EncodeOptions, build_request
from ._profiles import GoogleModelTraits, profile_for, traits_for
from ._provider import GoogleProvider, GoogleProviderBase
from ._schema import SchemaDialect

__all__ = ["GoogleModel"]


class GoogleModel(Model):
    """A Gemini model behind the Gemini API or Vertex AI.

    The provider owns the credential, root and resource paths; this client owns the endpoint
    choice (`:generateContent`, `:streamGenerateContent?alt=sse`) and the wire codec. Without a
    `profile` the family's fail-closed built-in profile is used (unknown names: text only).
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: GoogleProviderBase | None = None,
        profile: ModelProfile | None = None,
        settings: ModelSettings | None = None,
        traits: GoogleModelTraits | None = None,
        schema_dialect: SchemaDialect | None = None,
    ) -> None:
        self._model_name = model_name.removeprefix("models/")
        self.provider: GoogleProviderBase = provider if provider is not None else GoogleProvider()
        """The provider requests go through."""
        # Validate the resource path now, so a bad name fails at construction, not mid-run.
        self.provider.model_path(self._model_name, "generateContent")
        self._profile = (
            profile if profile is not None else self.provider.adjust_profile(profile_for(self._model_name))
        )
        self.traits: GoogleModelTraits = traits or traits_for(self._model_name)
        """Wire traits of the model's family (schema dialect, thinking style, signature replay)."""
        self.schema_dialect: SchemaDialect | None = schema_dialect
        """Override of the family's schema dialect."""
        self.settings = settings

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def provider_name(self) -> str:
        return self.provider.name

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    @property
    def redactor(self) -> Redactor:
        """The provider's redactor: every error leaving `request`, `stream` and `count_tokens` is scrubbed with it."""
        return self.provider.redactor

    def encode_options(self) -> EncodeOptions:
        """The codec options this model encodes requests with."""
        provider = self.provider
        return EncodeOptions(
            model_name=self._model_name,
            provider_name=provider.name,
            traits=self.traits,
            schema_dialect=self.schema_dialect,
            server_side_tool_invocations=provider.server_side_tool_invocations,
            file_urls=provider.file_urls,
            uploaded_file_provider=provider.uploaded_file_provider,
        )

    def build_request(self, call: ModelCall) -> dict[str, Any]:
        """The request body `call` is sent as (for inspection and tests; no I/O)."""
        return build_request(call, self.encode_options())

    def _transport_options(self, call: ModelCall) -> RequestOptions:
        options = self.provider.call_options(call, self._model_name)
        if call.settings.extra_headers:
            options["headers"] = validate_request_headers(call.settings.extra_headers)
        return options

    async def _request(self, call: ModelCall) -> ModelResponse:
        body = msgspec.json.encode(self.build_request(call))
        path = self.provider.model_path(self._model_name, "generateContent")
        response = await self.provider.request("POST", path, content=body, **self._transport_options(call))
        return decode_response(
            response.content,
            model_name=self._model_name,
            provider_name=self.provider.name,
            provider_url=self.provider.base_url,
        )

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        body = msgspec.json.encode(self.build_request(call))
        path = self.provider.model_path(self._model_name, "streamGenerateContent")
        decoder = StreamDecoder(
            model_name=self._model_name, provider_name=self.provider.name, provider_url=self.provider.base_url
        )
        options = self._transport_options(call)
        options["params"] = {"alt": "sse"}
        async with self.provider.stream_sse("POST", path, content=body, **options) as events:
            async for event in events:
                for item in decoder.feed(event.data):
                    yield item
        for item in decoder.finish():
            yield item

    async def count_tokens(self, call: ModelCall) -> int:
        """The input tokens `call` would use (`:countTokens`); checked against the profile first."""
        self.check(call)
        body = self.build_request(call)
        if isinstance(self.provider, GoogleProvider):
            # The Gemini API counts a whole request only inside generateContentRequest.
            payload: dict[str, Any] = {
                "generateContentRequest": {"model": f"models/{self._model_name}", **body}
            }
        else:
            payload = {
                k: v
                for k, v in body.items()
                if k in ("contents", "systemInstruction", "tools", "generationConfig")
            }
        path = self.provider.model_path(self._model_name, "countTokens")
        with self.provider.redactor:
            response = await self.provider.request(
                "POST", path, content=msgspec.json.encode(payload), **self._transport_options(call)
            )
            return decode_count_tokens(response.content)


def decode_count_tokens(body: bytes) -> int:
    """`totalTokens` of a `:countTokens` response."""
    try:
        document = bounded_json.decode(body, limits=bounded_json.PROVIDER_RESPONSE)
    except bounded_json.JsonError as exc:
        raise ResponseDecodeError(f"the countTokens response is not valid JSON: {exc}") from None
    total = document.get("totalTokens") if isinstance(document, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ResponseDecodeError("the countTokens response has no non-negative totalTokens")
    return total
