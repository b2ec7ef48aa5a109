"""`OpenAIProvider` and the base every OpenAI-compatible provider shares (internal module)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import Unpack

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import MissingCredentialError
from ferrule.core.errors import UserError
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import Provider
from ferrule.core.provider import ProviderOptions
from ferrule.core.provider import redacts_errors
from ferrule.core.url_policy import UrlPolicy

from ._common import as_dict
from ._common import as_list
from ._common import as_str
from ._common import timestamp
from .profiles import ChatProfile
from .profiles import ProfileLookup
from .profiles import ProfileOverride
from .profiles import ResponsesProfile
from .profiles import generic_profile
from .profiles import openai_chat_profile
from .profiles import openai_responses_profile
from .profiles import resolve

__all__ = [
    "DEFAULT_MAX_MODELS",
    "CompatibleOptions",
    "DiscoveredModel",
    "OpenAICompatibleProvider",
    "OpenAIProvider",
    "local_url_policy",
]

AuthStyle = Literal["bearer", "api-key", "none"]

DEFAULT_MAX_MODELS = 10_000
"""Most models `list_models` accepts from one listing before failing (a hostile endpoint cannot grow it)."""


class DiscoveredModel(msgspec.Struct, frozen=True, kw_only=True):
    """One model as listed by a provider's `/models` endpoint: untrusted metadata, never a profile."""

    id: str
    """The model ID to pass as `model_name`."""
    owned_by: str | None = None
    """The organisation the provider says owns the model."""
    created: datetime | None = None
    """When the provider says the model was created."""
    raw: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """The provider's whole entry, uninterpreted (capabilities in it are not trusted by ferrule)."""


def local_url_policy(base_url: str) -> UrlPolicy:
    """A URL policy that allows exactly `base_url`'s origin, for a server on this machine or network."""
    import httpx2  # parsed on first use: importing the package does not load the HTTP client

    parsed = httpx2.URL(base_url)
    port = parsed.port if parsed.port is not None else (443 if parsed.scheme == "https" else 80)
    host = parsed.raw_host.decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    return UrlPolicy.local(f"{parsed.scheme}://{host}:{port}")


class CompatibleOptions(ProviderOptions, total=False):
    """The options every OpenAI-compatible provider takes besides its root and key (see `ProviderOptions`)."""

    profile_lookup: ProfileLookup | None
    """The application's profile table, consulted before the built-in one."""
    profile_override: ProfileOverride | None
    """The application's last word on every resolved profile."""


def add_headers(options: CompatibleOptions, headers: dict[str, str | None]) -> None:
    """Set `options["headers"]` to the caller's headers followed by each of `headers` that is set.

    For a provider whose own keyword arguments become fixed headers (OpenAI's organization and
    project, OpenRouter's attribution); a copy, so the caller's mapping is left as it was.
    """
    fixed = dict(options.get("headers") or {})
    for header, value in headers.items():
        if value:
            fixed[header] = value
    options["headers"] = fixed


