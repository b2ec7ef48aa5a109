"""`OpenAIChatModel` and `OpenAIResponsesModel`: the model clients on top of the codecs (internal)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator, AsyncIterator, Collection
from typing import Any, Literal

import msgspec

from ferrule.core.errors import ContentFilterError, UserError
from ferrule.core.messages import (
    AudioUrl,
    DocumentUrl,
    ImageUrl,
    ModelResponse,
    UserContent,
    VideoUrl,
)
from ferrule.core.model import Model, ModelCall, ModelStreamEvent, ResponseCompleted
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import RequestOptions
from ferrule.core.redaction import Redactor
from ferrule.core.settings import ModelSettings, validate_request_headers
from ferrule.core.url_policy import UrlPolicy

from . import chat_codec, responses_codec
from ._content import is_text_like
from ._download import DEFAULT_MAX_DOWNLOAD_BYTES, resolve_downloads
from ._provider import OpenAICompatibleProvider, OpenAIProvider
from .profiles import ChatDialect, ResponsesDialect

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]


def _raise_refusal(response: ModelResponse, model: Model) -> None:
    """Raise `ContentFilterError` for a refused or filtered answer (documented behaviour of both clients)."""
    if response.finish_reason != "content_filter":
        return
    refusal = (response.provider_details or {}).get("refusal")
    reason = (
        f"the model refused: {refusal}"
        if isinstance(refusal, str) and refusal
        else "the answer was stopped by the content filter"
    )
    raise ContentFilterError(
        reason,
        provider_name=model.provider_name,
        model_name=model.model_name,
        details={"response": response, "refusal": refusal},
    )


class _OpenAIModelBase(Model):
    """What both clients share: provider, settings, headers, timeouts and downloads.

    Retrying is not done here: `ferrule.core.retry` (`request_with_retry` / `stream_with_retry`,
    which the agent uses) retries transient failures under the run's policy and budget, and only
    before a stream's first event.
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: OpenAICompatibleProvider | None,
        settings: ModelSettings | None,
        download_url_policy: UrlPolicy | None,
        max_download_bytes: int,
    ) -> None:
        if not model_name or any(c in model_name for c in "\r\n"):
            raise UserError(f"model name {model_name!r} is not valid")
        self._model_name = model_name
        self._provider = provider if provider is not None else OpenAIProvider()
        self.settings = settings
        self.download_url_policy: UrlPolicy = (
            download_url_policy if download_url_policy is not None else UrlPolicy()
        )
        """The policy for downloading user content this endpoint takes only as bytes."""
        self.max_download_bytes = max_download_bytes
        """Largest such download."""

    @property
    def model_name(self) -> str:
        """The model (or Azure deployment) name sent to the provider."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """The provider's name, e.g. `"openai"` or `"openrouter"`."""
        return self._provider.name

    @property
    def provider(self) -> OpenAICompatibleProvider:
        """The provider this model sends its requests through."""
        return self._provider

    def _headers(self, call: ModelCall) -> dict[str, str]:
        headers = validate_request_headers(call.settings.extra_headers or {})
        if call.request_id:
            headers["x-client-request-id"] = call.request_id
        return headers

    @property
    def redactor(self) -> Redactor:
        """The provider's redactor: every error leaving `request` and `stream` is scrubbed with it."""
        return self._provider.redactor

    def _endpoint(self, api: Literal["chat", "responses"], call: ModelCall) -> tuple[str, RequestOptions]:
        """The path of `api` and the options of a request for `call` (the shared `Provider.call_options`)."""
        path, params = self._provider.endpoint(api, self._model_name)
        options = self._provider.call_options(call, self._model_name)
        options["headers"] = self._headers(call)
        options["params"] = params
        return path, options

    async def _buffered(self, api: Literal["chat", "responses"], body: bytes, call: ModelCall) -> bytes:
        path, options = self._endpoint(api, call)
        response = await self._provider.request("POST", path, content=body, **options)
        return response.content

    async def _streamed(
        self, api: Literal["chat", "responses"], body: bytes, call: ModelCall
    ) -> AsyncGenerator[ModelStreamEvent, None]:
        path, options = self._endpoint(api, call)
        async with self._provider.stream_sse("POST", path, content=body, **options) as events:
            decoder = self._decoder()
            async for event in events:
                for out in decoder.feed_event(event):
                    yield out
            for out in decoder.finish():
                if isinstance(out, ResponseCompleted):
                    out.response.provider_url = self._provider.base_url
                    _raise_refusal(out.response, self)
                yield out

    def _decoder(self) -> chat_codec.ChatStreamDecoder | responses_codec.ResponsesStreamDecoder:
        raise NotImplementedError


