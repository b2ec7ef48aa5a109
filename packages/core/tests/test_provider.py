"""Provider transport against real HTTP servers on 127.0.0.1 (raw sockets in a thread).

The servers write exact bytes, so each test controls framing, compression, timing and disconnects.
Waits that depend on the client use events, never sleeps, and every timeout is well under a second.
"""

from __future__ import annotations

import gzip
import json
import logging
import socket
import threading
from collections.abc import Callable

import anyio
import httpx2
import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ProviderConnectionError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ResponseTooLargeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UrlPolicyError
from ferrule.core.http import ErrorBodyPolicy
from ferrule.core.http import HttpLimits
from ferrule.core.http import Timeouts
from ferrule.core.provider import Provider
from ferrule.core.sse import SseEvent
from ferrule.core.url_policy import UrlPolicy
from tests.support.http_server import Conn
from tests.support.http_server import Handler
from tests.support.http_server import LocalServer as Server
from tests.support.http_server import Request
from tests.support.http_server import json_reply

KEY = "sk-SENTINEL-do-not-leak-0123456789"
FAST = Timeouts(connect=2.0, first_byte=1.0, read=0.3, total=5.0)


def provider_for(server: Server, **kwargs: object) -> Provider:
    options: dict[str, object] = {"api_key": KEY, "timeouts": FAST, **kwargs}
    return Provider(base_url=server.url + "/v1", url_policy=UrlPolicy.local(server.url), **options)  # type: ignore[arg-type]


def json_ok(payload: object, headers: dict[str, str] | None = None) -> Handler:
    return json_reply(payload, headers=headers)


async def wait_thread_event(event: threading.Event) -> bool:
    return await anyio.to_thread.run_sync(event.wait, 3.0)


async def drain_sse(
    provider: Provider, path: str, received: list[str] | None = None, **kwargs: object
) -> None:
    """Consume a whole SSE stream, recording the events' data."""
    async with provider.stream_sse("GET", path, **kwargs) as events:  # type: ignore[arg-type]
        async for event in events:
            if received is not None:
                received.append(event.data)


async def drain_lines(provider: Provider, path: str) -> None:
    async with provider.stream_lines("GET", path) as lines:
        async for _ in lines:
            pass


# -- buffered requests ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_buffered_request(serve: Callable[[Handler], Server]) -> None:
    server = serve(json_ok({"ok": True}, {"x-request-id": "req_123", "X-Custom": "v"}))
    async with provider_for(server, headers={"X-Org": "acme"}) as provider:
        response = await provider.request(
            "POST", "/chat/completions", content=b'{"q":1}', headers={"X-Call": "1"}, params={"beta": "true"}
        )
    assert response.status == 200
    assert json.loads(response.content) == {"ok": True}
    assert response.request_id == "req_123"
    assert response.headers["x-custom"] == "v"
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions?beta=true"
    assert request.body == b'{"q":1}'
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-org"] == "acme"
    assert request.headers["x-call"] == "1"
    assert request.headers["user-agent"].startswith("ferrule/")


@pytest.mark.anyio
async def test_connection_is_pooled_across_requests(serve: Callable[[Handler], Server]) -> None:
    server = serve(json_ok({}))
    async with provider_for(server) as provider:
        for _ in range(3):
            await provider.request("GET", "models")
    assert len(server.requests) == 3
    assert len(server.conns) == 1


def gzip_handler(payload: bytes) -> Handler:
    compressed = gzip.compress(payload)

    def handler(conn: Conn, request: Request) -> None:
        conn.respond(200, compressed, {"content-encoding": "gzip"})

    return handler


@pytest.mark.anyio
async def test_gzip_body_at_exactly_the_limit_is_accepted(serve: Callable[[Handler], Server]) -> None:
    server = serve(gzip_handler(b"a" * 1000))
    async with provider_for(server, limits=HttpLimits(max_response_bytes=1000)) as provider:
        response = await provider.request("GET", "x")
    assert response.content == b"a" * 1000


@pytest.mark.anyio
async def test_gzip_body_over_the_limit_after_decompression_is_rejected(
    serve: Callable[[Handler], Server],
) -> None:
    server = serve(gzip_handler(b"a" * 1001))
    async with provider_for(server, limits=HttpLimits(max_response_bytes=1000)) as provider:
        with pytest.raises(ResponseTooLargeError) as info:
            await provider.request("GET", "x")
    assert info.value.category is ErrorCategory.RESPONSE_TOO_LARGE
    assert "max_response_bytes=1000" in str(info.value)


