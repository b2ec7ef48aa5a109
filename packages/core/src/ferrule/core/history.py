"""Persisted message history: ferrule's versioned envelope and PydanticAI's message-list JSON.

ferrule's own format is a versioned envelope around the message list:

```json
{"version": 1, "messages": [{"kind": "request", "parts": [...]}, ...]}
```

[`dumps`][ferrule.core.history.dumps] writes it and [`loads`][ferrule.core.history.loads] reads it,
rejecting versions this ferrule does not know with a [`HistoryError`][ferrule.core.history.HistoryError]
that names the versions it supports. The `messages` array uses PydanticAI v2's vocabulary and field
names, so [`load_pydantic_ai`][ferrule.core.history.load_pydantic_ai] and
[`dump_pydantic_ai`][ferrule.core.history.dump_pydantic_ai] read and write the bare list that
PydanticAI's `ModelMessagesTypeAdapter` produces and accepts.

Every loader is bounded: the document is checked against
[`bounded_json.HISTORY`][ferrule.core.bounded_json.HISTORY] before anything is built, then decoded by
msgspec straight into the message Structs. Malformed input raises `HistoryError` with the JSON path of
the problem.

File items in tool results (images, documents, uploaded files) are recorded by digest in the part's
`content_file_digests` when written, and only recorded items are rebuilt as files when read, so a
mapping a tool returned that merely looks like a file stays a mapping (PydanticAI's rule, which this
module follows byte for byte).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import mimetypes
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import TypeVar
from typing import cast
from urllib.parse import urlparse

import msgspec

from . import bounded_json
from .errors import FerruleError
from .messages import AudioUrl
from .messages import BinaryContent
from .messages import DocumentUrl
from .messages import ImageUrl
from .messages import Message
from .messages import ModelResponse
from .messages import NativeToolReturnPart
from .messages import ToolReturnPart
from .messages import UploadedFile
from .messages import VideoUrl

__all__ = [
    "HISTORY_VERSION",
    "SUPPORTED_VERSIONS",
    "HistoryError",
    "dump_pydantic_ai",
    "dumps",
    "from_jsonable",
    "load_pydantic_ai",
    "loads",
    "to_jsonable",
]

HISTORY_VERSION: Final = 1
"""The envelope version [`dumps`][ferrule.core.history.dumps] writes."""

SUPPORTED_VERSIONS: Final = frozenset({1})
"""The envelope versions [`loads`][ferrule.core.history.loads] reads."""

JsonInput = bytes | bytearray | memoryview | str
"""What the loaders accept: UTF-8 JSON bytes (any buffer) or a `str`."""


class HistoryError(FerruleError):
    """A persisted history could not be read: malformed, over a limit, or of an unsupported version."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        """Where in the document the problem is, in msgspec's notation (`$.messages[3].parts[0]`)."""
        super().__init__(message)


# --- envelope ------------------------------------------------------------------------------------


class _EnvelopeHead(msgspec.Struct):
    # `messages` stays raw until the version is known: a future version may change its shape, and
    # the reader must say "unsupported version" rather than report a schema mismatch.
    version: int
    messages: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class _Envelope(msgspec.Struct):
    # The whole envelope in one typed decode: the fast path for a current, valid document.
    version: int
    messages: list[Message]


_MESSAGES_TYPE: Any = list[Message]


@functools.cache
def _messages_decoder() -> msgspec.json.Decoder[list[Message]]:
    return msgspec.json.Decoder(list[Message])


@functools.cache
def _encoder() -> msgspec.json.Encoder:
    return msgspec.json.Encoder()


def dumps(messages: Sequence[Message]) -> bytes:
    """Serialize `messages` as ferrule's versioned history JSON (`{"version": 1, "messages": [...]}`)."""
    return _encode(messages, pai=False)