class OpenAIChatModel(_OpenAIModelBase):
    """A model behind a Chat Completions endpoint: OpenAI or any OpenAI-compatible server.

    ```python
    model = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(api_key=...))
    model = OpenAIChatModel("llama3.2", provider=OllamaProvider())
    ```

    The profile and dialect come from the provider's table for `model_name` (fail-closed for
    unknown models); pass `profile=` / `dialect=` to override them. A refused or content-filtered
    answer raises [`ContentFilterError`][ferrule.core.errors.ContentFilterError] with the response
    in `details["response"]`. With `routing=` (OpenRouter only) the typed provider routing is sent.
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: OpenAICompatibleProvider | None = None,
        profile: ModelProfile | None = None,
        dialect: ChatDialect | None = None,
        settings: ModelSettings | None = None,
        routing: Any = None,
        download_url_policy: UrlPolicy | None = None,
        max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
    ) -> None:
        super().__init__(
            model_name,
            provider=provider,
            settings=settings,
            download_url_policy=download_url_policy,
            max_download_bytes=max_download_bytes,
        )
        resolved = self._provider.chat_profile(model_name)
        self._profile = profile if profile is not None else resolved.profile
        self.dialect: ChatDialect = dialect if dialect is not None else resolved.dialect
        """How this endpoint spells the Chat Completions fields that vary between servers."""
        if routing is not None:
            from .compatible import OpenRouterRouting

            if not isinstance(routing, OpenRouterRouting):
                raise UserError("routing must be an OpenRouterRouting")
            if self._provider.name != "openrouter":
                raise UserError(
                    "routing= is OpenRouter's; this model's provider is " + repr(self._provider.name)
                )
        self.routing = routing
        """OpenRouter provider routing preferences (an `OpenRouterRouting`), or `None`."""

    @property
    def profile(self) -> ModelProfile:
        """What this model supports; requests asking for more fail before any I/O."""
        return self._profile

    def _extra_fields(self) -> tuple[dict[str, Any], Collection[str]]:
        if self.routing is None:
            return {}, ("provider",) if self._provider.name == "openrouter" else ()
        return {"provider": self.routing.to_json()}, ("provider",)

    def _needs_bytes(self, item: UserContent) -> bool:
        if isinstance(item, AudioUrl):
            return True
        if isinstance(item, DocumentUrl):
            return (
                item.force_download is not False
                or not self.dialect.file_urls
                or is_text_like(item.resolved_media_type)
            )
        if isinstance(item, ImageUrl | VideoUrl):
            return item.force_download is not False
        return False

    async def _prepare(self, call: ModelCall) -> tuple[ModelCall, bool]:
        """The call as encoded (downloads resolved, tools emulated when the profile says so)."""
        call = await resolve_downloads(
            call, self._needs_bytes, policy=self.download_url_policy, max_bytes=self.max_download_bytes
        )
        emulate = self._profile.tools_emulated_via_output and bool(call.tools or call.output_tools)
        return call, emulate

    def encode(self, call: ModelCall, *, stream: bool = False) -> bytes:
        """The request body this model sends for `call` (no downloads, no tool emulation)."""
        extra, owned = self._extra_fields()
        body = chat_codec.build_request(
            call,
            model_name=self._model_name,
            dialect=self.dialect,
            stream=stream,
            provider_name=self._provider.name,
            extra_owned_keys=owned,
        )
        body.update(extra)
        return msgspec.json.encode(body)

    def _decoder(self) -> chat_codec.ChatStreamDecoder:
        return chat_codec.ChatStreamDecoder(model_name=self._model_name, provider_name=self._provider.name)

    async def _request(self, call: ModelCall) -> ModelResponse:
        original = call
        call, emulate = await self._prepare(call)
        emulation = _emulation() if emulate else None
        if emulation is not None:
            call = emulation.encode_emulated_tools(call)
        content = await self._buffered("chat", self.encode(call), call)
        response = chat_codec.decode_response(
            content, model_name=self._model_name, provider_name=self._provider.name
        )
        response.provider_url = self._provider.base_url
        _raise_refusal(response, self)
        if emulation is not None:
            response = emulation.decode_emulated_tools(response, original)
        return response

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        original = call
        call, emulate = await self._prepare(call)
        emulation = _emulation() if emulate else None
        if emulation is None:
            inner = self._streamed("chat", self.encode(call, stream=True), call)
            try:
                async for event in inner:
                    yield event
            finally:
                # Closing promptly releases the connection when the caller stops early.
                await inner.aclose()
            return
        encoded = emulation.encode_emulated_tools(call)
        inner = self._streamed("chat", self.encode(encoded, stream=True), encoded)
        outer = emulation.emulated_tool_stream(inner, original)
        try:
            async for event in outer:
                yield event
        finally:
            await outer.aclose()
            await inner.aclose()


def _emulation() -> Any:
    """The tool-emulation transform (a separate module, loaded only for models that need it)."""
    try:
        return importlib.import_module("ferrule.providers.openai._tool_emulation")
    except ImportError as exc:  # pragma: no cover - shipped with the package
        raise UserError(
            "this model's profile emulates tools, but the tool-emulation module is missing"
        ) from exc


class OpenAIResponsesModel(_OpenAIModelBase):
    """A model behind OpenAI's Responses API (also Azure OpenAI's and DeepSeek's).

    Stateless by default: `store` is off and the whole history is replayed on every request, with
    reasoning items carried as encrypted content and sent back only to the same provider and model.
    A refused or content-filtered answer raises
    [`ContentFilterError`][ferrule.core.errors.ContentFilterError].
    """

    def __init__(
        self,
        model_name: str,
        *,
        provider: OpenAICompatibleProvider | None = None,
        profile: ModelProfile | None = None,
        dialect: ResponsesDialect | None = None,
        settings: ModelSettings | None = None,
        download_url_policy: UrlPolicy | None = None,
        max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
    ) -> None:
        super().__init__(
            model_name,
            provider=provider,
            settings=settings,
            download_url_policy=download_url_policy,
            max_download_bytes=max_download_bytes,
        )
        resolved = self._provider.responses_profile(model_name)
        self._profile = profile if profile is not None else resolved.profile
        self.dialect: ResponsesDialect = dialect if dialect is not None else resolved.dialect
        """How the Responses endpoint is used (stateless storage, reasoning replay)."""

    @property
    def profile(self) -> ModelProfile:
        """What this model supports; requests asking for more fail before any I/O."""
        return self._profile

    @staticmethod
    def _needs_bytes(item: UserContent) -> bool:
        return isinstance(item, ImageUrl | DocumentUrl) and item.force_download is not False

    def encode(self, call: ModelCall, *, stream: bool = False) -> bytes:
        """The request body this model sends for `call` (no downloads)."""
        return responses_codec.encode_request(
            call,
            model_name=self._model_name,
            dialect=self.dialect,
            profile=self._profile,
            stream=stream,
            provider_name=self._provider.name,
        )

    def _decoder(self) -> responses_codec.ResponsesStreamDecoder:
        return responses_codec.ResponsesStreamDecoder(
            model_name=self._model_name, provider_name=self._provider.name
        )

    async def _request(self, call: ModelCall) -> ModelResponse:
        call = await resolve_downloads(
            call, self._needs_bytes, policy=self.download_url_policy, max_bytes=self.max_download_bytes
        )
        content = await self._buffered("responses", self.encode(call), call)
        response = responses_codec.decode_response(
            content, model_name=self._model_name, provider_name=self._provider.name
        )
        response.provider_url = self._provider.base_url
        _raise_refusal(response, self)
        return response

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        call = await resolve_downloads(
            call, self._needs_bytes, policy=self.download_url_policy, max_bytes=self.max_download_bytes
        )
        inner = self._streamed("responses", self.encode(call, stream=True), call)
        try:
            async for event in inner:
                yield event
        finally:
            await inner.aclose()