@pytest.mark.anyio
async def test_gzip_bomb_is_rejected(serve: Callable[[Handler], Server]) -> None:
    server = serve(gzip_handler(b"\0" * (20 * 1024 * 1024)))  # ~20 KiB on the wire
    async with provider_for(server, limits=HttpLimits(max_response_bytes=1024 * 1024)) as provider:
        with pytest.raises(ResponseTooLargeError):
            await provider.request("GET", "x")


@pytest.mark.anyio
@pytest.mark.parametrize("chunked", [False, True])
async def test_identity_body_limit(serve: Callable[[Handler], Server], chunked: bool) -> None:
    def handler(conn: Conn, request: Request) -> None:
        body = b"b" * int(request.path.rsplit("/", 1)[1])
        if chunked:
            conn.start_chunked()
            conn.chunk(body[:50])
            conn.chunk(body[50:])
            conn.end_chunked()
        else:
            conn.respond(200, body)

    server = serve(handler)
    async with provider_for(server, limits=HttpLimits(max_response_bytes=100)) as provider:
        assert (await provider.request("GET", "100")).content == b"b" * 100
        with pytest.raises(ResponseTooLargeError):
            await provider.request("GET", "101")


@pytest.mark.anyio
async def test_declared_length_over_the_limit_fails_before_reading(
    serve: Callable[[Handler], Server],
) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(200, b"", length=10_000_000)  # promises a body it never sends
        conn.hang()

    server = serve(handler)
    async with provider_for(server, limits=HttpLimits(max_response_bytes=100)) as provider:
        with pytest.raises(ResponseTooLargeError, match="declares 10000000 bytes"):
            await provider.request("GET", "x")


# -- error statuses ------------------------------------------------------------------------------


def error_handler(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Handler:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(status, body, headers)

    return handler


@pytest.mark.anyio
async def test_429_with_retry_after_seconds(serve: Callable[[Handler], Server]) -> None:
    body = b'{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}'
    server = serve(error_handler(429, body, {"retry-after": "7", "x-request-id": "req_rl"}))
    async with provider_for(server) as provider:
        with pytest.raises(RateLimitError) as info:
            await provider.request("POST", "chat", content=b"{}", model_name="gpt-x")
    error = info.value
    assert error.retry_after == 7.0
    assert error.status_code == 429
    assert error.request_id == "req_rl"
    assert error.code == "rate_limit_exceeded"
    assert error.provider_name == "provider"
    assert error.model_name == "gpt-x"
    assert error.retryable
    assert "Rate limit reached" in str(error)
    assert error.body is None


@pytest.mark.anyio
async def test_429_with_retry_after_http_date(serve: Callable[[Handler], Server]) -> None:
    headers = {"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT", "date": "Wed, 21 Oct 2015 07:28:00 GMT"}
    server = serve(error_handler(429, b"", headers))
    async with provider_for(server) as provider:
        with pytest.raises(RateLimitError) as info:
            await provider.request("GET", "x")
    assert info.value.retry_after == 30.0


@pytest.mark.anyio
@pytest.mark.parametrize("status", [500, 503])
async def test_server_errors(serve: Callable[[Handler], Server], status: int) -> None:
    server = serve(error_handler(status, b"<html>oops</html>", {"retry-after": "2"}))
    async with provider_for(server) as provider:
        with pytest.raises(ServerError) as info:
            await provider.request("GET", "x")
    assert info.value.status_code == status
    assert info.value.retry_after == 2.0
    assert info.value.code is None


@pytest.mark.anyio
async def test_401(serve: Callable[[Handler], Server]) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}})
    server = serve(error_handler(401, body.encode()))
    async with provider_for(server) as provider:
        with pytest.raises(AuthenticationError) as info:
            await provider.request("GET", "x")
    assert info.value.code == "invalid_api_key"
    assert "Incorrect API key provided: <redacted>" in info.value.message
    assert "check the API key" in info.value.message
    assert KEY not in str(info.value)