def loads(data: JsonInput) -> list[Message]:
    """Read ferrule's versioned history JSON, as written by [`dumps`][ferrule.core.history.dumps].

    Raises [`HistoryError`][ferrule.core.history.HistoryError] for malformed input, input over the
    [`HISTORY`][ferrule.core.bounded_json.HISTORY] limits, or an envelope version not in
    [`SUPPORTED_VERSIONS`][ferrule.core.history.SUPPORTED_VERSIONS].
    """
    data = _as_input(data)
    try:
        envelope = bounded_json.decode(data, type=_Envelope, limits=bounded_json.HISTORY)
    except bounded_json.JsonTypeError:
        # Not a well-typed envelope (or URL-safe base64 inside): read the head first, so that the
        # error names the right problem, e.g. an unsupported version rather than a schema mismatch.
        return _loads_head_first(data)
    except bounded_json.JsonError as exc:
        raise HistoryError(f"history rejected: {exc}") from exc
    # A newer version whose messages happen to fit the current schema is still refused.
    _check_version(envelope.version)
    messages = envelope.messages
    _rehydrate_tool_files(messages)
    return messages


def _loads_head_first(data: bytes | bytearray | str) -> list[Message]:
    try:
        head = bounded_json.decode(data, type=_EnvelopeHead, limits=bounded_json.HISTORY)
    except bounded_json.JsonTypeError as exc:
        hint = ""
        if _starts_with_array(data):
            hint = "; a bare JSON list of messages is PydanticAI's format: read it with load_pydantic_ai()"
        raise _type_error(exc, prefix=None, what="ferrule history envelope", hint=hint) from exc
    except bounded_json.JsonError as exc:
        raise HistoryError(f"history rejected: {exc}") from exc
    _check_version(head.version)
    if not head.messages:
        raise HistoryError("history envelope has no `messages` array", path="$.messages")
    messages = _decode_messages(head.messages, prefix="$.messages")
    _rehydrate_tool_files(messages)
    return messages


def _check_version(version: int) -> None:
    if version in SUPPORTED_VERSIONS:
        return
    supported = ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))
    if version > max(SUPPORTED_VERSIONS):
        raise HistoryError(
            f"history version {version} was written by a newer ferrule; this ferrule-core reads "
            f"version(s) {supported}: upgrade ferrule-core to read it",
            path="$.version",
        )
    raise HistoryError(
        f"history version {version} is not a ferrule history version (supported: {supported})",
        path="$.version",
    )


# --- PydanticAI ----------------------------------------------------------------------------------


def dump_pydantic_ai(messages: Sequence[Message]) -> bytes:
    """Serialize `messages` as the bare JSON list PydanticAI's `ModelMessagesTypeAdapter` reads.

    ferrule's `finish_reason="other"` has no PydanticAI equivalent and is written as `null` (the raw
    reason stays in `provider_details`).
    """
    return _encode(messages, pai=True)


def load_pydantic_ai(data: JsonInput) -> list[Message]:
    """Read the JSON message list written by PydanticAI's `ModelMessagesTypeAdapter.dump_json`.

    Bounded by [`HISTORY`][ferrule.core.bounded_json.HISTORY]; raises
    [`HistoryError`][ferrule.core.history.HistoryError] with the JSON path on malformed input.
    """
    data = _as_input(data)
    try:
        messages: list[Message] = bounded_json.decode(data, type=_MESSAGES_TYPE, limits=bounded_json.HISTORY)
    except bounded_json.JsonTypeError as exc:
        if not _is_base64_error(str(exc)):
            hint = ""
            if not _starts_with_array(data):
                hint = "; a ferrule history envelope ({'version': ..., 'messages': ...}) is read with loads()"
            raise _type_error(exc, prefix=None, what="PydanticAI message list", hint=hint) from exc
        # The document already passed the limit scan, so decoding it again is safe.
        messages = _decode_urlsafe(data, prefix="$")
    except bounded_json.JsonError as exc:
        raise HistoryError(f"history rejected: {exc}") from exc
    _rehydrate_tool_files(messages)
    return messages


# --- builtins ------------------------------------------------------------------------------------


def to_jsonable(messages: Sequence[Message]) -> list[Any]:
    """`messages` as plain JSON values (dicts, lists, strings, ...), in the history's JSON shape.

    For embedding a history in a larger document (paused state, UI payloads); read it back with
    [`from_jsonable`][ferrule.core.history.from_jsonable].
    """
    prepared, _ = _prepare(_as_list(messages), pai=False)
    return cast("list[Any]", msgspec.to_builtins(prepared))


