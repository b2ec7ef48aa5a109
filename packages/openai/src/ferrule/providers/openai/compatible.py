"""Named OpenAI-compatible providers: each with its API root, authentication, environment variable and profiles.

| provider | class | default root | key variable |
|---|---|---|---|
| Ollama | `OllamaProvider` | `http://localhost:11434/v1` (local) | `OLLAMA_API_KEY` (optional) |
| vLLM | `VLLMProvider` | `http://127.0.0.1:8000/v1` (local) | `VLLM_API_KEY` (optional) |
| llama.cpp server | `LlamaCppServerProvider` | `http://127.0.0.1:8080/v1` (local) | `LLAMACPP_API_KEY` (optional) |
| LM Studio | `LMStudioProvider` | `http://localhost:1234/v1` (local) | none |
| OpenRouter | `OpenRouterProvider` | `https://openrouter.ai/api/v1` | `OPENROUTER_API_KEY` |
| Groq | `GroqProvider` | `https://api.groq.com/openai/v1` | `GROQ_API_KEY` |
| DeepSeek | `DeepSeekProvider` | `https://api.deepseek.com` | `DEEPSEEK_API_KEY` |
| Together AI | `TogetherProvider` | `https://api.together.xyz/v1` | `TOGETHER_API_KEY` |
| Fireworks AI | `FireworksProvider` | `https://api.fireworks.ai/inference/v1` | `FIREWORKS_API_KEY` |
| Cerebras | `CerebrasProvider` | `https://api.cerebras.ai/v1` | `CEREBRAS_API_KEY` |
| Mistral (compatible endpoint) | `MistralOpenAIProvider` | `https://api.mistral.ai/v1` | `MISTRAL_API_KEY` |
| Hugging Face router | `HuggingFaceProvider` | `https://router.huggingface.co/v1` | `HF_TOKEN` |
| Azure OpenAI | `AzureOpenAIProvider` | `https://<resource>.openai.azure.com/openai/v1` | `AZURE_OPENAI_API_KEY` |
| any other server | `OpenAICompatibleProvider` | `base_url=` | `api_key=` |

Local servers are reachable only through an explicit URL policy: a local provider's built-in root
is allowed for exactly its origin; any other local or private root needs
`url_policy=local_url_policy(base_url)` (or a wider [`UrlPolicy`][ferrule.core.url_policy.UrlPolicy])
from the application.
"""

from __future__ import annotations

import functools
import math
import os
import re
from typing import Literal
from typing import Unpack

import msgspec

from ferrule.core.errors import UserError

from ._provider import CompatibleOptions
from ._provider import OpenAICompatibleProvider
from ._provider import add_headers
from ._provider import local_url_policy
from .profiles import ChatProfile
from .profiles import azure_chat_profile
from .profiles import azure_responses_profile
from .profiles import cerebras_profile
from .profiles import deepseek_profile
from .profiles import deepseek_responses_profile
from .profiles import fireworks_profile
from .profiles import groq_profile
from .profiles import huggingface_profile
from .profiles import local_server_profile
from .profiles import mistral_profile
from .profiles import openrouter_profile
from .profiles import together_profile

__all__ = [
    "AzureOpenAIProvider",
    "CerebrasProvider",
    "DeepSeekProvider",
    "FireworksProvider",
    "GroqProvider",
    "HuggingFaceProvider",
    "LMStudioProvider",
    "LlamaCppServerProvider",
    "MaxPrice",
    "MistralOpenAIProvider",
    "OllamaProvider",
    "OpenRouterProvider",
    "OpenRouterRouting",
    "TogetherProvider",
    "VLLMProvider",
    "local_url_policy",
]


class OllamaProvider(OpenAICompatibleProvider):
    """Ollama's OpenAI-compatible API; no key needed. Every model gets the local-server profile."""

    name = "ollama"
    default_base_url = "http://localhost:11434/v1"
    base_url_env = "OLLAMA_BASE_URL"
    api_key_env = "OLLAMA_API_KEY"
    local_default = True
    chat_profile_table = functools.partial(local_server_profile, server="ollama")


class VLLMProvider(OpenAICompatibleProvider):
    """A vLLM server (`vllm serve`); the key is optional (`--api-key`)."""

    name = "vllm"
    default_base_url = "http://127.0.0.1:8000/v1"
    base_url_env = "VLLM_BASE_URL"
    api_key_env = "VLLM_API_KEY"
    local_default = True
    chat_profile_table = functools.partial(local_server_profile, server="vllm")


class LlamaCppServerProvider(OpenAICompatibleProvider):
    """llama.cpp's `llama-server` (also the one `ferrule-llamacpp` embeds); the key is optional (`--api-key`)."""

    name = "llamacpp"
    default_base_url = "http://127.0.0.1:8080/v1"
    base_url_env = "LLAMACPP_BASE_URL"
    api_key_env = "LLAMACPP_API_KEY"
    local_default = True
    chat_profile_table = functools.partial(local_server_profile, server="llamacpp")