class OpenAICompatibleProvider(Provider):
    """A server that speaks OpenAI's Chat Completions (and possibly Responses) API.

    Use it directly for any endpoint ferrule has no named provider for:
    `OpenAICompatibleProvider(base_url="https://llm.example.com/v1", api_key=...)`. Its models get
    the fail-closed profile unless `profile_lookup` says otherwise, because an arbitrary endpoint
    has no identity to resolve capabilities against. Named providers subclass it with their root,
    authentication style, environment variable and profile table.
    """

    name: str = "openai-compatible"
    """The provider's name, recorded on responses and used to decide what may be replayed to it."""
    default_base_url: ClassVar[str | None] = None
    """The API root used when none is given."""
    api_key_env: ClassVar[str | None] = None
    """The environment variable that holds the API key."""
    base_url_env: ClassVar[str | None] = None
    """The environment variable that may override the API root."""
    auth: ClassVar[AuthStyle] = "bearer"
    """How the key is sent: `Authorization: Bearer`, Azure's `api-key` header, or not at all."""
    key_required: ClassVar[bool] = False
    """Whether a missing API key is an error (hosted services) or fine (local servers)."""
    local_default: ClassVar[bool] = False
    """The default root is a local server, allowed by a policy for exactly its origin."""
    supports_responses: ClassVar[bool] = False
    """Whether the provider serves the Responses API."""
    chat_profile_table: ClassVar[Callable[[str], ChatProfile]] = generic_profile
    """The provider's own family table: a model name's built-in profile and Chat Completions dialect."""
    responses_profile_table: ClassVar[Callable[[str], ResponsesProfile] | None] = None
    """The family table of the Responses API; `None` takes the chat table's profiles."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        profile_lookup: ProfileLookup | None = None,
        profile_override: ProfileOverride | None = None,
        name: str | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        if name is not None:
            self.name = name
        if base_url is None and self.base_url_env:
            base_url = os.environ.get(self.base_url_env) or None
        if base_url is None:
            base_url = self.default_base_url
        if base_url is None:
            hint = f" or set {self.base_url_env}" if self.base_url_env else ""
            raise UserError(f"{type(self).__name__} needs base_url{hint}")
        if api_key is None and self.api_key_env:
            api_key = os.environ.get(self.api_key_env) or None
        if api_key is None and self.key_required and self.auth != "none":
            raise MissingCredentialError(
                f"{type(self).__name__} needs an API key: pass api_key=... or set the {self.api_key_env} "
                "environment variable",
                env_vars=(self.api_key_env,) if self.api_key_env else (),
            )
        if options.get("url_policy") is None and self.local_default and base_url == self.default_base_url:
            # The built-in local root is allowed for exactly its origin; any other root must be
            # allowed by the application's own policy.
            options["url_policy"] = local_url_policy(base_url)
        super().__init__(base_url=base_url, api_key=api_key, **options)
        self.profile_lookup: ProfileLookup | None = profile_lookup
        """The application's profile table, consulted before the built-in one."""
        self.profile_override: ProfileOverride | None = profile_override
        """The application's last word on every resolved profile."""

    # -- authentication and errors ---------------------------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        if not self._api_key or self.auth == "none":
            return {}
        if self.auth == "api-key":
            return {"api-key": self._api_key}
        return {"authorization": f"Bearer {self._api_key}"}

    def _classify_error(self, status: int, code: str | None, message: str | None) -> ErrorCategory | None:
        del message
        lowered = (code or "").lower()
        if status == 429 and lowered == "insufficient_quota":
            # Out of credit: retrying cannot help, unlike a real rate limit.
            return ErrorCategory.BAD_REQUEST
        if 400 <= status < 500 and lowered in ("content_filter", "content_policy_violation"):
            return ErrorCategory.CONTENT_FILTER
        return None

    # -- profiles --------------------------------------------------------------------------------

    def _builtin_chat_profile(self, model_name: str) -> ChatProfile:
        """The built-in entry for `model_name`; `chat_profile_table` unless a subclass overrides this."""
        return type(self).chat_profile_table(model_name)

    def _builtin_responses_profile(self, model_name: str) -> ResponsesProfile:
        table = type(self).responses_profile_table
        if table is not None:
            return table(model_name)
        return ResponsesProfile(profile=self._builtin_chat_profile(model_name).profile)

    def _resolve(self, model_name: str, builtin: ModelProfile) -> ModelProfile:
        """The built-in profile after the application's `profile_lookup` and `profile_override`."""
        return resolve(
            model_name, builtin, known=True, lookup=self.profile_lookup, override=self.profile_override
        )

    def chat_profile(self, model_name: str) -> ChatProfile:
        """The resolved profile and Chat Completions dialect of `model_name` on this provider."""
        builtin = self._builtin_chat_profile(model_name)
        return ChatProfile(profile=self._resolve(model_name, builtin.profile), dialect=builtin.dialect)

    def responses_profile(self, model_name: str) -> ResponsesProfile:
        """The resolved profile and Responses dialect of `model_name`; fails when there is no Responses API."""
        if not self.supports_responses:
            raise UserError(f"{self.name} has no Responses API; use OpenAIChatModel with this provider")
        builtin = self._builtin_responses_profile(model_name)
        return ResponsesProfile(profile=self._resolve(model_name, builtin.profile), dialect=builtin.dialect)

    # -- endpoints -------------------------------------------------------------------------------

    def endpoint(
        self, api: Literal["chat", "responses"], model_name: str
    ) -> tuple[str, dict[str, str] | None]:
        """The path (relative to `base_url`) and query parameters of an API for `model_name`."""
        del model_name
        return ("/chat/completions" if api == "chat" else "/responses"), None

    def models_endpoint(self) -> tuple[str, dict[str, str] | None]:
        """The path and query parameters of the model listing."""
        return "/models", None

    # -- discovery -------------------------------------------------------------------------------

    @redacts_errors
    async def list_models(self, *, max_models: int = DEFAULT_MAX_MODELS) -> list[DiscoveredModel]:
        """The models this endpoint lists (`GET /models`), parsed within bounds.

        Entries are untrusted metadata: they never widen a model's profile. Raises
        `ResponseDecodeError` for a malformed listing or one with more than `max_models` entries.
        """
        path, params = self.models_endpoint()
        response = await self.request("GET", path, params=params)
        return parse_model_list(response.content, max_models=max_models, provider_name=self.name)


