"""The Gemini API and Vertex AI providers: credentials, roots, resource paths, files and discovery."""

from __future__ import annotations

import os
import re
from typing import Any
from typing import Final
from typing import Literal
from typing import NoReturn
from typing import Unpack
from urllib.parse import quote

import httpx2
import msgspec

from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import MissingCredentialError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import UploadedFile
from ferrule.core.profile import ModelProfile
from ferrule.core.provider import Provider
from ferrule.core.provider import ProviderOptions
from ferrule.core.provider import redacts_errors
from ferrule.core.url_policy import redact_url
from ferrule.core.url_policy import url_origin

from ._decode import STATUS_CATEGORIES
from ._decode import category_for_status
from ._files import DiscoveryLimits
from ._files import FileLimits
from ._files import GoogleFile
from ._files import GoogleModelInfo
from ._files import ModelList
from ._files import check_delete_ack
from ._files import check_media_type
from ._files import file_name_of
from ._files import parse_file_body
from ._files import parse_model_page
from ._files import parse_upload_result

__all__ = [
    "GEMINI_API_KEY_VARS",
    "GEMINI_BASE_URL",
    "GEMINI_UPLOAD_URL",
    "VERTEX_TOKEN_VAR",
    "GoogleProvider",
    "GoogleProviderBase",
    "VertexAIProvider",
    "regional_api_base",
]

