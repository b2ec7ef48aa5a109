"""User-content helpers shared by both codecs (internal)."""

from __future__ import annotations

from typing import Any
from typing import cast

import msgspec

from ferrule.core.errors import UnsupportedContentError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import TextContent
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import VideoUrl

_ENCODE = msgspec.json.encode

MULTIMODAL = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl, BinaryContent, UploadedFile)


def refuse(kind: str, provider_name: str, model_name: str, reason: str) -> UnsupportedContentError:
    """The refusal of a part or content item (`kind`, its JSON tag) the API cannot take."""
    return UnsupportedContentError(kind, provider=provider_name, model=model_name, reason=reason)


def refuse_undownloaded(kind: str, url: str, provider_name: str, model_name: str) -> UnsupportedContentError:
    """The refusal of a URL item (`kind`, e.g. `"image-url"`) set to `force_download` that reached
    the encoder undownloaded."""
    noun = kind.removesuffix("-url")
    return refuse(
        kind,
        provider_name,
        model_name,
        f"{noun} {url!r} must be downloaded before encoding (force_download is set)",
    )


def is_text_like(media_type: str) -> bool:
    """Whether a media type is text that is better inlined than sent as a file."""
    return (
        media_type.startswith("text/")
        or media_type in ("application/json", "application/xml", "application/x-yaml", "application/yaml")
        or media_type.endswith(("+json", "+xml"))
    )


def identifier(item: BinaryContent | ImageUrl | AudioUrl | VideoUrl | DocumentUrl | UploadedFile) -> str:
    """The item's identifier: explicit, or the first 6 hex digits of a SHA-1 of its data (PydanticAI's rule)."""
    if item.identifier:
        return item.identifier
    if isinstance(item, BinaryContent):
        seed = item.data
    elif isinstance(item, UploadedFile):
        seed = item.file_id.encode()
    else:
        seed = item.url.encode()
    import hashlib  # with the first item that needs an identifier, not with the provider

    return hashlib.sha1(seed, usedforsecurity=False).hexdigest()[:6]


def check_uploaded_here(item: UploadedFile, provider_name: str) -> None:
    """Refuse a file uploaded to another provider: its ID means nothing to this one."""
    if item.provider_name != provider_name:
        raise UserError(
            f"file {item.file_id!r} was uploaded to {item.provider_name!r}, not {provider_name!r}; "
            "upload it to this provider or send its bytes"
        )


def inline_text_file(item: BinaryContent) -> str:
    """A text-like file inlined between delimiters the model can refer to."""
    ident = identifier(item)
    try:
        text = item.data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(
            f"file {ident!r} is declared as {item.media_type} but is not valid UTF-8; "
            "fix its media_type or its encoding"
        ) from None
    return "\n".join(
        [
            f'-----BEGIN FILE id="{ident}" type="{item.media_type}"-----',
            text,
            f'-----END FILE id="{ident}"-----',
        ]
    )


def extension(media_type: str) -> str:
    """A file extension (without dot) for a media type, for the file names some APIs require."""
    special = {
        "audio/mpeg": "mp3",
        "audio/mp3": "mp3",
        "audio/wav": "wav",
        "audio/x-wav": "wav",
        "application/pdf": "pdf",
    }
    if media_type in special:
        return special[media_type]
    import mimetypes  # with the first unusual media type, not with the provider

    guessed = mimetypes.guess_extension(media_type)
    return guessed.lstrip(".") if guessed else "bin"


def audio_format(media_type: str) -> str | None:
    """The `input_audio.format` for an audio media type, or `None`: only WAV and MP3 are accepted."""
    fmt = extension(media_type)
    return fmt if fmt in ("wav", "mp3") else None


def tool_result_text(content: object) -> tuple[str, list[Any]]:
    """A tool result as the text both APIs take, and the media items in it, which travel after the
    tool results as a user message (the text names them: `See file <identifier>`)."""
    if isinstance(content, str):
        return content, []
    plain: Any = content
    files: list[Any] = []
    if isinstance(content, MULTIMODAL):
        plain, files = None, [content]
    elif isinstance(content, list):
        items = cast("list[Any]", content)
        files = [c for c in items if isinstance(c, MULTIMODAL)]
        if files:
            rest: list[Any] = [
                c.content if isinstance(c, TextContent) else c
                for c in items
                if not isinstance(c, (*MULTIMODAL, CachePoint))
            ]
            plain = rest if rest else None
    if not files:
        return _ENCODE(plain).decode(), files
    names = ", ".join(identifier(f) for f in files)
    if plain is None:
        return f"See file {names}", files
    return f"{_ENCODE(plain).decode()}\n\nSee file {names}", files