def parse_model_list(
    body: bytes, *, max_models: int = DEFAULT_MAX_MODELS, provider_name: str | None = None
) -> list[DiscoveredModel]:
    """Parse an OpenAI-style model listing (`{"data": [...]}` or a bare list) within bounds."""
    from ferrule.core.errors import ResponseDecodeError

    limits = msgspec.structs.replace(
        bounded_json.PROVIDER_RESPONSE, max_items=max(max_models, 64), name="model_list"
    )
    document: object = bounded_json.decode_provider_json(body, object, limits, "the model listing")
    if isinstance(document, dict):
        info = as_dict(document)
        raw_entries: object = (
            info.get("data") if "data" in info else info.get("models")
        )  # Ollama's native shape
    else:
        raw_entries = document
    if not isinstance(raw_entries, list):
        raise ResponseDecodeError("the model listing has no list of models", provider_name=provider_name)
    entries = as_list(raw_entries)
    if len(entries) > max_models:
        raise ResponseDecodeError(
            f"the model listing has {len(entries)} entries, more than max_models={max_models}",
            provider_name=provider_name,
        )
    models: list[DiscoveredModel] = []
    seen: set[str] = set()
    for entry in entries:
        info = as_dict(entry)
        model_id = as_str(info.get("id")) or as_str(info.get("name")) or as_str(info.get("model"))
        if not model_id or model_id in seen:
            continue
        seen.add(model_id)
        models.append(
            DiscoveredModel(
                id=model_id,
                owned_by=as_str(info.get("owned_by")),
                created=timestamp(info.get("created")),
                raw=info,
            )
        )
    return models


class OpenAIProvider(OpenAICompatibleProvider):
    """OpenAI: `https://api.openai.com/v1`, bearer key from `OPENAI_API_KEY`, Responses and Chat Completions.

    `organization` and `project` become the `OpenAI-Organization` / `OpenAI-Project` headers.
    `base_url` (or `OPENAI_BASE_URL`) points it at another root that serves OpenAI's models
    unchanged (a proxy); for other servers use a named compatible provider instead.
    """

    name = "openai"
    default_base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    key_required = True
    supports_responses = True
    chat_profile_table = openai_chat_profile
    responses_profile_table = openai_responses_profile

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        **options: Unpack[CompatibleOptions],
    ) -> None:
        if organization is None:
            organization = os.environ.get("OPENAI_ORG_ID") or None
        if project is None:
            project = os.environ.get("OPENAI_PROJECT_ID") or None
        add_headers(options, {"openai-organization": organization, "openai-project": project})
        super().__init__(base_url=base_url, api_key=api_key, **options)