GEMINI_BASE_URL: Final = "https://generativelanguage.googleapis.com/v1beta"
"""The Gemini API's versioned root."""
GEMINI_UPLOAD_URL: Final = "https://generativelanguage.googleapis.com/upload/v1beta"
"""The Gemini API's upload root (a separate authenticated configuration)."""
GEMINI_API_KEY_VARS: Final = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Environment variables read for the Gemini API key, in order."""
VERTEX_TOKEN_VAR: Final = "GOOGLE_CLOUD_ACCESS_TOKEN"
"""Environment variable read for a Vertex AI access token."""

_MODEL_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
_PROJECT = re.compile(r"(?:[a-z][a-z0-9.-]{0,62}:)?[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_LOCATION = re.compile(r"[a-z][a-z0-9-]{0,62}")
_PUBLISHER = re.compile(r"[a-z][a-z0-9-]{0,62}")
_API_VERSION = re.compile(r"v\d+(?:(?:alpha|beta)\d*)?")
_METHODS: Final = frozenset({"generateContent", "streamGenerateContent", "countTokens"})


class GoogleProviderBase(Provider):
    """What the Gemini model client needs from either Google provider."""

    file_urls: Literal["any", "youtube"] = "youtube"
    """Which URLs requests may reference as `fileData`."""
    uploaded_file_provider: str | None = None
    """The provider whose uploaded files requests may reference."""
    server_side_tool_invocations: bool = False
    """The endpoint accepts `toolConfig.includeServerSideToolInvocations`."""

    def model_path(self, model_name: str, method: str) -> str:
        """The path (relative to `base_url`) of `method` on `model_name`, validated before any I/O."""
        raise NotImplementedError

    def adjust_profile(self, profile: ModelProfile) -> ModelProfile:
        """The family profile as this endpoint serves it."""
        return profile

    def _classify_error(self, status: int, code: str | None, message: str | None) -> ErrorCategory | None:
        if code in STATUS_CATEGORIES or (message and "API key" in message):
            category = category_for_status(code, status, message)
            # An HTTP 429 stays a rate limit and a 5xx a server error whatever the body says.
            if status == 429 or status >= 500:
                return None if category is ErrorCategory.BAD_REQUEST else category
            return category
        return None

    def _retry_after_from_body(self, status: int, body: bytes) -> float | None:
        return retry_delay_from_body(body) if status == 429 or status >= 500 else None

    @staticmethod
    def _check_method(method: str) -> None:
        if method not in _METHODS:
            raise UserError(f"{method!r} is not a GenerateContent method ({', '.join(sorted(_METHODS))})")


class _ErrorDetails(msgspec.Struct):
    details: list[dict[str, Any]] = msgspec.field(default_factory=list[dict[str, Any]])


class _ErrorEnvelope(msgspec.Struct):
    error: _ErrorDetails | None = None


_RETRY_DELAY = re.compile(r"(\d+(?:\.\d+)?)s")
_ENVELOPE_DECODER = msgspec.json.Decoder(_ErrorEnvelope)


def retry_delay_from_body(body: bytes) -> float | None:
    """Seconds from a `google.rpc.RetryInfo` `retryDelay` (e.g. `"27s"`) in an error body, if present."""
    try:
        envelope = _ENVELOPE_DECODER.decode(body)
    except msgspec.DecodeError:  # malformed or not the documented shape: no hint
        return None
    if envelope.error is None:
        return None
    for detail in envelope.error.details:
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and (match := _RETRY_DELAY.fullmatch(delay.strip())):
            return float(match.group(1))
    return None


def _model_id(model_name: str, what: str = "model") -> str:
    name = model_name.removeprefix("models/")
    if not _MODEL_SEGMENT.fullmatch(name):
        raise UserError(
            f"{model_name!r} is not a valid Gemini {what} ID: use letters, digits, '.', '-', '_' and '@' "
            "(at most 128 characters), e.g. 'gemini-2.5-flash'"
        )
    return name


class GoogleProvider(GoogleProviderBase):
    """The Gemini API (Google AI Studio): `x-goog-api-key`, versioned root, separate upload root.

    The key comes from `api_key` or the `GEMINI_API_KEY` / `GOOGLE_API_KEY` environment variables.
    Besides inference it offers the Files API (resumable upload, inspection, deletion; downloading
    is not allowed by the API) and model discovery.
    """

    name = "google-gla"
    file_urls: Literal["any", "youtube"] = "youtube"
    uploaded_file_provider: str | None = "google-gla"
    server_side_tool_invocations = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = GEMINI_BASE_URL,
        upload_url: str = GEMINI_UPLOAD_URL,
        file_limits: FileLimits | None = None,
        discovery_limits: DiscoveryLimits | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        if api_key is None:
            api_key = next((os.environ[v] for v in GEMINI_API_KEY_VARS if os.environ.get(v)), None)
        if not api_key:
            raise MissingCredentialError(
                "no Gemini API key: pass api_key= or set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable",
                env_vars=tuple(GEMINI_API_KEY_VARS),
            )
        super().__init__(base_url=base_url, api_key=api_key, **options)
        upload = self.url_policy.check(upload_url)
        if upload.query or upload.fragment:
            raise ValueError(f"upload_url {redact_url(upload)!r} must not have a query or fragment")
        self.upload_url: str = str(upload).rstrip("/")
        """The upload root; upload session URLs must have its scheme, host and port."""
        self._upload_origin = url_origin(upload)
        self._upload_prefix = upload.raw_path.decode("ascii").rstrip("/")
        # The upload root is its own authenticated configuration on its own origin-bound client.
        upload_options: ProviderOptions = {**options, "url_policy": self.url_policy}
        self._uploads = _UploadTransport(base_url=self._upload_origin, api_key=api_key, **upload_options)
        self.file_limits: FileLimits = file_limits or FileLimits()
        """Bounds checked before a Files API request."""
        self.discovery_limits: DiscoveryLimits = discovery_limits or DiscoveryLimits()
        """Bounds of `list_models`."""

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def model_path(self, model_name: str, method: str) -> str:
        self._check_method(method)
        if model_name.startswith("tunedModels/"):
            return f"tunedModels/{_model_id(model_name.removeprefix('tunedModels/'), 'tuned model')}:{method}"
        return f"models/{_model_id(model_name)}:{method}"

    async def aclose(self) -> None:
        await super().aclose()
        await self._uploads.aclose()

    # -- files ------------------------------------------------------------------------------------

    @redacts_errors
    async def upload_file(
        self,
        data: bytes,
        *,
        media_type: str,
        display_name: str | None = None,
        deadline: float | None = None,
    ) -> GoogleFile:
        """Upload `data` with the resumable protocol and return the stored file's record.

        The start request returns the session URL in `x-goog-upload-url`; it is used only when its
        scheme, host and effective port equal the configured upload root's, so a response can never
        redirect the file (or the API key) elsewhere.
        """
        limits = self.file_limits
        if len(data) > limits.max_upload_bytes:
            raise UserError(
                f"the file is {len(data)} bytes; FileLimits.max_upload_bytes is {limits.max_upload_bytes}"
            )
        if not data:
            raise UserError("cannot upload an empty file")
        check_media_type(media_type)
        metadata: dict[str, Any] = {}
        if display_name is not None:
            if len(display_name) > limits.max_display_name_chars:
                raise UserError(
                    f"display_name has {len(display_name)} characters; the limit is {limits.max_display_name_chars}"
                )
            metadata["displayName"] = display_name
        start = await self._uploads.request(
            "POST",
            f"{self._upload_prefix}/files",
            content=msgspec.json.encode({"file": metadata}),
            headers={
                "x-goog-upload-protocol": "resumable",
                "x-goog-upload-command": "start",
                "x-goog-upload-header-content-length": str(len(data)),
                "x-goog-upload-header-content-type": media_type,
                "content-type": "application/json",
            },
            deadline=deadline,
        )
        session = self._session_path(start.headers.get("x-goog-upload-url"))
        finished = await self._uploads.request(
            "POST",
            session,
            content=data,
            headers={
                "x-goog-upload-command": "upload, finalize",
                "x-goog-upload-offset": "0",
                "content-type": media_type,
            },
            deadline=deadline,
        )
        record = parse_upload_result(finished.content, self.name)
        if record.size_bytes is not None and record.size_bytes != len(data):
            raise ResponseDecodeError(
                f"Gemini stored {record.size_bytes} bytes of a {len(data)}-byte upload",
                provider_name=self.name,
            )
        return record

    def _session_path(self, session_url: str | None) -> str:
        if not session_url:
            raise ResponseDecodeError(
                "the upload start response has no x-goog-upload-url header", provider_name=self.name
            )
        try:
            parsed = httpx2.URL(session_url)
        except (httpx2.InvalidURL, TypeError, ValueError):
            raise ResponseDecodeError(
                "the upload session URL is not a valid URL", provider_name=self.name
            ) from None
        if not parsed.scheme or not parsed.raw_host or url_origin(parsed) != self._upload_origin:
            raise ResponseDecodeError(
                f"the upload session URL {redact_url(parsed)!r} is not on the configured upload origin "
                f"{self._upload_origin}; refusing to send the file there",
                provider_name=self.name,
                details={"kind": "upload_session_url"},
            )
        path = parsed.raw_path.decode("ascii")
        return path

    @redacts_errors
    async def inspect_file(
        self, file: GoogleFile | UploadedFile | str, *, deadline: float | None = None
    ) -> GoogleFile:
        """The current record of a stored file (its `state` says when a video is ready)."""
        name = file_name_of(file, self.name)
        response = await self.request("GET", quote(name, safe="/"), deadline=deadline)
        record = parse_file_body(response.content, self.name)
        if record.name != name:
            raise ResponseDecodeError(
                f"asked for {name!r} but Gemini described {record.name!r}", provider_name=self.name
            )
        return record

    @redacts_errors
    async def delete_file(
        self, file: GoogleFile | UploadedFile | str, *, deadline: float | None = None
    ) -> None:
        """Delete a stored file."""
        name = file_name_of(file, self.name)
        response = await self.request("DELETE", quote(name, safe="/"), deadline=deadline)
        check_delete_ack(response.content, self.name)

    async def download_file(self, file: GoogleFile | UploadedFile | str) -> NoReturn:
        """Not available: the Gemini Files API does not let clients download stored files."""
        file_name_of(file, self.name)
        raise UnsupportedFeatureError(
            "downloading stored files",
            model=self.name,
            hint="the Gemini Files API forbids it; keep your own copy of what you upload",
        )

    # -- discovery --------------------------------------------------------------------------------

    @redacts_errors
    async def list_models(self, *, deadline: float | None = None) -> ModelList:
        """The models this key can use, following pages within `discovery_limits`."""
        limits = self.discovery_limits
        models: list[GoogleModelInfo] = []
        token: str | None = None
        for _ in range(limits.max_pages):
            params: dict[str, str | int] = {"pageSize": limits.page_size}
            if token:
                params["pageToken"] = token
            response = await self.request("GET", "models", params=params, deadline=deadline)
            page, token = parse_model_page(response.content, self.name)
            room = limits.max_models - len(models)
            if len(page) > room:
                models.extend(page[:room])
                return ModelList(models=models, truncated=True)
            models.extend(page)
            if token is None:
                return ModelList(models=models)
        return ModelList(models=models, truncated=True)


class _UploadTransport(GoogleProviderBase):
    """The upload root's HTTP configuration (same key, own origin-bound client)."""

    name = "google-gla"

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}


