"""The HTTP client of streamable-HTTP servers: URL policy on every request, bounded JSON bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Mapping
from typing import Any

import httpx2

from ferrule.core.url_policy import UrlPolicy

__all__ = ["BODY_TOO_LARGE", "make_http_client"]

BODY_TOO_LARGE = "ferrule-mcp: the response body exceeds"
"""Start of the message of the error raised for an oversized JSON body (the SDK reports it as a parse error)."""


class _BodyTooLarge(httpx2.StreamError):
    """A non-streaming response body grew past the limit while it was read."""


class _LimitedStream(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, limit: int, declared: int | None) -> None:
        self._stream = stream
        self._limit = limit
        self._declared = declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Raised while the body is read (not from the transport), so the SDK answers the one
        # request with an error instead of tearing the whole connection down.
        if self._declared is not None and self._declared > self._limit:
            raise _BodyTooLarge(
                f"{BODY_TOO_LARGE} the limit of {self._limit} bytes (Content-Length {self._declared})"
            )
        total = 0
        async for chunk in self._stream:
            total += len(chunk)
            if total > self._limit:
                raise _BodyTooLarge(
                    f"{BODY_TOO_LARGE} the limit of {self._limit} bytes (read {total} so far)"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _LimitedTransport(httpx2.AsyncBaseTransport):
    """Bounds JSON response bodies; SSE bodies are bounded per event by the SDK instead."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return response
        length = response.headers.get("content-length")
        declared = int(length) if length is not None and length.isdigit() else None
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_LimitedStream(response.stream, self._limit, declared),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def make_http_client(
    *,
    policy: UrlPolicy,
    headers: Mapping[str, str],
    auth: httpx2.Auth | None,
    limit: int,
    connect_timeout: float,
    read_timeout: float,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> httpx2.AsyncClient:
    """An `AsyncClient` that checks `policy` on every request, including same-origin redirects."""

    async def check(request: httpx2.Request) -> None:
        policy.check(request.url)

    return httpx2.AsyncClient(
        headers=dict(headers),
        auth=auth,
        timeout=httpx2.Timeout(connect_timeout, read=read_timeout),
        follow_redirects=False,
        transport=_LimitedTransport(transport or httpx2.AsyncHTTPTransport(), limit),
        event_hooks={"request": [check]},
    )
