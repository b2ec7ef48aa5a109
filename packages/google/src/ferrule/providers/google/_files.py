"""Records of the Gemini Files API and model discovery, decoded from untrusted JSON."""

from __future__ import annotations

import re
from typing import Any
from typing import Final

import msgspec

from ferrule.core import bounded_json
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UserError
from ferrule.core.messages import UploadedFile

__all__ = [
    "DEFAULT_MAX_UPLOAD_BYTES",
    "DiscoveryLimits",
    "FileLimits",
    "GoogleFile",
    "GoogleModelInfo",
    "ModelList",
    "file_name_of",
]

DEFAULT_MAX_UPLOAD_BYTES: Final = 2 * 1024 * 1024 * 1024
"""2 GiB: the documented maximum size of one Gemini file."""

_FILE_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_FILE_NAME = re.compile(r"(?:.*/)?files/([a-z0-9][a-z0-9-]{0,63})")
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")

_METADATA_LIMITS: Final = msgspec.structs.replace(
    bounded_json.PROVIDER_RESPONSE, name="google_files", max_bytes=1024 * 1024, max_string_bytes=256 * 1024
)


class FileLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds checked before a Files API request is sent (exact-limit values pass)."""

    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    """Largest file `upload_file` sends."""
    max_display_name_chars: int = 512
    """Longest display name (the API's own limit)."""

    def __post_init__(self) -> None:
        if self.max_upload_bytes < 1 or self.max_display_name_chars < 1:
            raise ValueError("FileLimits values must be at least 1")


class DiscoveryLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on `list_models`: pages fetched and models kept (exact-limit values pass)."""

    page_size: int = 1000
    """Models asked for per page."""
    max_pages: int = 20
    """Most pages fetched; more pages set `ModelList.truncated`."""
    max_models: int = 5000
    """Most models kept; more set `ModelList.truncated`."""

    def __post_init__(self) -> None:
        if self.page_size < 1 or self.max_pages < 1 or self.max_models < 1:
            raise ValueError("DiscoveryLimits values must be at least 1")


class GoogleFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file stored by the Gemini Files API."""

    name: str
    """The resource name, `files/<id>`."""
    uri: str
    """The URI Gemini requests reference the file by (the `UploadedFile.file_id`)."""
    media_type: str | None = None
    """The file's MIME type."""
    size_bytes: int | None = None
    """The file's size."""
    display_name: str | None = None
    """The name given at upload."""
    state: str | None = None
    """`PROCESSING`, `ACTIVE` or `FAILED`; videos must be `ACTIVE` before use."""
    create_time: str | None = None
    """When the file was uploaded (RFC 3339)."""
    update_time: str | None = None
    """When the record last changed (RFC 3339)."""
    expiration_time: str | None = None
    """When Gemini deletes the file (RFC 3339)."""
    sha256_hash: str | None = None
    """The content's SHA-256, as Gemini reports it (base64)."""
    provider_name: str = "google-gla"
    """The provider that owns the file."""
    raw: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """Every field Gemini returned, uninterpreted."""

    def uploaded_file(self) -> UploadedFile:
        """The handle to put in a prompt; only this provider accepts it."""
        return UploadedFile(file_id=self.uri, provider_name=self.provider_name, media_type=self.media_type)


class GoogleModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One model as listed by the Gemini API (untrusted metadata; profiles never come from it)."""

    id: str
    """The model ID to construct a client with, e.g. `"gemini-2.5-flash"`."""
    name: str
    """The resource name, e.g. `"models/gemini-2.5-flash"`."""
    display_name: str | None = None
    """A human-readable name."""
    description: str | None = None
    """Google's description."""
    version: str | None = None
    """The model version."""
    input_token_limit: int | None = None
    """Maximum input tokens."""
    output_token_limit: int | None = None
    """Maximum output tokens."""
    supported_generation_methods: list[str] = msgspec.field(default_factory=list[str])
    """API methods the model serves, e.g. `generateContent`."""
    thinking: bool | None = None
    """Whether Gemini says the model thinks."""
    raw: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """Every field Gemini returned, uninterpreted."""


class ModelList(msgspec.Struct, frozen=True, kw_only=True):
    """The result of `list_models`."""

    models: list[GoogleModelInfo]
    """The models, in the order Gemini listed them."""
    truncated: bool = False
    """More models exist beyond `DiscoveryLimits`."""


class _FileWire(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""
    uri: str = ""
    mime_type: str | None = None
    size_bytes: int | None = None
    display_name: str | None = None
    state: str | None = None
    create_time: str | None = None
    update_time: str | None = None
    expiration_time: str | None = None
    sha256_hash: str | None = None


class _ModelWire(msgspec.Struct, rename="camel", kw_only=True):
    name: str = ""
    display_name: str | None = None
    description: str | None = None
    version: str | None = None
    input_token_limit: int | None = None
    output_token_limit: int | None = None
    supported_generation_methods: list[str] = msgspec.field(default_factory=list[str])
    thinking: bool | None = None


def _document(body: bytes, what: str, limits: bounded_json.JsonLimits = _METADATA_LIMITS) -> dict[str, Any]:
    try:
        document = bounded_json.decode(body, limits=limits)
    except bounded_json.JsonError as exc:
        raise ResponseDecodeError(f"{what} is not valid JSON: {exc}", provider_name="google-gla") from None
    if not isinstance(document, dict):
        raise ResponseDecodeError(f"{what} is not a JSON object", provider_name="google-gla")
    return document  # pyright: ignore[reportUnknownVariableType]


def parse_file(record: Any, what: str, provider_name: str) -> GoogleFile:
    """A `GoogleFile` from a File JSON object; rejects records without a valid name and URI."""
    if not isinstance(record, dict):
        raise ResponseDecodeError(f"{what} has no file record", provider_name=provider_name)
    try:
        wire = msgspec.convert(record, _FileWire, strict=False)
    except msgspec.ValidationError as exc:
        raise ResponseDecodeError(
            f"{what} is not a valid file record: {exc}", provider_name=provider_name
        ) from None
    match = _FILE_NAME.fullmatch(wire.name)
    if match is None or wire.name != f"files/{match.group(1)}":
        raise ResponseDecodeError(
            f"{what} names {wire.name[:80]!r}, not files/<id>", provider_name=provider_name
        )
    if not wire.uri.startswith(("https://", "http://")) or not wire.uri.endswith("/" + wire.name):
        raise ResponseDecodeError(
            f"{what} has a URI that does not name {wire.name!r}", provider_name=provider_name
        )
    if wire.size_bytes is not None and wire.size_bytes < 0:
        raise ResponseDecodeError(f"{what} has a negative size", provider_name=provider_name)
    return GoogleFile(
        name=wire.name,
        uri=wire.uri,
        media_type=wire.mime_type,
        size_bytes=wire.size_bytes,
        display_name=wire.display_name,
        state=wire.state,
        create_time=wire.create_time,
        update_time=wire.update_time,
        expiration_time=wire.expiration_time,
        sha256_hash=wire.sha256_hash,
        provider_name=provider_name,
        raw=record,  # pyright: ignore[reportUnknownArgumentType]
    )


def parse_upload_result(body: bytes, provider_name: str) -> GoogleFile:
    """The file record of a finished upload (`{"file": {...}}`)."""
    document = _document(body, "the upload response")
    return parse_file(document.get("file"), "the upload response", provider_name)


def parse_file_body(body: bytes, provider_name: str) -> GoogleFile:
    """The file record of `files.get` (the record itself)."""
    return parse_file(_document(body, "the file record"), "the file record", provider_name)


def check_delete_ack(body: bytes, provider_name: str) -> None:
    """`files.delete` answers with an empty JSON object; anything else is a protocol error."""
    document = _document(body or b"{}", "the delete response")
    if document:
        raise ResponseDecodeError(
            "the delete response is not the empty acknowledgement Gemini sends", provider_name=provider_name
        )


def parse_model_page(body: bytes, provider_name: str) -> tuple[list[GoogleModelInfo], str | None]:
    """One page of `models.list`: its models and the next page token."""
    document = _document(body, "the model list", bounded_json.PROVIDER_RESPONSE)
    entries = document.get("models", [])
    if not isinstance(entries, list):
        raise ResponseDecodeError("the model list has no models array", provider_name=provider_name)
    models: list[GoogleModelInfo] = []
    for entry in entries:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(entry, dict):
            raise ResponseDecodeError("the model list holds a non-object entry", provider_name=provider_name)
        try:
            wire = msgspec.convert(entry, _ModelWire, strict=False)
        except msgspec.ValidationError as exc:
            raise ResponseDecodeError(
                f"a model list entry is not valid: {exc}", provider_name=provider_name
            ) from None
        if not wire.name.startswith("models/") or len(wire.name) <= len("models/"):
            raise ResponseDecodeError(
                f"a model list entry names {wire.name[:80]!r}", provider_name=provider_name
            )
        models.append(
            GoogleModelInfo(
                id=wire.name[len("models/") :],
                name=wire.name,
                display_name=wire.display_name,
                description=wire.description,
                version=wire.version,
                input_token_limit=wire.input_token_limit,
                output_token_limit=wire.output_token_limit,
                supported_generation_methods=wire.supported_generation_methods,
                thinking=wire.thinking,
                raw=entry,  # pyright: ignore[reportUnknownArgumentType]
            )
        )
    token = document.get("nextPageToken")
    if token is not None and not isinstance(token, str):
        raise ResponseDecodeError(
            "the model list's nextPageToken is not a string", provider_name=provider_name
        )
    return models, token or None


def file_name_of(file: GoogleFile | UploadedFile | str, provider_name: str) -> str:
    """The `files/<id>` resource name of a file handle, rejecting foreign or empty handles."""
    if isinstance(file, GoogleFile):
        owner, handle = file.provider_name, file.name
    elif isinstance(file, UploadedFile):
        owner, handle = file.provider_name, file.file_id
    else:
        owner, handle = provider_name, file
    if owner != provider_name:
        raise UserError(f"the file {handle!r} belongs to {owner!r}, not {provider_name!r}; use that provider")
    if not handle:
        raise UserError("an empty file handle; pass a GoogleFile, its UploadedFile, or 'files/<id>'")
    match = _FILE_NAME.fullmatch(handle)
    if match is not None:
        return f"files/{match.group(1)}"
    if _FILE_ID.fullmatch(handle):
        return f"files/{handle}"
    raise UserError(
        f"{handle[:100]!r} is not a Gemini file handle (files/<id> with lower-case letters, digits, '-')"
    )


def check_media_type(media_type: str) -> str:
    """`media_type` if it is a plain `type/subtype`, else `UserError`."""
    if not _MEDIA_TYPE.fullmatch(media_type):
        raise UserError(f"{media_type!r} is not a MIME type (type/subtype)")
    return media_type
