"""The GenerateContent model client shared by the Gemini API and Vertex AI."""

from __future__ import annotations

from typing import Any

import msgspec

from ferrule.core import bounded_json
from ferrule.core.codec import CodecModel
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.model import ModelCall
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import QueryParams
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import validate_request_headers

from ._encode import EncodeOptions
from ._encode import build_request
from ._provider import GoogleProvider
from ._provider import GoogleProviderBase
from ._schema import SchemaDialect
from .codec import GoogleCodec
from .profiles import GoogleModelTraits
from .profiles import profile_for
from .profiles import traits_for

__all__ = ["GoogleModel"]


class GoogleModel(CodecModel[GoogleProviderBase]):
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
        name = model_name.removeprefix("models/")
        provider = provider if provider is not None else GoogleProvider()
        super().__init__(name, provider=provider, settings=settings)
        # Validate the resource path now, so a bad name fails at construction, not mid-run.
        provider.model_path(name, "generateContent")
        self._profile = profile if profile is not None else provider.adjust_profile(profile_for(name))
        self.traits: GoogleModelTraits = traits or traits_for(name)
        """Wire traits of the model's family (schema dialect, thinking style, signature replay)."""
        self.schema_dialect: SchemaDialect | None = schema_dialect
        """Override of the family's schema dialect."""

    @property
    def profile(self) -> ModelProfile:
        """What this model supports; requests asking for more fail before any I/O."""
        return self._profile

    def encode_options(self) -> EncodeOptions:
        """The codec options this model encodes requests with."""
        provider = self._provider
        return EncodeOptions(
            model_name=self._model_name,
            provider_name=provider.name,
            traits=self.traits,
            schema_dialect=self.schema_dialect,
            server_side_tool_invocations=provider.server_side_tool_invocations,
            file_urls=provider.file_urls,
            uploaded_file_provider=provider.uploaded_file_provider,
        )

    def codec(self) -> GoogleCodec:
        """The codec of this model's requests (its traits and its provider's capabilities)."""
        return GoogleCodec(
            options=self.encode_options(), provider_url=self._provider.base_url, wire_cache=self.wire_cache
        )

    def build_request(self, call: ModelCall) -> dict[str, Any]:
        """The request body `call` is sent as (for inspection and tests; no I/O)."""
        return build_request(call, self.encode_options())

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        if stream:
            return self._provider.model_path(self._model_name, "streamGenerateContent"), {"alt": "sse"}
        return self._provider.model_path(self._model_name, "generateContent"), None

    async def count_tokens(self, call: ModelCall) -> int:
        """The input tokens `call` would use (`:countTokens`); checked against the profile first."""
        self.check(call)
        body = self.build_request(call)
        if isinstance(self._provider, GoogleProvider):
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
        path = self._provider.model_path(self._model_name, "countTokens")
        with self._provider.redactor:
            options = self._provider.call_options(call, self._model_name)
            options["headers"] = validate_request_headers(call.settings.extra_headers or {})
            response = await self._provider.request(
                "POST", path, content=msgspec.json.encode(payload), **options
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