class LMStudioProvider(OpenAICompatibleProvider):
    """LM Studio's local server."""

    name = "lmstudio"
    default_base_url = "http://localhost:1234/v1"
    base_url_env = "LMSTUDIO_BASE_URL"
    auth = "none"
    local_default = True
    chat_profile_table = functools.partial(local_server_profile, server="lmstudio")


class GroqProvider(OpenAICompatibleProvider):
    """Groq's OpenAI-compatible API."""

    name = "groq"
    default_base_url = "https://api.groq.com/openai/v1"
    api_key_env = "GROQ_API_KEY"
    base_url_env = "GROQ_BASE_URL"
    key_required = True
    chat_profile_table = groq_profile


class DeepSeekProvider(OpenAICompatibleProvider):
    """DeepSeek: Chat Completions (reasoning replayed on tool turns) and its Responses endpoint."""

    name = "deepseek"
    default_base_url = "https://api.deepseek.com"
    api_key_env = "DEEPSEEK_API_KEY"
    key_required = True
    supports_responses = True
    chat_profile_table = deepseek_profile
    responses_profile_table = deepseek_responses_profile


class TogetherProvider(OpenAICompatibleProvider):
    """Together AI's OpenAI-compatible API."""

    name = "together"
    default_base_url = "https://api.together.xyz/v1"
    api_key_env = "TOGETHER_API_KEY"
    key_required = True
    chat_profile_table = together_profile


class FireworksProvider(OpenAICompatibleProvider):
    """Fireworks AI's OpenAI-compatible API."""

    name = "fireworks"
    default_base_url = "https://api.fireworks.ai/inference/v1"
    api_key_env = "FIREWORKS_API_KEY"
    key_required = True
    chat_profile_table = fireworks_profile


class CerebrasProvider(OpenAICompatibleProvider):
    """Cerebras inference's OpenAI-compatible API."""

    name = "cerebras"
    default_base_url = "https://api.cerebras.ai/v1"
    api_key_env = "CEREBRAS_API_KEY"
    key_required = True
    chat_profile_table = cerebras_profile


class MistralOpenAIProvider(OpenAICompatibleProvider):
    """Mistral's OpenAI-compatible Chat Completions endpoint (the native API is a separate provider)."""

    name = "mistral"
    default_base_url = "https://api.mistral.ai/v1"
    api_key_env = "MISTRAL_API_KEY"
    key_required = True
    chat_profile_table = mistral_profile


class HuggingFaceProvider(OpenAICompatibleProvider):
    """The Hugging Face inference router; pick an inference provider with `model:provider` or `provider=`.

    `provider="together"` routes through `https://router.huggingface.co/together/v1`.
    """

    name = "huggingface"
    default_base_url = "https://router.huggingface.co/v1"
    api_key_env = "HF_TOKEN"
    key_required = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        provider: str | None = None,
        base_url: str | None = None,
        **options: Unpack[CompatibleOptions],
    ) -> None:
        if provider is not None:
            if not re.fullmatch(r"[a-z0-9-]+", provider):
                raise UserError(
                    f"Hugging Face inference provider {provider!r} is not a valid name (lower-case letters, digits, '-')"
                )
            base_url = base_url or f"https://router.huggingface.co/{provider}/v1"
        super().__init__(base_url=base_url, api_key=api_key, **options)

    def _builtin_chat_profile(self, model_name: str) -> ChatProfile:
        return huggingface_profile(model_name.split(":", 1)[0])


# --- OpenRouter ----------------------------------------------------------------------------------

_ROUTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
Quantization = Literal["int4", "int8", "fp4", "fp6", "fp8", "fp16", "bf16", "fp32", "unknown"]