def from_jsonable(value: Any) -> list[Message]:
    """Build messages from plain JSON values produced by [`to_jsonable`][ferrule.core.history.to_jsonable]
    (or by decoding a PydanticAI message list).

    `value` must already be bounded: decode untrusted JSON with `ferrule.core.bounded_json` first.
    """
    try:
        messages = cast("list[Message]", msgspec.convert(value, type=_MESSAGES_TYPE))
    except msgspec.ValidationError as exc:
        if not _is_base64_error(str(exc)):
            raise _type_error(exc, prefix="$", what="message list") from exc
        messages = _convert_lenient(_copy_json(value), prefix="$")
    _rehydrate_tool_files(messages)
    return messages


# --- decoding helpers ----------------------------------------------------------------------------

_TYPE_PATH: Final = re.compile(r" - at `(\$[^`]*)`$")


def _as_input(data: JsonInput) -> bytes | bytearray | str:
    if isinstance(data, memoryview):
        return data.tobytes()
    return data


def _starts_with_array(data: bytes | bytearray | str) -> bool:
    head = data[:64]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes | bytearray) else head
    return text.lstrip().startswith("[")


def _is_base64_error(text: str) -> bool:
    return "base64" in text


def _type_error(
    exc: bounded_json.JsonTypeError | msgspec.ValidationError,
    *,
    prefix: str | None,
    what: str,
    hint: str = "",
) -> HistoryError:
    text = str(exc)
    found = _TYPE_PATH.search(text)
    path = found.group(1) if found else None
    detail = text[: found.start()] if found else text
    if path is not None and prefix is not None:
        path = prefix + path[1:]
    where = f" at {path}" if path else ""
    return HistoryError(f"not a valid {what}{where}: {detail}{hint}", path=path)


def _decode_messages(raw: msgspec.Raw, *, prefix: str) -> list[Message]:
    try:
        return _messages_decoder().decode(raw)
    except msgspec.ValidationError as exc:
        if not _is_base64_error(str(exc)):
            raise _type_error(exc, prefix=prefix, what="ferrule history") from exc
        return _decode_urlsafe(bytes(raw), prefix=prefix)
    except msgspec.DecodeError as exc:  # pragma: no cover - the envelope decode already parsed it
        raise HistoryError(f"malformed history: {exc}") from exc


# A binary item exactly as PydanticAI's `dump_json` lays it out (keys in this order, no vendor
# metadata). Every quote in the pattern is bare, so a match is JSON structure, never text inside a
# string, and such an object is a `BinaryContent` to both libraries wherever it appears.
_PAI_BINARY_ITEM: Final = re.compile(
    rb'(\{\s*"data"\s*:\s*")([A-Za-z0-9+/_-]*=*)'
    rb'("\s*,\s*"media_type"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"vendor_metadata"\s*:\s*null\s*,\s*"kind"\s*:\s*"binary")'
)


def _standardize_match(match: re.Match[bytes]) -> bytes:
    return match.group(1) + _standard_base64(match.group(2).decode("ascii")).encode("ascii") + match.group(3)


def _decode_urlsafe(data: bytes | bytearray | str, *, prefix: str) -> list[Message]:
    """Decode a message list whose bytes are URL-safe or unpadded base64 (as PydanticAI writes them).

    msgspec's typed decoder takes only standard base64, so PydanticAI's binary items are rewritten
    in place first and the typed decoder runs again; anything that still fails goes through the
    generic (slower) path.
    """
    buf = data.encode() if isinstance(data, str) else bytes(data)
    rewritten, count = _PAI_BINARY_ITEM.subn(_standardize_match, buf)
    try:
        if count:
            try:
                return _messages_decoder().decode(rewritten)
            except msgspec.ValidationError as exc:
                if not _is_base64_error(str(exc)):
                    raise _type_error(exc, prefix=prefix, what="message list") from exc
        return _convert_lenient(msgspec.json.decode(buf), prefix=prefix)
    except msgspec.DecodeError as exc:
        raise HistoryError(f"history rejected: malformed JSON: {exc}") from exc


