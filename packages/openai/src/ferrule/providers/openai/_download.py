"""Download user content an endpoint cannot take by URL (internal).

Chat Completions takes audio and (on OpenAI) documents only as bytes, and any item marked
`force_download` must be sent as bytes. Downloads go through a throwaway
[`Provider`][ferrule.core.provider.Provider] for the item's origin, so the same transport rules
apply as to model requests: the URL policy (strict by default: HTTPS, public hosts), no redirects,
timeouts and a size limit.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable

import msgspec

from ferrule.core.http import HttpLimits
from ferrule.core.http import Timeouts
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import UserContent
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.messages import is_request
from ferrule.core.model import ModelCall
from ferrule.core.provider import Provider
from ferrule.core.url_policy import UrlPolicy

DEFAULT_MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
"""Largest file downloaded for a request (OpenAI's own limit for inline files is 20 MiB... per part)."""

FileUrl = ImageUrl | AudioUrl | VideoUrl | DocumentUrl


class _Download(Provider):
    name = "download"


async def download(
    item: FileUrl, *, policy: UrlPolicy, max_bytes: int, timeouts: Timeouts | None = None
) -> BinaryContent:
    """Fetch `item`'s URL within the policy and size limit and return its bytes."""
    url = policy.check(item.url)
    origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
    target = url.raw_path.decode("ascii") or "/"
    async with _Download(
        base_url=origin,
        url_policy=policy,
        limits=HttpLimits(max_response_bytes=max_bytes),
        timeouts=timeouts or Timeouts(total=60.0),
    ) as fetcher:
        response = await fetcher.request("GET", target)
    media_type = (
        item.media_type
        or response.headers.get("content-type", "").split(";", 1)[0].strip()
        or item.resolved_media_type
    )
    return BinaryContent(
        data=response.content,
        media_type=media_type,
        vendor_metadata=item.vendor_metadata,
        identifier=item.identifier,
    )


def any_needs_bytes(messages: Iterable[Message], needs_bytes: Callable[[UserContent], bool]) -> bool:
    """Whether an item of the user content of `messages` `needs_bytes`."""
    # Plain loops, not nested generators, and the requests picked out in C: this runs over a
    # history on every request.
    for message in filter(is_request, messages):
        for part in message.parts:
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                for item in part.content:
                    if needs_bytes(item):
                        return True
    return False


async def resolve_downloads(
    call: ModelCall,
    needs_bytes: Callable[[UserContent], bool],
    *,
    policy: UrlPolicy | None = None,
    max_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
) -> ModelCall:
    """`call` with every user-content item that `needs_bytes` replaced by its downloaded bytes."""
    if not any_needs_bytes(call.messages, needs_bytes):
        return call
    policy = policy or UrlPolicy()
    messages = list(call.messages)
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        parts: list[ModelRequestPart] = []
        changed = False
        for part in message.parts:
            if (
                isinstance(part, UserPromptPart)
                and not isinstance(part.content, str)
                and any(needs_bytes(i) for i in part.content)
            ):
                content: list[UserContent] = []
                for item in part.content:
                    if needs_bytes(item) and isinstance(item, ImageUrl | AudioUrl | VideoUrl | DocumentUrl):
                        content.append(await download(item, policy=policy, max_bytes=max_bytes))
                    else:
                        content.append(item)
                parts.append(UserPromptPart(content=content, timestamp=part.timestamp))
                changed = True
            else:
                parts.append(part)
        if changed:
            messages[index] = msgspec.structs.replace(message, parts=parts)
    return msgspec.structs.replace(call, messages=messages)
