"""The Anthropic provider: credential, API root, version header, HTTP client, Files API, model list."""

from __future__ import annotations

import mimetypes
import os
import re
import secrets
import urllib.parse
from collections.abc import Mapping
from typing import Any
from typing import Final
from typing import Unpack
from typing import cast

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import MissingCredentialError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UserError
from ferrule.core.http import HttpResponse
from ferrule.core.messages import UploadedFile
from ferrule.core.provider import Provider
from ferrule.core.provider import ProviderOptions
from ferrule.core.provider import redacts_errors

from ._decode import ERROR_CATEGORIES
from ._encode import BETA_FILES_API
from ._encode import PROVIDER_NAME

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_API_VERSION",
    "DEFAULT_BASE_URL",
    "AnthropicFile",
    "AnthropicModelInfo",
    "AnthropicProvider",
    "DiscoveryLimits",
    "FileLimits",
    "FileNotDownloadableError",
]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
"""The public API root."""
DEFAULT_API_VERSION: Final = "2023-06-01"
"""The `anthropic-version` header sent with every request."""
API_KEY_ENV: Final = "ANTHROPIC_API_KEY"
"""The environment variable the API key is read from when none is passed."""
BASE_URL_ENV: Final = "ANTHROPIC_BASE_URL"
"""The environment variable that overrides the API root when no `base_url` is passed."""