def _convert_lenient(value: Any, *, prefix: str) -> list[Message]:
    """Convert decoded JSON values into messages, accepting URL-safe and unpadded base64 bytes."""
    _normalize_base64(value)
    try:
        return cast("list[Message]", msgspec.convert(value, type=_MESSAGES_TYPE))
    except msgspec.ValidationError as exc:
        raise _type_error(exc, prefix=prefix, what="message list") from exc


_URLSAFE_TO_STANDARD: Final = str.maketrans("-_", "+/")


def _standard_base64(text: str) -> str:
    text = text.translate(_URLSAFE_TO_STANDARD)
    return text + "=" * (-len(text) % 4)


def _b64decode(text: str) -> bytes:
    return base64.b64decode(_standard_base64(text), validate=True)


def _normalize_base64(value: Any) -> None:
    """Rewrite, in place, the `data` of every `binary` item to standard padded base64."""
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            mapping = cast("dict[str, Any]", node)
            data = mapping.get("data")
            if mapping.get("kind") == "binary" and isinstance(data, str):
                mapping["data"] = _standard_base64(data)
            children: Iterable[Any] = mapping.values()
        elif isinstance(node, list):
            children = cast("list[Any]", node)
        else:
            continue
        for child in children:
            if isinstance(child, dict | list):
                stack.append(child)


def _copy_json(value: Any) -> Any:
    # The lenient path rewrites base64 in place; never in the caller's objects.
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in cast("list[Any]", value)]
    return value


# --- file items inside tool results --------------------------------------------------------------

_URL_NEEDLES: Final = (b'-url"', b'"uploaded-file"')
_OTHER_FINISH: Final = b'"finish_reason":"other"'

_TOOL_RETURN_TYPES: Final = frozenset({ToolReturnPart, NativeToolReturnPart})
_URL_TYPES: Final[dict[str, type[ImageUrl | AudioUrl | VideoUrl | DocumentUrl]]] = {
    "image-url": ImageUrl,
    "audio-url": AudioUrl,
    "video-url": VideoUrl,
    "document-url": DocumentUrl,
}
_URL_KINDS: Final = {cls: kind for kind, cls in _URL_TYPES.items()}
_URL_KEYS: Final = frozenset({"url", "force_download", "vendor_metadata", "kind", "media_type", "identifier"})
_UPLOADED_KEYS: Final = frozenset(
    {"file_id", "provider_name", "vendor_metadata", "kind", "media_type", "identifier"}
)
_BINARY_KEYS: Final = frozenset({"data", "media_type", "vendor_metadata", "kind", "identifier"})
_YOUTUBE_HOSTS: Final = frozenset({"youtu.be", "youtube.com", "www.youtube.com", "m.youtube.com"})