class MaxPrice(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The most OpenRouter may charge, in USD per million tokens (per request / per image where noted)."""

    prompt: float | None = None
    """Per million prompt tokens."""
    completion: float | None = None
    """Per million completion tokens."""
    request: float | None = None
    """Per request."""
    image: float | None = None
    """Per image."""

    def __post_init__(self) -> None:
        values = [self.prompt, self.completion, self.request, self.image]
        if all(v is None for v in values):
            raise UserError("MaxPrice needs at least one limit (prompt, completion, request or image)")
        for value in values:
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise UserError(f"MaxPrice limits must be finite and non-negative, not {value!r}")


class OpenRouterRouting(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """OpenRouter's provider routing preferences, sent as the request's `provider` object.

    Checked before any request: names must be well-formed, `only` and `ignore` must not overlap,
    prices and performance thresholds must be finite and non-negative.
    """

    order: list[str] | None = None
    """Upstream providers to try, in order."""
    allow_fallbacks: bool | None = None
    """Whether other providers may serve the request when the preferred ones fail."""
    require_parameters: bool | None = None
    """Only route to providers that support every request parameter."""
    data_collection: Literal["allow", "deny"] | None = None
    """Whether providers that store or train on data may be used."""
    zdr: bool | None = None
    """Only route to zero-data-retention endpoints."""
    only: list[str] | None = None
    """Allow-list of upstream providers."""
    ignore: list[str] | None = None
    """Deny-list of upstream providers."""
    quantizations: list[Quantization] | None = None
    """Accepted quantization levels."""
    sort: Literal["price", "throughput", "latency"] | None = None
    """Sort providers by this instead of load balancing."""
    max_price: MaxPrice | None = None
    """Upper price bounds."""
    preferred_min_throughput: float | None = None
    """Preferred minimum throughput, tokens per second."""
    preferred_max_latency: float | None = None
    """Preferred maximum latency, seconds."""

    def __post_init__(self) -> None:
        for field in ("order", "only", "ignore"):
            names: list[str] | None = getattr(self, field)
            if names is None:
                continue
            if not names:
                raise UserError(f"OpenRouterRouting.{field} is empty; leave it unset instead")
            for name in names:
                if not _ROUTER_NAME.fullmatch(name):
                    raise UserError(f"OpenRouterRouting.{field} has an invalid provider name {name!r}")
        if self.only and self.ignore:
            both = sorted(set(self.only) & set(self.ignore))
            if both:
                raise UserError(f"OpenRouterRouting lists {', '.join(both)} in both only and ignore")
        if self.quantizations is not None and not self.quantizations:
            raise UserError("OpenRouterRouting.quantizations is empty; leave it unset instead")
        for field in ("preferred_min_throughput", "preferred_max_latency"):
            value: float | None = getattr(self, field)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise UserError(f"OpenRouterRouting.{field} must be finite and non-negative, not {value!r}")

    def to_json(self) -> dict[str, object]:
        """The `provider` object of the request body."""
        return msgspec.to_builtins(self)


class OpenRouterProvider(OpenAICompatibleProvider):
    """OpenRouter: one key for many upstream models (`vendor/model`), Chat Completions dialect.

    `app_url` and `app_title` become OpenRouter's `HTTP-Referer` and `X-Title` attribution headers.
    Routing preferences are typed ([`OpenRouterRouting`][ferrule.providers.openai.compatible.OpenRouterRouting])
    and set on the model: `OpenAIChatModel(..., routing=OpenRouterRouting(...))`.
    """

    name = "openrouter"
    default_base_url = "https://openrouter.ai/api/v1"
    api_key_env = "OPENROUTER_API_KEY"
    key_required = True
    chat_profile_table = openrouter_profile

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        app_url: str | None = None,
        app_title: str | None = None,
        **options: Unpack[CompatibleOptions],
    ) -> None:
        add_headers(options, {"http-referer": app_url, "x-title": app_title})
        super().__init__(base_url=base_url, api_key=api_key, **options)


# --- Azure ---------------------------------------------------------------------------------------

_DEPLOYMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_V1_VERSIONS = frozenset({"v1", "preview", "latest"})


class AzureOpenAIProvider(OpenAICompatibleProvider):
    """Azure OpenAI: `api-key` authentication, Responses and Chat Completions on your deployments.

    `endpoint` is the resource root (`https://<resource>.openai.azure.com`, or `AZURE_OPENAI_ENDPOINT`);
    the model name is the deployment name. Without `api_version` (or with `"preview"`) requests go
    to the GA v1 API (`<endpoint>/openai/v1/...`); a dated `api_version` such as `"2024-10-21"`
    (or `OPENAI_API_VERSION`) selects the deployment URLs
    (`<endpoint>/openai/deployments/<deployment>/chat/completions?api-version=...`).
    Deployments named after an OpenAI model get that model's profile; other names fail closed
    unless `profile_lookup` maps them.
    """

    name = "azure"
    api_key_env = "AZURE_OPENAI_API_KEY"
    auth = "api-key"
    key_required = True
    supports_responses = True
    chat_profile_table = azure_chat_profile
    responses_profile_table = azure_responses_profile

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        **options: Unpack[CompatibleOptions],
    ) -> None:
        endpoint = endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or None
        if not endpoint:
            raise UserError(
                "AzureOpenAIProvider needs endpoint=... or the AZURE_OPENAI_ENDPOINT environment variable"
            )
        api_version = api_version or os.environ.get("OPENAI_API_VERSION") or None
        self.api_version: str | None = api_version
        """The `api-version` query parameter, or `None` for the GA v1 API."""
        self._v1 = api_version is None or api_version in _V1_VERSIONS
        root = endpoint.rstrip("/")
        for suffix in ("/openai/v1", "/openai"):
            if root.endswith(suffix):
                root = root[: -len(suffix)]
        base_url = f"{root}/openai/v1" if self._v1 else f"{root}/openai"
        super().__init__(base_url=base_url, api_key=api_key, **options)

    def _params(self) -> dict[str, str] | None:
        return {"api-version": self.api_version} if self.api_version else None

    def endpoint(
        self, api: Literal["chat", "responses"], model_name: str
    ) -> tuple[str, dict[str, str] | None]:
        if self._v1:
            return ("/chat/completions" if api == "chat" else "/responses"), self._params()
        if api == "responses":
            return "/responses", self._params()
        if not _DEPLOYMENT.fullmatch(model_name):
            raise UserError(
                f"Azure deployment name {model_name!r} is not valid (letters, digits, '.', '_', '-')"
            )
        return f"/deployments/{model_name}/chat/completions", self._params()

    def models_endpoint(self) -> tuple[str, dict[str, str] | None]:
        return "/models", self._params()
