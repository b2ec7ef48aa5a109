"""The buffered body read's single cancel scope: its deadline moves with every chunk, never past the total."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import ResponseTooLargeError
from ferrule.core.http import HttpLimits
from ferrule.core.http import Timeouts
from ferrule.core.provider import Provider
from ferrule.core.url_policy import UrlPolicy
from tests.support.http_server import Conn
from tests.support.http_server import Handler
from tests.support.http_server import LocalServer as Server
from tests.support.http_server import Request

READ = Timeouts(connect=2.0, first_byte=1.0, read=0.3, total=5.0)


def _provider(server: Server, **kwargs: object) -> Provider:
    options: dict[str, object] = {"api_key": "key-0123", "timeouts": READ, **kwargs}
    return Provider(base_url=server.url + "/v1", url_policy=UrlPolicy.local(server.url), **options)  # type: ignore[arg-type]


def _slow_chunks(count: int, then_hang: bool) -> Handler:
    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked()
        for index in range(count):
            conn.chunk(f"{index};".encode())
            time.sleep(0.1)
        if then_hang:
            conn.hang()
        else:
            conn.end_chunked()

    return handler


@pytest.mark.anyio
async def test_read_timeout_restarts_with_every_chunk(serve: Callable[[Handler], Server]) -> None:
    # Six chunks 0.1 s apart take longer than Timeouts.read=0.3 in all, but no single gap does.
    server = serve(_slow_chunks(6, then_hang=False))
    async with _provider(server) as provider:
        response = await provider.request("GET", "x")
    assert response.content == b"0;1;2;3;4;5;"


@pytest.mark.anyio
async def test_read_timeout_after_some_chunks(serve: Callable[[Handler], Server]) -> None:
    server = serve(_slow_chunks(3, then_hang=True))
    async with _provider(server) as provider:
        with pytest.raises(ProviderTimeoutError, match=r"no data .* within Timeouts\.read=0\.3"):
            await provider.request("GET", "x")


@pytest.mark.anyio
@pytest.mark.parametrize("extra", [0, 1])
async def test_chunked_body_at_and_past_the_limit(serve: Callable[[Handler], Server], extra: int) -> None:
    body = b"x" * (1000 + extra)

    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked()
        for start in range(0, len(body), 300):
            conn.chunk(body[start : start + 300])
        conn.end_chunked()

    server = serve(handler)
    async with _provider(server, limits=HttpLimits(max_response_bytes=1000)) as provider:
        if extra:
            with pytest.raises(ResponseTooLargeError, match="exceeds 1000 bytes"):
                await provider.request("GET", "x")
        else:
            assert (await provider.request("GET", "x")).content == body