@pytest.mark.anyio
async def test_400_with_json_error(serve: Callable[[Handler], Server]) -> None:
    body = (
        b'{"error": {"message": "Unknown parameter: foo", "type": "invalid_request_error", "param": "foo"}}'
    )
    server = serve(error_handler(400, body))
    async with provider_for(server) as provider:
        with pytest.raises(BadRequestError) as info:
            await provider.request("POST", "x", content=b"{}")
    assert info.value.code == "invalid_request_error"
    assert info.value.message == "Unknown parameter: foo"
    assert not info.value.retryable


@pytest.mark.anyio
async def test_400_without_json_error(serve: Callable[[Handler], Server]) -> None:
    server = serve(error_handler(400, b"<html><body>nginx says no</body></html>"))
    async with provider_for(server) as provider:
        with pytest.raises(BadRequestError) as info:
            await provider.request("POST", "x", content=b"{}")
    assert info.value.message == "Bad Request"
    assert info.value.code is None
    assert info.value.body is None


@pytest.mark.anyio
async def test_error_body_capture_is_opt_in_bounded_and_redacted(serve: Callable[[Handler], Server]) -> None:
    def echo(conn: Conn, request: Request) -> None:
        # A hostile or buggy server echoes the request headers, credential included.
        conn.respond(400, json.dumps({"echo": request.headers}).encode())

    server = serve(echo)
    async with provider_for(server, error_body=ErrorBodyPolicy(capture=True, max_bytes=10_000)) as provider:
        with pytest.raises(BadRequestError) as info:
            await provider.request("GET", "x")
        assert info.value.body is not None
        assert '"authorization": "Bearer <redacted>"' in info.value.body
        assert KEY not in info.value.body
        assert info.value.body_truncated is False
        # A per-call policy overrides the provider's.
        with pytest.raises(BadRequestError) as info:
            await provider.request("GET", "x", error_body=ErrorBodyPolicy(capture=True, max_bytes=5))
        assert info.value.body == '{"ech'
        assert info.value.body_truncated is True


@pytest.mark.anyio
async def test_huge_error_body_is_read_only_up_to_the_cap(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(500, b"x" * 1000, length=10_000_000)
        conn.hang()

    server = serve(handler)
    limits = HttpLimits(max_error_body_bytes=100)
    policy = ErrorBodyPolicy(capture=True, max_bytes=50)
    async with provider_for(server, limits=limits, error_body=policy) as provider:
        with pytest.raises(ServerError) as info:
            await provider.request("GET", "x")
    assert info.value.body == "x" * 50
    assert info.value.body_truncated


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["drop", "hang"])
async def test_broken_error_body_still_raises_the_status_error(
    serve: Callable[[Handler], Server], ending: str
) -> None:
    def handler(conn: Conn, request: Request) -> bool | None:
        conn.respond(503, b'{"error": {"mess', length=1000)
        if ending == "hang":
            conn.hang()
        return False

    server = serve(handler)
    async with provider_for(server, error_body=ErrorBodyPolicy(capture=True)) as provider:
        with pytest.raises(ServerError) as info:
            await provider.request("GET", "x")
    assert info.value.body == '{"error": {"mess'
    assert info.value.body_truncated


@pytest.mark.anyio
async def test_corrupt_compression_is_a_decode_error(serve: Callable[[Handler], Server]) -> None:
    server = serve(error_handler(200, b"this is not gzip at all", {"content-encoding": "gzip"}))
    async with provider_for(server) as provider:
        with pytest.raises(ResponseDecodeError, match="could not decompress"):
            await provider.request("GET", "x")


@pytest.mark.anyio
async def test_subclass_hooks_parse_and_classify_errors(serve: Callable[[Handler], Server]) -> None:
    class Acme(Provider):
        name = "acme"

        def _auth_headers(self) -> dict[str, str]:
            return {"X-Api-Key": KEY}

        def _parse_error_body(self, status: int, body: bytes) -> tuple[str | None, str | None]:
            return "acme_" + body.decode(), "acme says " + body.decode()

        def _classify_error(self, status: int, code: str | None, message: str | None) -> ErrorCategory | None:
            return ErrorCategory.CONTENT_FILTER if code == "acme_filtered" else None

    server = serve(error_handler(400, b"filtered"))
    async with Acme(base_url=server.url, api_key=KEY, url_policy=UrlPolicy.local(server.url)) as provider:
        with pytest.raises(ContentFilterError) as info:
            await provider.request("GET", "x")
    assert info.value.provider_name == "acme"
    assert info.value.message == "acme says filtered"
    assert server.requests[0].headers["x-api-key"] == KEY
    assert "authorization" not in server.requests[0].headers


