"""`OpenAIChatModel` and `OpenAIResponsesModel`: the model clients on top of the codecs (internal)."""

from __future__ import annotations

import abc
import importlib
from collections.abc import AsyncIterator
from collections.abc import Hashable
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import TypedDict
from typing import Unpack

from ferrule.core.codec import CodecModel
from ferrule.core.codec import HistoryProof
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import UserContent
from ferrule.core.messages import VideoUrl
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import QueryParams
from ferrule.core.settings import ModelSettings
from ferrule.core.url_policy import UrlPolicy

from ._content import is_text_like
from ._download import DEFAULT_MAX_DOWNLOAD_BYTES
from ._download import any_needs_bytes
from ._download import resolve_downloads
from ._provider import OpenAICompatibleProvider
from ._provider import OpenAIProvider
from .profiles import UNKNOWN
from .profiles import ChatDialect
from .profiles import ResponsesDialect

if TYPE_CHECKING:
    # Each codec is imported by its model's first codec (the first request or `encode`): importing
    # the models loads neither, and a Chat Completions application never loads the Responses one.
    from .chat_codec import ChatCodec
    from .responses_codec import ResponsesCodec

__all__ = ["OpenAIChatModel", "OpenAIModelOptions", "OpenAIResponsesModel"]


class OpenAIModelOptions(TypedDict, total=False):
    """The options both OpenAI model clients take besides the model name, dialect and routing."""

    provider: OpenAICompatibleProvider | None
    """The provider requests go through; `None` is `OpenAIProvider()` (key from `OPENAI_API_KEY`)."""
    profile: ModelProfile | None
    """What the model supports; `None` takes the provider's table entry (fail-closed for unknown models)."""
    settings: ModelSettings | None
    """Model-level default settings."""
    download_url_policy: UrlPolicy | None
    """The policy for downloading URL content the endpoint takes only as bytes; `None` is the default policy."""
    max_download_bytes: int
    """Largest such download (default 20 MiB)."""