def _file_digest(item: dict[str, Any]) -> str | None:
    """SHA-256 of an item's canonical JSON (sorted keys, compact), exactly as PydanticAI records it."""
    try:
        canonical = json.dumps(item, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(canonical.encode()).hexdigest()


def _identifier(key: str | bytes) -> str:
    if isinstance(key, str):
        key = key.encode("utf-8")
    return hashlib.sha1(key, usedforsecurity=False).hexdigest()[:6]


def _url_media_type(item: ImageUrl | AudioUrl | VideoUrl | DocumentUrl) -> str | None:
    if item.media_type:
        return item.media_type
    if isinstance(item, VideoUrl) and urlparse(item.url).hostname in _YOUTUBE_HOSTS:
        return "video/mp4"
    return mimetypes.guess_type(item.url)[0]


def _canonical_file(item: ImageUrl | AudioUrl | VideoUrl | DocumentUrl | UploadedFile) -> dict[str, Any]:
    """The full JSON form PydanticAI writes for a URL or uploaded-file item (all keys, inferred values)."""
    if isinstance(item, UploadedFile):
        media_type = (
            item.media_type
            or mimetypes.guess_type(urlparse(item.file_id).path)[0]
            or "application/octet-stream"
        )
        form: dict[str, Any] = {
            "file_id": item.file_id,
            "provider_name": item.provider_name,
            "vendor_metadata": item.vendor_metadata,
            "kind": "uploaded-file",
            "media_type": media_type,
            "identifier": item.identifier or _identifier(item.file_id),
        }
    else:
        form = {
            "url": item.url,
            "force_download": item.force_download,
            "vendor_metadata": item.vendor_metadata,
            "kind": _URL_KINDS[type(item)],
            "media_type": _url_media_type(item),
            "identifier": item.identifier or _identifier(item.url),
        }
    return cast("dict[str, Any]", msgspec.to_builtins(form))


def _canonicalize(value: Any, digests: list[str]) -> Any:
    """`value` with URL and uploaded-file items in their full form, their digests added to `digests`.

    Returns `value` itself when nothing changed; only containers that change are copied.
    """
    if isinstance(value, ImageUrl | AudioUrl | VideoUrl | DocumentUrl | UploadedFile):
        form = _canonical_file(value)
        digest = _file_digest(form)
        if digest is not None:
            digests.append(digest)
        return form
    if isinstance(value, list | tuple):
        items = cast("Sequence[Any]", value)
        return _canonical_children(items, enumerate(items), list, digests)
    if isinstance(value, dict):
        mapping = cast("dict[Any, Any]", value)
        return _canonical_children(mapping, mapping.items(), dict, digests)
    return value


def _canonical_children(
    container: Any, children: Iterable[tuple[Any, Any]], copy: Callable[[Any], Any], digests: list[str]
) -> Any:
    """`container` with its children canonicalized, copied by `copy` only when a child changes."""
    changed: Any = None
    for key, child in children:
        if _is_scalar(child):
            continue
        new = _canonicalize(child, digests)
        if new is not child:
            if changed is None:
                changed = copy(container)
            changed[key] = new
    return container if changed is None else changed


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _as_file(mapping: dict[str, Any], record: frozenset[str] | None) -> Any:
    """The file item `mapping` stands for, or `None` when it must stay a mapping."""
    kind = mapping.get("kind")
    if kind == "binary":
        data, media_type = mapping.get("data"), mapping.get("media_type")
        if not (mapping.keys() <= _BINARY_KEYS and isinstance(data, str) and isinstance(media_type, str)):
            return None
        vendor_metadata, identifier = mapping.get("vendor_metadata"), mapping.get("identifier")
        if not (vendor_metadata is None or isinstance(vendor_metadata, dict)):
            return None
        if not (identifier is None or isinstance(identifier, str)):
            return None
        try:
            raw = _b64decode(data)
        except (binascii.Error, ValueError):
            return None
        return BinaryContent(
            data=raw,
            media_type=media_type,
            vendor_metadata=cast("dict[str, Any] | None", vendor_metadata),
            identifier=identifier,
        )
    target: type[Any]
    if kind in _URL_TYPES:
        media_type = mapping.get("media_type", "")
        if not (
            mapping.keys() <= _URL_KEYS
            and (media_type is None or (isinstance(media_type, str) and media_type))
        ):
            return None
        if record is None:
            # Stored before records existed: only what a client could legitimately send is rebuilt,
            # an HTTP(S) URL that is not force-downloaded (PydanticAI's rule for legacy history).
            url = mapping.get("url")
            if not (isinstance(url, str) and urlparse(url).scheme.lower() in ("http", "https")):
                return None
            mapping = {**mapping, "force_download": False}
        elif _file_digest(mapping) not in record:
            return None
        target = _URL_TYPES[cast("str", kind)]
    elif kind == "uploaded-file":
        if record is None or not mapping.keys() <= _UPLOADED_KEYS or _file_digest(mapping) not in record:
            return None
        target = UploadedFile
    else:
        return None
    try:
        return msgspec.convert(mapping, type=target)
    except msgspec.ValidationError:
        return None


def _rehydrate(value: Any, record: frozenset[str] | None) -> Any:
    """`value` with recorded file items rebuilt; copies only the containers that change."""
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        item = _as_file(mapping, record)
        if item is not None:
            return item
        return _rehydrate_children(mapping, mapping.items(), record)
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return _rehydrate_children(items, enumerate(items), record)
    return value


_Container = TypeVar("_Container", dict[str, Any], list[Any])


def _rehydrate_children(
    container: _Container, children: Iterable[tuple[Any, Any]], record: frozenset[str] | None
) -> _Container:
    """`container` itself when no child changes, else a shallow copy with the changed children set."""
    changed: Any = None
    for key, child in children:
        if isinstance(child, dict | list):
            new = _rehydrate(child, record)
            if new is not child:
                if changed is None:
                    changed = container.copy()
                changed[key] = new
    return container if changed is None else changed


def _rehydrate_tool_files(messages: list[Message]) -> None:
    """Rebuild recorded file items in tool results, then drop the records.

    `content_file_digests` is a serialization artifact: writers recompute it from the content, so
    keeping it in memory would only make `loads(dumps(x)) != x`.
    """
    # Runs on every load, so the common part (no tool result holding a container) stays cheap: the
    # messages come from a decoder, which builds exactly these classes, never subclasses.
    for message in messages:
        for part in message.parts:
            if type(part) not in _TOOL_RETURN_TYPES:
                continue
            tool_return = cast("ToolReturnPart | NativeToolReturnPart", part)
            digests = tool_return.content_file_digests
            content: Any = tool_return.content
            if isinstance(content, dict | list):
                record = None if digests is None else frozenset(digests)
                tool_return.content = _rehydrate(content, record)
            if digests is not None:
                tool_return.content_file_digests = None


# --- encoding helpers ----------------------------------------------------------------------------


def _as_list(messages: Sequence[Message]) -> list[Message] | tuple[Message, ...]:
    return messages if isinstance(messages, list | tuple) else list(messages)


def _wrap(messages: Sequence[Message], *, pai: bool) -> Any:
    return messages if pai else {"version": HISTORY_VERSION, "messages": messages}


def _encode(messages: Sequence[Message], *, pai: bool) -> bytes:
    messages = _as_list(messages)
    encoder = _encoder()
    out = encoder.encode(_wrap(messages, pai=pai))
    # Most histories hold no URL items in tool results and no ferrule-only finish reason: one scan
    # of the encoded bytes proves it, and only otherwise are the messages walked in Python.
    if any(needle in out for needle in _URL_NEEDLES) or (pai and _OTHER_FINISH in out):
        prepared, changed = _prepare(messages, pai=pai)
        if changed:
            out = encoder.encode(_wrap(prepared, pai=pai))
    return out


def _prepare(messages: Sequence[Message], *, pai: bool) -> tuple[Sequence[Message], bool]:
    """Messages ready to encode: tool-result files in full form with their digests recorded, and
    (for PydanticAI) finish reasons it lacks cleared. Never changes the caller's messages."""
    result: list[Message] | None = None
    for index, message in enumerate(messages):
        new_message = _prepare_message(message, pai=pai)
        if new_message is not message:
            if result is None:
                result = list(messages)
            result[index] = new_message
    return (messages, False) if result is None else (result, True)


def _prepare_message(message: Message, *, pai: bool) -> Message:
    parts: list[Any] | None = None
    for index, part in enumerate(cast("Iterable[Any]", message.parts)):
        if not isinstance(part, ToolReturnPart | NativeToolReturnPart) or _is_scalar(part.content):
            continue
        digests: list[str] = []
        content = _canonicalize(part.content, digests)
        recorded = sorted(set(digests))
        if content is part.content and part.content_file_digests == recorded:
            continue
        if parts is None:
            parts = list(message.parts)
        parts[index] = msgspec.structs.replace(part, content=content, content_file_digests=recorded)
    changes: dict[str, Any] = {}
    if parts is not None:
        changes["parts"] = parts
    if pai and isinstance(message, ModelResponse) and message.finish_reason == "other":
        changes["finish_reason"] = None
    return msgspec.structs.replace(message, **changes) if changes else message