# -- redirects -----------------------------------------------------------------------------------


def redirect_handler(conn: Conn, request: Request) -> None:
    if request.path.endswith("/start"):
        conn.respond(302, b"", {"location": "/v1/elsewhere?token=shh"})
    else:
        conn.respond(200, b"followed!")


@pytest.mark.anyio
async def test_redirect_is_not_followed(serve: Callable[[Handler], Server]) -> None:
    server = serve(redirect_handler)
    async with provider_for(server) as provider:
        with pytest.raises(BadRequestError) as info:
            await provider.request("GET", "start")
        assert info.value.status_code == 302
        assert "never followed" in str(info.value)
        assert "shh" not in str(info.value)
        response = await provider.request("GET", "start", on_redirect="return")
        assert response.status == 302
        assert response.headers["location"] == "/v1/elsewhere?token=shh"
    assert [r.path for r in server.requests] == ["/v1/start", "/v1/start"]


@pytest.mark.anyio
async def test_redirect_not_followed_with_an_application_client(serve: Callable[[Handler], Server]) -> None:
    server = serve(redirect_handler)
    async with httpx2.AsyncClient(follow_redirects=True) as client:
        provider = provider_for(server, http_client=client)
        with pytest.raises(BadRequestError):
            await provider.request("GET", "start")
        await provider.aclose()
        assert not client.is_closed  # the application's client stays open
    assert [r.path for r in server.requests] == ["/v1/start"]


@pytest.mark.anyio
async def test_redirect_while_streaming_is_an_error(serve: Callable[[Handler], Server]) -> None:
    server = serve(redirect_handler)
    async with provider_for(server) as provider:
        with pytest.raises(BadRequestError):
            async with provider.stream_sse("GET", "start"):
                pytest.fail("a redirect must not open a stream")


# -- timeouts, deadlines and connection failures -------------------------------------------------