def regional_api_base(location: str) -> str:
    """The Vertex AI API root for `location`: the global endpoint for `"global"`, else the regional one."""
    if not _LOCATION.fullmatch(location):
        raise UserError(
            f"{location!r} is not a Vertex AI location (e.g. 'us-central1', 'europe-west4', 'global')"
        )
    if location == "global":
        return "https://aiplatform.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


class VertexAIProvider(GoogleProviderBase):
    """Vertex AI: a bearer access token, a project and a location (global or regional root).

    The token comes from `access_token` or `GOOGLE_CLOUD_ACCESS_TOKEN` (e.g. the output of
    `gcloud auth print-access-token`); tokens expire, so create a new provider after refreshing.
    Project and location default to `GOOGLE_CLOUD_PROJECT` and `GOOGLE_CLOUD_LOCATION` (else
    `"global"`). Every resource segment is validated before any request. Vertex has no Gemini Files
    API: reference `gs://` or `https://` URLs instead.
    """

    name = "google-vertex"
    file_urls: Literal["any", "youtube"] = "any"
    uploaded_file_provider: str | None = None
    server_side_tool_invocations = False

    def __init__(
        self,
        *,
        access_token: str | None = None,
        project: str | None = None,
        location: str | None = None,
        publisher: str = "google",
        api_version: str = "v1",
        base_url: str | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        token = access_token if access_token is not None else os.environ.get(VERTEX_TOKEN_VAR)
        if not token:
            raise MissingCredentialError(
                f"no Vertex AI access token: pass access_token= or set {VERTEX_TOKEN_VAR} "
                "(e.g. to the output of `gcloud auth print-access-token`)",
                env_vars=(VERTEX_TOKEN_VAR,),
            )
        project = project if project is not None else os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise UserError("no Vertex AI project: pass project= or set GOOGLE_CLOUD_PROJECT")
        if not _PROJECT.fullmatch(project):
            raise UserError(f"{project!r} is not a Google Cloud project ID")
        location = location if location is not None else os.environ.get("GOOGLE_CLOUD_LOCATION") or "global"
        root = regional_api_base(location)
        if not _PUBLISHER.fullmatch(publisher):
            raise UserError(f"{publisher!r} is not a Vertex AI publisher (e.g. 'google')")
        if not _API_VERSION.fullmatch(api_version):
            raise UserError(f"{api_version!r} is not a Vertex AI API version (e.g. 'v1', 'v1beta1')")
        self.project: str = project
        """The Google Cloud project."""
        self.location: str = location
        """The Vertex AI location (`"global"` or a region)."""
        self.publisher: str = publisher
        """The model publisher (`"google"` for Gemini)."""
        super().__init__(base_url=base_url or f"{root}/{api_version}", api_key=token, **options)

    def model_path(self, model_name: str, method: str) -> str:
        self._check_method(method)
        model = _model_id(model_name.removeprefix(f"publishers/{self.publisher}/models/"))
        return f"projects/{self.project}/locations/{self.location}/publishers/{self.publisher}/models/{model}:{method}"

    def adjust_profile(self, profile: ModelProfile) -> ModelProfile:
        # No Files API on Vertex; token log probabilities are served for every Gemini model there.
        kinds = profile.content_kinds - {"uploaded-file"}
        settings = profile.supported_settings
        if profile.supports_tools:
            settings = settings | {"logprobs", "top_logprobs"}
        return msgspec.structs.replace(profile, content_kinds=kinds, supported_settings=settings)

    @redacts_errors
    async def list_models(self, *, deadline: float | None = None) -> NoReturn:
        """Not available here: Vertex AI's model garden is not the Gemini model list."""
        del deadline
        raise UnsupportedFeatureError(
            "model discovery", model=self.name, hint="use GoogleProvider.list_models or the Vertex AI console"
        )