_MEDIA_TYPE = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,127}/[A-Za-z0-9!#$&^_.+-]{1,127}")
_FORBIDDEN_HEADERS: Final = frozenset({"x-api-key", "authorization", "proxy-authorization"})


class FileLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on Files API uploads, checked before any network I/O."""

    max_upload_bytes: int = 500 * 1024 * 1024
    """Largest file uploaded (the API's documented maximum is 500 MB)."""
    max_filename_bytes: int = 255
    """Longest file name, in UTF-8 bytes."""


class DiscoveryLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on paginated listings (models, files)."""

    max_pages: int = 20
    """Most pages requested."""
    max_items: int = 10_000
    """Most items returned; listing stops with an error past it rather than growing without bound."""
    page_size: int = 1000
    """Items asked for per page (the API allows 1 to 1000)."""


class FileNotDownloadableError(UserError):
    """The file's content cannot be downloaded: Anthropic only allows it for files a tool created."""


class AnthropicFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file stored by the Anthropic Files API."""

    id: str
    """The file's ID (`file_...`)."""
    filename: str
    """The name it was uploaded with."""
    mime_type: str
    """Its media type."""
    size_bytes: int
    """Its size in bytes."""
    created_at: str | None = None
    """When it was created (RFC 3339)."""
    downloadable: bool = False
    """Whether its content can be downloaded (only files created by tools can)."""
    provider_name: str = PROVIDER_NAME
    """The provider that stores it."""

    def uploaded_file(self) -> UploadedFile:
        """The handle to put in a prompt (`UserPromptPart` content) or pass back to this provider."""
        return UploadedFile(file_id=self.id, provider_name=self.provider_name, media_type=self.mime_type)


class AnthropicModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A model the API key can use, as listed by `GET /v1/models` (untrusted metadata)."""

    id: str
    """The model ID to pass to `AnthropicModel`."""
    display_name: str | None = None
    """A human-readable name."""
    created_at: str | None = None
    """When the model was released (RFC 3339)."""
    raw: dict[str, Any] = msgspec.field(default_factory=lambda: cast("dict[str, Any]", {}))
    """The provider's descriptor, unchanged; never used to widen a profile."""


class _FileRecord(msgspec.Struct):
    id: str
    filename: str = ""
    mime_type: str = "application/octet-stream"
    size_bytes: int = 0
    created_at: str | None = None
    downloadable: bool = False
    type: str = "file"


class _Page(msgspec.Struct):
    data: list[dict[str, Any]]
    has_more: bool = False
    last_id: str | None = None


class _Deleted(msgspec.Struct):
    id: str
    type: str = ""


class AnthropicProvider(Provider):
    """Connection to the Anthropic API: `x-api-key` authentication, `anthropic-version`, the API root.

    The key comes from `api_key` or the `ANTHROPIC_API_KEY` environment variable; it is sent only
    as `x-api-key` and never appears in messages, logs or `repr`. Beta features are requested per
    call by the model client (`anthropic-beta`) only when a request needs them.
    """

    name = PROVIDER_NAME

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_version: str = DEFAULT_API_VERSION,
        file_limits: FileLimits | None = None,
        discovery_limits: DiscoveryLimits | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        if not key:
            raise MissingCredentialError(
                f"no Anthropic API key: set the {API_KEY_ENV} environment variable or pass "
                "AnthropicProvider(api_key=...)",
                env_vars=(API_KEY_ENV,),
            )
        fixed = {"anthropic-version": api_version}
        for name, value in (options.get("headers") or {}).items():
            if name.lower() in _FORBIDDEN_HEADERS:
                raise UserError(f"pass the credential as api_key, not as the {name!r} header")
            fixed[name.lower()] = value
        options["headers"] = fixed
        super().__init__(
            base_url=base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL, api_key=key, **options
        )
        self.file_limits: FileLimits = file_limits or FileLimits()
        """Bounds on uploads."""
        self.discovery_limits: DiscoveryLimits = discovery_limits or DiscoveryLimits()
        """Bounds on model and file listings."""

    def _auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key} if self._api_key else {}

    def _classify_error(self, status: int, code: str | None, message: str | None) -> ErrorCategory | None:
        del status, message
        return ERROR_CATEGORIES.get(code) if code else None

    # -- model discovery --------------------------------------------------------------------------

    @redacts_errors
    async def list_models(self) -> list[AnthropicModelInfo]:
        """The models this API key can use (`GET /v1/models`, every page within `discovery_limits`)."""
        models: list[AnthropicModelInfo] = []
        for item in await self._list("/v1/models"):
            model_id = item.get("id")
            if not isinstance(model_id, str) or not model_id:
                raise self._bad_response("a model descriptor has no id")
            display = item.get("display_name")
            created = item.get("created_at")
            models.append(
                AnthropicModelInfo(
                    id=model_id,
                    display_name=display if isinstance(display, str) else None,
                    created_at=created if isinstance(created, str) else None,
                    raw=item,
                )
            )
        return models

    # -- Files API --------------------------------------------------------------------------------

    @redacts_errors
    async def upload_file(
        self,
        data: bytes,
        *,
        filename: str,
        media_type: str | None = None,
        purpose: str | None = None,
    ) -> AnthropicFile:
        """Upload `data` to the Files API and return its descriptor; use `.uploaded_file()` in prompts.

        Anthropic has no upload purpose, so `purpose` must be left unset. Limits in `file_limits`
        are checked before any network I/O.
        """
        if purpose is not None:
            raise UserError("the Anthropic Files API has no upload purpose; leave purpose unset")
        limits = self.file_limits
        if len(data) > limits.max_upload_bytes:
            raise UserError(
                f"the file is {len(data)} bytes, above FileLimits.max_upload_bytes={limits.max_upload_bytes}"
            )
        if not filename or len(filename.encode("utf-8")) > limits.max_filename_bytes:
            raise UserError(
                f"the file name must be 1 to {limits.max_filename_bytes} UTF-8 bytes (FileLimits.max_filename_bytes)"
            )
        if any(ord(c) < 0x20 or c == "\x7f" for c in filename):
            raise UserError("the file name must not contain control characters")
        media_type = media_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
        if not _MEDIA_TYPE.fullmatch(media_type):
            raise UserError(f"{media_type!r} is not a valid media type")
        body, content_type = _multipart(data, filename, media_type)
        response = await self.request(
            "POST",
            "/v1/files",
            content=body,
            headers={"content-type": content_type, "anthropic-beta": BETA_FILES_API},
        )
        return self._file(response.content, expected_id=None)

    @redacts_errors
    async def get_file(self, file: AnthropicFile | UploadedFile) -> AnthropicFile:
        """The current metadata of a stored file."""
        file_id = self._file_id(file)
        response = await self._stored_file("GET", file_id)
        return self._file(response.content, expected_id=file_id)

    @redacts_errors
    async def delete_file(self, file: AnthropicFile | UploadedFile) -> None:
        """Delete a stored file."""
        file_id = self._file_id(file)
        response = await self._stored_file("DELETE", file_id)
        deleted = self._decode(response.content, _Deleted, "file deletion")
        if deleted.id != file_id or deleted.type != "file_deleted":
            raise self._bad_response(f"the deletion of {file_id!r} was not acknowledged")

    @redacts_errors
    async def download_file(self, file: AnthropicFile | UploadedFile) -> bytes:
        """The content of a downloadable file (one created by a tool, e.g. code execution).

        Files uploaded by the application are never downloadable; that raises
        `FileNotDownloadableError` without requesting the content.
        """
        descriptor = file if isinstance(file, AnthropicFile) else await self.get_file(file)
        file_id = self._file_id(descriptor)
        if not descriptor.downloadable:
            raise FileNotDownloadableError(
                f"file {file_id!r} is not downloadable: Anthropic only allows downloading files created by tools"
            )
        response = await self._stored_file("GET", file_id, "/content")
        return response.content

    @redacts_errors
    async def list_files(self) -> list[AnthropicFile]:
        """Every stored file (every page within `discovery_limits`)."""
        files: list[AnthropicFile] = []
        for item in await self._list("/v1/files", headers={"anthropic-beta": BETA_FILES_API}):
            files.append(self._file(msgspec.json.encode(item), expected_id=None))
        return files

    # -- helpers ----------------------------------------------------------------------------------

    def _file_id(self, file: AnthropicFile | UploadedFile) -> str:
        if file.provider_name != PROVIDER_NAME:
            raise UserError(
                f"file {file.__class__.__name__} belongs to {file.provider_name!r}, not to Anthropic"
            )
        file_id = file.id if isinstance(file, AnthropicFile) else file.file_id
        if not file_id:
            raise UserError("the file handle has an empty ID")
        return file_id

    async def _stored_file(self, method: str, file_id: str, tail: str = "") -> HttpResponse:
        # Every call on one stored file: its quoted ID in the path and the Files API beta header.
        return await self.request(
            method, f"/v1/files/{_quote(file_id)}{tail}", headers={"anthropic-beta": BETA_FILES_API}
        )

    def _bad_response(self, what: str) -> ResponseDecodeError:
        return ResponseDecodeError(
            f"unexpected response from the Anthropic API: {what}", provider_name=self.name
        )

    def _decode(self, content: bytes, type_: type[Any], what: str) -> Any:
        try:
            return bounded_json.decode(content, type=type_, limits=bounded_json.PROVIDER_RESPONSE)
        except bounded_json.JsonError as exc:
            raise self._bad_response(f"the {what} response could not be decoded: {exc}") from None

    def _file(self, content: bytes, *, expected_id: str | None) -> AnthropicFile:
        record: _FileRecord = self._decode(content, _FileRecord, "file")
        if not record.id or (expected_id is not None and record.id != expected_id):
            raise self._bad_response(f"the file descriptor's id {record.id!r} is not the one requested")
        return AnthropicFile(
            id=record.id,
            filename=record.filename,
            mime_type=record.mime_type,
            size_bytes=record.size_bytes,
            created_at=record.created_at,
            downloadable=record.downloadable,
        )

    async def _list(self, path: str, headers: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        limits = self.discovery_limits
        items: list[dict[str, Any]] = []
        after: str | None = None
        for _ in range(limits.max_pages):
            params: dict[str, str | int] = {"limit": limits.page_size}
            if after is not None:
                params["after_id"] = after
            response = await self.request("GET", path, params=params, headers=headers)
            page: _Page = self._decode(response.content, _Page, "listing")
            items.extend(page.data)
            if len(items) > limits.max_items:
                raise self._bad_response(
                    f"more than DiscoveryLimits.max_items={limits.max_items} items listed"
                )
            if not page.has_more:
                return items
            if not page.last_id or page.last_id == after:
                raise self._bad_response("a listing page says it has more but gives no new last_id")
            after = page.last_id
        raise self._bad_response(f"more than DiscoveryLimits.max_pages={limits.max_pages} pages listed")


def _quote(file_id: str) -> str:
    return urllib.parse.quote(file_id, safe="")


def _multipart(data: bytes, filename: str, media_type: str) -> tuple[bytes, str]:
    """A multipart/form-data body with one `file` field, and its content type."""
    while True:
        boundary = f"ferrule-{secrets.token_hex(16)}"
        # A boundary that occurs in the payload would cut it short; draw again (practically never).
        if boundary.encode() not in data:
            break
    quoted = filename.replace("\\", "%5C").replace('"', "%22")
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{quoted}"\r\n'
        f"Content-Type: {media_type}\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head + data + tail, f"multipart/form-data; boundary={boundary}"