@pytest.mark.anyio
async def test_server_that_hangs_after_headers_times_out(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(200, b"partial", length=100)
        conn.hang()

    server = serve(handler)
    async with provider_for(server) as provider:
        with pytest.raises(ProviderTimeoutError) as info:
            await provider.request("GET", "x")
    assert "Timeouts.read=0.3" in str(info.value)
    assert info.value.status_code == 200


@pytest.mark.anyio
async def test_server_that_never_answers_hits_the_first_byte_timeout(
    serve: Callable[[Handler], Server],
) -> None:
    server = serve(lambda conn, request: conn.hang())
    timeouts = Timeouts(connect=2.0, first_byte=0.2, read=5.0, total=5.0)
    async with provider_for(server, timeouts=timeouts) as provider:
        with pytest.raises(ProviderTimeoutError) as info:
            await provider.request("GET", "x")
    assert "no response headers" in str(info.value)
    assert "first_byte=0.2" in str(info.value)
    assert info.value.status_code is None


def dripping(conn: Conn, request: Request) -> None:
    """Send a byte every 50 ms forever: never idle long enough for the read timeout."""
    conn.start_chunked()
    while not conn.server.stopping.wait(0.05):
        conn.chunk(b"data: x\n\n")


@pytest.mark.anyio
async def test_total_timeout_bounds_a_dripping_response(serve: Callable[[Handler], Server]) -> None:
    server = serve(dripping)
    timeouts = Timeouts(connect=2.0, first_byte=1.0, read=0.5, total=0.4)
    async with provider_for(server, timeouts=timeouts) as provider:
        with pytest.raises(ProviderTimeoutError, match=r"Timeouts\.total=0\.4"):
            await provider.request("GET", "x")


@pytest.mark.anyio
async def test_callers_deadline_tightens_the_total_timeout(serve: Callable[[Handler], Server]) -> None:
    server = serve(dripping)
    async with provider_for(server) as provider:
        with pytest.raises(ProviderTimeoutError, match="caller's deadline"):
            await provider.request("GET", "x", deadline=anyio.current_time() + 0.3)
        # The deadline also bounds a stream, however busy.
        with pytest.raises(ProviderTimeoutError, match="caller's deadline"):
            await drain_sse(provider, "x", deadline=anyio.current_time() + 0.3)


@pytest.mark.anyio
async def test_passed_deadline_fails_before_connecting(serve: Callable[[Handler], Server]) -> None:
    server = serve(json_ok({}))
    async with provider_for(server) as provider:
        with pytest.raises(ProviderTimeoutError):
            await provider.request("GET", "x", deadline=anyio.current_time() - 1)
    assert server.requests == []


@pytest.mark.anyio
async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the request: nothing listens
    url = f"http://127.0.0.1:{port}"
    async with Provider(
        base_url=url, api_key=KEY, url_policy=UrlPolicy.local(url), timeouts=FAST
    ) as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await provider.request("GET", "x")
    assert "could not connect" in str(info.value)
    assert info.value.retryable


@pytest.mark.anyio
async def test_connection_closed_before_the_body_is_complete(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.respond(200, b"short", length=100)
        return False  # close the socket

    server = serve(handler)
    async with provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError, match="broke before the response was complete"):
            await provider.request("GET", "x")


@pytest.mark.anyio
async def test_cancelling_a_request_closes_its_connection(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.server.go.set()
        conn.wait_for_disconnect()

    server = serve(handler)
    async with provider_for(server) as provider, anyio.create_task_group() as tg:
        tg.start_soon(provider.request, "GET", "x")
        assert await wait_thread_event(server.go)
        tg.cancel_scope.cancel()
    assert await wait_thread_event(server.disconnected)


# -- streaming -----------------------------------------------------------------------------------


def chunked_reply(*chunks: bytes, headers: dict[str, str] | None = None) -> Handler:
    """A 200 whose body is sent in exactly these chunks (a chunked transfer, each its own write)."""

    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked(headers=headers)
        for chunk in chunks:
            conn.chunk(chunk)
        conn.end_chunked()

    return handler


@pytest.mark.anyio
async def test_sse_events_arrive_incrementally(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked(headers={"content-type": "text/event-stream", "x-request-id": "req_s"})
        conn.chunk(b"event: start\ndata: 1\n\n")
        conn.wait(conn.server.go)  # the second event only exists after the client saw the first
        conn.chunk(b"data: 2\r\n")
        conn.chunk(b"data: 3\r\n\r\n: comment\n\ndata: [DONE]\n\n")
        conn.end_chunked()

    server = serve(handler)
    received: list[SseEvent] = []
    async with provider_for(server) as provider:
        async with provider.stream_sse("POST", "stream", content=b"{}") as events:
            async for event in events:
                received.append(event)
                server.go.set()
        assert received == [SseEvent(event="start", data="1"), SseEvent(data="2\n3"), SseEvent(data="[DONE]")]
        assert server.requests[0].headers["accept"] == "text/event-stream"


@pytest.mark.anyio
async def test_sse_gzip_stream(serve: Callable[[Handler], Server]) -> None:
    payload = gzip.compress(b"".join(b"data: %d\n\n" % i for i in range(100)))
    pieces = [payload[i : i + 7] for i in range(0, len(payload), 7)]
    server = serve(chunked_reply(*pieces, headers={"content-encoding": "gzip"}))
    async with provider_for(server) as provider, provider.stream_sse("GET", "x") as events:
        assert [int(e.data) async for e in events] == list(range(100))


@pytest.mark.anyio
async def test_stream_that_drops_midway_raises(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked()
        conn.chunk(b"data: 1\n\n")
        conn.chunk(b'data: {"partial')
        return False  # close without the terminating chunk

    server = serve(handler)
    received: list[str] = []
    async with provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError) as info:
            await drain_sse(provider, "x", received)
    assert received == ["1"]
    assert info.value.status_code == 200


@pytest.mark.anyio
async def test_stream_with_short_content_length_raises(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.respond(200, b"data: 1\n\n", length=1000)
        return False

    server = serve(handler)
    async with provider_for(server) as provider:
        with pytest.raises(ProviderConnectionError):
            await drain_sse(provider, "x")


@pytest.mark.anyio
async def test_idle_stream_times_out(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked()
        conn.chunk(b"data: 1\n\n")
        conn.hang()

    server = serve(handler)
    async with provider_for(server) as provider:
        with pytest.raises(ProviderTimeoutError, match=r"no data .* Timeouts\.read=0\.3"):
            await drain_sse(provider, "x")


@pytest.mark.anyio
async def test_sse_line_limit(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        size = int(request.path.rsplit("/", 1)[1])
        conn.start_chunked(headers={"x-request-id": "req_big"})
        line = b"data: " + b"y" * (size - 6)
        for i in range(0, len(line), 16):
            conn.chunk(line[i : i + 16])
        conn.chunk(b"\n\n")
        conn.end_chunked()

    server = serve(handler)
    async with provider_for(server, limits=HttpLimits(max_stream_line_bytes=100)) as provider:
        async with provider.stream_sse("GET", "100") as events:
            assert [e.data async for e in events] == ["y" * 94]
        with pytest.raises(ResponseTooLargeError) as info:
            await drain_sse(provider, "101", model_name="m")
    assert info.value.request_id == "req_big"
    assert info.value.provider_name == "provider"
    assert info.value.model_name == "m"


@pytest.mark.anyio
async def test_stream_error_status_raises_on_entry(serve: Callable[[Handler], Server]) -> None:
    server = serve(error_handler(429, b'{"error": {"message": "slow down"}}', {"retry-after": "1"}))
    async with provider_for(server) as provider:
        with pytest.raises(RateLimitError, match="slow down") as info:
            async with provider.stream_sse("POST", "x", content=b"{}"):
                pytest.fail("an error status must not open a stream")
    assert info.value.retry_after == 1.0


def endless_stream(conn: Conn, request: Request) -> None:
    conn.start_chunked()
    conn.chunk(b"data: 1\n\ndata: 2\n\ndata: 3\n\n")
    conn.wait_for_disconnect()


@pytest.mark.anyio
async def test_early_exit_closes_the_connection(serve: Callable[[Handler], Server]) -> None:
    server = serve(endless_stream)
    async with provider_for(server) as provider:
        async with provider.stream_sse("GET", "x") as events:
            async for event in events:
                assert event.data == "1"
                break
        assert await wait_thread_event(server.disconnected)


@pytest.mark.anyio
async def test_cancelled_consumer_closes_the_connection(serve: Callable[[Handler], Server]) -> None:
    server = serve(endless_stream)
    seen: list[str] = []
    async with provider_for(server) as provider:
        with anyio.CancelScope() as scope:
            async with provider.stream_sse("GET", "x") as events:
                async for event in events:
                    seen.append(event.data)
                    if len(seen) == 3:
                        scope.cancel()
                        await anyio.sleep(5)  # interrupted by the cancellation
        assert scope.cancelled_caught
        assert await wait_thread_event(server.disconnected)
    assert seen == ["1", "2", "3"]


@pytest.mark.anyio
async def test_stream_lines_for_ndjson(serve: Callable[[Handler], Server]) -> None:
    server = serve(chunked_reply(b'{"a": 1}\n{"b"', b': 2}\r\n\n  \n{"c": 3}'))
    async with provider_for(server) as provider, provider.stream_lines("POST", "x", content=b"{}") as lines:
        assert [json.loads(line) async for line in lines] == [{"a": 1}, {"b": 2}, {"c": 3}]


@pytest.mark.anyio
async def test_stream_lines_limit(serve: Callable[[Handler], Server]) -> None:
    def handler(conn: Conn, request: Request) -> None:
        size = int(request.path.rsplit("/", 1)[1])
        conn.start_chunked()
        conn.chunk(b"z" * size + b"\r\n")
        conn.end_chunked()

    server = serve(handler)
    async with provider_for(server, limits=HttpLimits(max_stream_line_bytes=10)) as provider:
        async with provider.stream_lines("GET", "10") as lines:
            assert [line async for line in lines] == [b"z" * 10]
        with pytest.raises(ResponseTooLargeError):
            await drain_lines(provider, "11")


@pytest.mark.anyio
async def test_stream_bytes(serve: Callable[[Handler], Server]) -> None:
    server = serve(chunked_reply(b"abc", b"def"))
    async with provider_for(server) as provider, provider.stream_bytes("GET", "x") as chunks:
        assert b"".join([c async for c in chunks]) == b"abcdef"


@pytest.mark.anyio
async def test_a_streamed_request_is_prepared_and_sent_on_entry_and_entered_once(
    serve: Callable[[Handler], Server],
) -> None:
    server = serve(chunked_reply(b"abc"))
    async with provider_for(server) as provider:
        stream = provider.stream_bytes("GET", "x")
        provider.url_policy = UrlPolicy()  # a policy narrowed before entry refuses the request
        with pytest.raises(UrlPolicyError):
            async with stream:
                pass
        assert server.requests == []
        provider.url_policy = UrlPolicy.local(server.url)
        stream = provider.stream_bytes("GET", "x")
        async with stream as chunks:
            assert [c async for c in chunks] == [b"abc"]
            with pytest.raises(RuntimeError, match="entered once"):
                await stream.__aenter__()
        assert len(server.requests) == 1


# -- URL policy, credentials and lifecycle -------------------------------------------------------


def test_base_url_is_checked_at_construction() -> None:
    with pytest.raises(UrlPolicyError, match="plain http"):
        Provider(base_url="http://127.0.0.1:8080/v1")
    with pytest.raises(UrlPolicyError, match="loopback"):
        Provider(base_url="https://127.0.0.1/v1")
    with pytest.raises(UrlPolicyError, match="credentials"):
        Provider(base_url="https://user:pw@api.example.com/v1")
    with pytest.raises(ValueError, match="query"):
        Provider(base_url="https://api.example.com/v1?x=1")
    provider = Provider(base_url="https://api.example.com/v1/")
    assert provider.base_url == "https://api.example.com/v1"


@pytest.mark.anyio
async def test_request_urls_are_checked_before_connecting(serve: Callable[[Handler], Server]) -> None:
    server = serve(json_ok({}))
    provider = provider_for(server)
    # The policy is checked on every request, so narrowing it later takes effect.
    provider.url_policy = UrlPolicy()
    with pytest.raises(UrlPolicyError):
        await provider.request("GET", "x")
    assert server.requests == []
    await provider.aclose()


@pytest.mark.anyio
async def test_credentials_never_appear_in_errors_logs_or_repr(
    serve: Callable[[Handler], Server], caplog: pytest.LogCaptureFixture
) -> None:
    def handler(conn: Conn, request: Request) -> bool | None:
        echo = json.dumps(
            {"error": {"message": f"you sent {request.headers}", "code": request.headers["authorization"]}}
        )
        if request.path.endswith("/hang"):
            conn.hang()
        elif request.path.endswith("/drop"):
            conn.respond(200, b"x", length=10)
            return False
        else:
            conn.respond(
                int(request.path.rsplit("/", 1)[1]),
                echo.encode(),
                {"x-echo": request.headers["authorization"]},
            )
        return None

    server = serve(handler)
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    policy = ErrorBodyPolicy(capture=True, max_bytes=100_000)
    async with provider_for(
        server, error_body=policy, headers={"x-secondary-key": "second-SENTINEL-secret"}
    ) as p:
        for path in ("401", "400", "429", "500", "302", "hang", "drop"):
            with pytest.raises(ProviderError) as info:
                await p.request("POST", path, content=KEY.encode(), timeouts=Timeouts(first_byte=0.2))
            errors.append(info.value)
        with pytest.raises(UrlPolicyError) as policy_error:
            Provider(base_url=f"https://user:{KEY}@api.example.com", api_key=KEY)
        errors.append(policy_error.value)
        texts = [repr(p), str(p)]
    for error in errors:
        texts += [str(error), repr(error), repr(vars(error))]
    # Every logger: httpcore2 logs the (echoing) response headers at DEBUG, redacted during a request.
    texts += [record.getMessage() for record in caplog.records]
    assert any(record.name.startswith("ferrule") for record in caplog.records)
    assert any("<redacted>" in t for t in texts)
    for text in texts:
        assert KEY not in text
        assert "second-SENTINEL-secret" not in text


@pytest.mark.anyio
async def test_aclose_closes_the_owned_client_and_the_provider_stays_usable(
    serve: Callable[[Handler], Server],
) -> None:
    server = serve(json_ok({}))
    provider = provider_for(server)
    await provider.request("GET", "x")
    first = provider._http_client()
    await provider.aclose()
    assert first.is_closed
    await provider.request("GET", "x")
    assert provider._http_client() is not first
    await provider.aclose()


def test_provider_survives_a_new_event_loop(serve: Callable[[Handler], Server]) -> None:
    # run_sync-style use starts a fresh event loop per call; pooled sockets of the old one must not be reused.
    server = serve(json_ok({"n": 1}))
    provider = provider_for(server)

    async def call() -> bytes:
        return (await provider.request("GET", "x")).content

    assert anyio.run(call, backend="trio") == b'{"n": 1}'
    assert anyio.run(call, backend="asyncio") == b'{"n": 1}'
    assert anyio.run(call, backend="asyncio") == b'{"n": 1}'
    assert len(server.requests) == 3