class _OpenAIModelBase(CodecModel[OpenAICompatibleProvider]):
    """What both clients share: provider, settings, endpoints, downloads and refusals.

    Retrying is not done here: `ferrule.core.retry` (`request_with_retry` / `stream_with_retry`,
    which the agent uses) retries transient failures under the run's policy and budget, and only
    before a stream's first event.
    """

    _api: Literal["chat", "responses"]
    _profile: ModelProfile

    def __init__(self, model_name: str, options: OpenAIModelOptions) -> None:
        if not model_name or any(c in model_name for c in "\r\n"):
            raise UserError(f"model name {model_name!r} is not valid")
        provider = options.get("provider")
        super().__init__(
            model_name,
            provider=provider if provider is not None else OpenAIProvider(),
            settings=options.get("settings"),
        )
        policy = options.get("download_url_policy")
        self.download_url_policy: UrlPolicy = policy if policy is not None else UrlPolicy()
        """The policy for downloading user content this endpoint takes only as bytes."""
        self.max_download_bytes = options.get("max_download_bytes", DEFAULT_MAX_DOWNLOAD_BYTES)
        """Largest such download."""

    def _choose_profile(self, resolved: ModelProfile, options: OpenAIModelOptions) -> None:
        """The model's profile: `profile=` where given, else `resolved` (the provider's table's)."""
        profile = options.get("profile")
        self._profile = profile if profile is not None else resolved

    @property
    def profile(self) -> ModelProfile:
        """What this model supports; requests asking for more fail before any I/O."""
        return self._profile

    def check(self, call: ModelCall) -> None:
        """The profile check; for a model with no known profile the error says how to declare one."""
        try:
            super().check(call)
        except UnsupportedFeatureError as exc:
            if type(exc) is not UnsupportedFeatureError or self._profile != UNKNOWN:
                raise
            declare = (
                f"ferrule has no profile for the model {self.model_name!r}, so it assumes text only; if the "
                f"model supports {exc.feature}, declare what it supports: "
                f"{type(self).__name__}({self.model_name!r}, provider=..., profile=ModelProfile("
                "supports_tools=True, supports_json_schema_output=True, ...)) with ModelProfile from "
                "ferrule.core.profile (or the provider's profile_override=)"
            )
            hint = f"{exc.hint}; or {declare}" if exc.hint else declare
            raise UnsupportedFeatureError(exc.feature, model=exc.model, hint=hint) from None

    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        del stream
        return self._provider.endpoint(self._api, self._model_name)

    @abc.abstractmethod
    def _needs_bytes(self, item: UserContent) -> bool:
        """Whether `item` must be downloaded and sent as bytes."""

    @abc.abstractmethod
    def _download_rule(self) -> Hashable | None:
        """What `_needs_bytes` depends on, or `None` when a subclass changed it (then no message is
        taken as checked from an earlier request)."""

    def _needs_download(self, call: ModelCall, proof: HistoryProof) -> bool:
        """Whether `call` has content to download, looking only at what `proof` has not seen pass."""
        rule = self._download_rule()
        check = None if rule is None else ("download", rule)
        if any_needs_bytes(call.messages if check is None else proof.unchecked(check), self._needs_bytes):
            return True
        if check is not None:
            proof.passed(check)
        return False

    async def _prepare(self, call: ModelCall) -> ModelCall:
        return await resolve_downloads(
            call, self._needs_bytes, policy=self.download_url_policy, max_bytes=self.max_download_bytes
        )

    def _check_response(self, response: ModelResponse) -> None:
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
            provider_name=self.provider_name,
            model_name=self.model_name,
            details={"response": response, "refusal": refusal},
        )


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

    _api = "chat"
    _request_encodes_first = True  # its `_request` awaits `CodecModel._request` first

    def __init__(
        self,
        model_name: str,
        *,
        dialect: ChatDialect | None = None,
        routing: Any = None,
        **options: Unpack[OpenAIModelOptions],
    ) -> None:
        super().__init__(model_name, options)
        resolved = self._provider.chat_profile(model_name)
        self._choose_profile(resolved.profile, options)
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

    def codec(self) -> ChatCodec:
        """The codec of this model's requests (its dialect, provider and OpenRouter routing)."""
        from .chat_codec import ChatCodec

        provider = self._provider
        routing = self.routing
        return ChatCodec(
            model_name=self._model_name,
            dialect=self.dialect,
            provider_name=provider.name,
            provider_url=provider.base_url,
            extra_fields={"provider": routing.to_json()} if routing is not None else None,
            # OpenRouter's routing is typed: extra_body may not set it even when none is given.
            extra_owned_keys=("provider",) if routing is not None or provider.name == "openrouter" else (),
            wire_cache=self.wire_cache,
        )

    def encode(self, call: ModelCall, *, stream: bool = False) -> bytes:
        """The request body this model sends for `call` (no downloads, no tool emulation)."""
        return self.codec().encode(call, stream=stream).body

    def _download_rule(self) -> Hashable | None:
        return self.dialect.file_urls if type(self)._needs_bytes is OpenAIChatModel._needs_bytes else None

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

    def _emulation(self, call: ModelCall) -> Any:
        """The tool-emulation module when this call's tools must be emulated, else `None`."""
        if self._profile.tools_emulated_via_output and bool(call.tools or call.output_tools):
            return _emulation()
        return None

    def _prepare_now(self, call: ModelCall, proof: HistoryProof) -> ModelCall | None:
        """`_prepare` when there is nothing to download (a subclass's own `_prepare` always runs)."""
        if type(self)._prepare is not OpenAIChatModel._prepare or self._needs_download(call, proof):
            return None
        emulation = self._emulation(call)
        return call if emulation is None else emulation.encode_emulated_tools(call)

    async def _prepare(self, call: ModelCall) -> ModelCall:
        """The call as encoded: downloads resolved, tools emulated when the profile says so."""
        prepared = await super()._prepare(call)
        emulation = self._emulation(prepared)
        return prepared if emulation is None else emulation.encode_emulated_tools(prepared)

    async def _request(self, call: ModelCall) -> ModelResponse:
        response = await super()._request(call)
        emulation = self._emulation(call)
        return response if emulation is None else emulation.decode_emulated_tools(response, call)

    def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        events = super()._stream(call)
        emulation = self._emulation(call)
        # The emulated stream closes `events` when it is closed.
        return events if emulation is None else emulation.emulated_tool_stream(events, call)

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        # Emulated tools rewrite the stream (`_stream`), as does a subclass's own `_stream`.
        if type(self)._stream is not OpenAIChatModel._stream or self._emulation(call) is not None:
            return None
        return self._decoded(call)


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

    _api = "responses"

    def __init__(
        self,
        model_name: str,
        *,
        dialect: ResponsesDialect | None = None,
        **options: Unpack[OpenAIModelOptions],
    ) -> None:
        super().__init__(model_name, options)
        resolved = self._provider.responses_profile(model_name)
        self._choose_profile(resolved.profile, options)
        self.dialect: ResponsesDialect = dialect if dialect is not None else resolved.dialect
        """How the Responses endpoint is used (stateless storage, reasoning replay)."""

    def codec(self) -> ResponsesCodec:
        """The codec of this model's requests (its dialect, profile and provider)."""
        from .responses_codec import ResponsesCodec

        return ResponsesCodec(
            model_name=self._model_name,
            dialect=self.dialect,
            profile=self._profile,
            provider_name=self._provider.name,
            provider_url=self._provider.base_url,
            wire_cache=self.wire_cache,
        )

    def encode(self, call: ModelCall, *, stream: bool = False) -> bytes:
        """The request body this model sends for `call` (no downloads)."""
        return self.codec().encode(call, stream=stream).body

    def _download_rule(self) -> Hashable | None:
        return "responses" if type(self)._needs_bytes is OpenAIResponsesModel._needs_bytes else None

    def _needs_bytes(self, item: UserContent) -> bool:
        return isinstance(item, ImageUrl | DocumentUrl) and item.force_download is not False

    def _prepare_now(self, call: ModelCall, proof: HistoryProof) -> ModelCall | None:
        """`_prepare` when there is nothing to download (a subclass's own `_prepare` always runs)."""
        if type(self)._prepare is not _OpenAIModelBase._prepare or self._needs_download(call, proof):
            return None
        return call
