"""MCP tool results as ferrule tool returns: text and structured values for the result, media as content.

Nothing here imports the SDK: content blocks are read by their `type` field.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from ferrule.agent import ToolReturn
from ferrule.core.messages import BinaryContent

from ._errors import MCPProtocolError

__all__ = ["result_size", "result_text", "to_tool_return"]

_MEDIA_PREFIXES = ("image/", "audio/", "video/", "application/pdf")


def _b64(data: str, what: str, server_id: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MCPProtocolError(
            f"the {what} in the result is not valid base64 ({exc})", server_id=server_id
        ) from None


def _dump(block: Any) -> Any:
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True)
    return msgspec.to_builtins(block)


def result_size(result: Any) -> int:
    """An upper estimate of the decoded size of a `CallToolResult` in bytes (text, base64 data, structure)."""
    total = 0
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            total += len(block.text)
        elif kind in ("image", "audio"):
            total += len(block.data)
        elif kind == "resource":
            resource = block.resource
            total += len(getattr(resource, "text", None) or getattr(resource, "blob", None) or "")
        else:
            total += 256
    if result.structured_content is not None:
        try:
            total += len(msgspec.json.encode(result.structured_content))
        except (TypeError, msgspec.EncodeError):
            total += 0
    return total


def result_text(result: Any, limit: int) -> str:
    """The text blocks of a result joined, cut to `limit` characters (for error results)."""
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    text = "\n".join(texts).strip()
    if len(text) > limit:
        text = text[:limit] + f"... [{len(text) - limit} more characters cut]"
    return text


def to_tool_return(result: Any, *, server_id: str, prefer_structured: bool = True) -> Any:
    """Map a successful `CallToolResult` to what a ferrule tool returns.

    * text blocks and embedded text resources become strings; resource links become
      `{"type": "resource_link", "uri": ..., ...}` (never fetched automatically);
    * images, audio and media blobs become `BinaryContent` sent as follow-up content
      (`ToolReturn.content`), other blobs a `{"type": "resource", "uri", "mime_type", "size"}` note;
    * `structuredContent`, when present, is the result value (with `prefer_structured`), otherwise
      the one item, or the list of items.
    """
    items: list[Any] = []
    media: list[BinaryContent] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            items.append(block.text)
        elif kind in ("image", "audio"):
            media.append(BinaryContent(data=_b64(block.data, kind, server_id), media_type=block.mime_type))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            mime = getattr(resource, "mime_type", None)
            if text is not None:
                items.append(text)
                continue
            data = _b64(getattr(resource, "blob", ""), "resource blob", server_id)
            if mime is not None and mime.startswith(_MEDIA_PREFIXES):
                media.append(BinaryContent(data=data, media_type=mime, identifier=None))
            else:
                items.append(
                    {"type": "resource", "uri": str(resource.uri), "mime_type": mime, "size": len(data)}
                )
        elif kind == "resource_link":
            link = {
                "type": "resource_link",
                "uri": str(block.uri),
                "name": block.name,
                "description": getattr(block, "description", None),
                "mime_type": getattr(block, "mime_type", None),
            }
            items.append({k: v for k, v in link.items() if v is not None})
        else:
            items.append(_dump(block))
    value: Any
    if prefer_structured and result.structured_content is not None:
        value = result.structured_content
    elif len(items) == 1:
        value = items[0]
    elif items:
        value = items
    else:
        value = ""
    if not media:
        return value
    if value in ("", []):
        kinds = ", ".join(item.media_type for item in media)
        value = f"The tool returned {len(media)} attachment(s) ({kinds}), sent after the tool results."
    return ToolReturn(return_value=value, content=media)
