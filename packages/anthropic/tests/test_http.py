"""AnthropicModel and AnthropicProvider over real HTTP against a local server on 127.0.0.1.

The server replays recorded bodies (buffered JSON, SSE split at awkward chunk boundaries), error
bodies with `retry-after`, streams that stall, break off or carry an `error` event, and the Files
and Models endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from typing import cast

import msgspec
import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UrlPolicyError
from ferrule.core.errors import UserError
from ferrule.core.http import Timeouts
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.anthropic import AnthropicFile
from ferrule.providers.anthropic import AnthropicModel
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.anthropic import DiscoveryLimits
from ferrule.providers.anthropic import FileLimits
from ferrule.providers.anthropic import FileNotDownloadableError
from ferrule.providers.anthropic import codec
from tests.support import http_server
from tests.support.cassettes import Interaction
from tests.support.cassettes import iter_interactions
from tests.support.cassettes import require_cassettes
from tests.support.http_server import Conn
from tests.support.http_server import Handler
from tests.support.http_server import LocalServer
from tests.support.http_server import Request

pytestmark = pytest.mark.anyio

KEY = "sk-ant-SENTINEL-do-not-leak-0123456789"
FAST = Timeouts(connect=2.0, first_byte=2.0, read=2.0, total=10.0)
Serve = Callable[..., "LocalServer"]


def provider_for(server: LocalServer, **kwargs: Any) -> AnthropicProvider:
    options: dict[str, Any] = {"api_key": KEY, "timeouts": FAST, **kwargs}
    return AnthropicProvider(base_url=server.url, url_policy=UrlPolicy.local(server.url), **options)


def model_for(server: LocalServer, name: str = "claude-sonnet-4-5", **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(name, provider=provider_for(server, **kwargs))


def call(prompt: str = "hi", **kwargs: Any) -> ModelCall:
    return ModelCall(messages=[ModelRequest.user_text_prompt(prompt)], **kwargs)


def recorded(predicate: Callable[[Interaction], bool]) -> Interaction:
    require_cassettes()
    return next(it for it in iter_interactions("models/cassettes/test_anthropic") if predicate(it))


def json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    return http_server.json_reply(body, status, {"request-id": "req_local_1", **(headers or {})})


def sse_response(body: bytes, sizes: tuple[int, ...] = (1, 3, 17, 64, 5)) -> Handler:
    """Stream `body` in chunks whose sizes cycle through `sizes` (splitting lines and UTF-8 anywhere)."""
    return http_server.sse_reply(body, sizes)


async def collect(model: AnthropicModel, c: ModelCall) -> list[ModelStreamEvent]:
    return [event async for event in model.stream(c)]


async def drain(model: AnthropicModel, c: ModelCall, seen: list[ModelStreamEvent]) -> None:
    """Consume a stream, keeping what was delivered before it failed."""
    async for event in model.stream(c):
        seen.append(event)


def comparable(response: ModelResponse) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            items = cast("dict[str, Any]", value).items()
            return {k: strip(v) for k, v in items if k not in ("timestamp", "provider_url")}
        if isinstance(value, list):
            return [strip(v) for v in cast("list[Any]", value)]
        return value

    return strip(msgspec.to_builtins(response))


# -- buffered and streamed replay ------------------------------------------------------------------


async def test_buffered_request_replays_a_recorded_body(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_multiple_parallel_tool_calls#0")
    server = serve(json_response(it.response_bytes))
    model = model_for(server, "claude-haiku-4-5")
    tool = ToolDefinition(name="retrieve_entity_info", parameters_json_schema={"type": "object"})
    c = call("Who is the youngest?", tools=[tool], settings=ModelSettings(max_tokens=1000))
    response = await model.request(c)
    assert [t.args for t in response.tool_calls] == [
        {"name": n} for n in ("Alice", "Bob", "Charlie", "Daisy")
    ]
    assert response.provider_url == server.url
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "anthropic-beta" not in sent.headers
    assert "authorization" not in sent.headers
    assert json.loads(sent.body) == json.loads(model.encode(c, stream=False).body)


async def test_stream_replays_a_recorded_body_split_at_awkward_boundaries(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_anthropic_model_web_search_tool_stream#0")
    server = serve(sse_response(it.response_bytes))
    events = await collect(model_for(server, "claude-sonnet-4-0"), call("weather?"))
    completed = [e for e in events if isinstance(e, ResponseCompleted)]
    assert len(completed) == 1
    assert events[-1] is completed[0]
    assert comparable(completed[0].response) == comparable(codec.decode_stream(it.response_bytes))
    assert any(isinstance(e, PartDeltaEvent) for e in events)
    (sent,) = server.requests
    assert json.loads(sent.body)["stream"] is True
    assert sent.headers["accept"] == "text/event-stream"


async def test_beta_headers_only_when_a_feature_needs_them(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_anthropic_model_thinking_part#0")
    server = serve(json_response(it.response_bytes))
    model = model_for(server)
    uploaded = UploadedFile(file_id="file_1", provider_name="anthropic", media_type="application/pdf")
    files_call = ModelCall(
        messages=[ModelRequest(parts=[UserPromptPart(content=["read", uploaded])])],
        settings=ModelSettings(extra_headers={"Anthropic-Beta": "zeta-beta, alpha-beta", "x-trace": "1"}),
    )
    await model.request(files_call)
    await model.request(call())
    first, second = server.requests
    assert first.headers["anthropic-beta"] == "alpha-beta,files-api-2025-04-14,zeta-beta"
    assert first.headers["x-trace"] == "1"
    assert "anthropic-beta" not in second.headers


async def test_large_max_tokens_uses_the_streaming_endpoint(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_request_stream_fallback_for_high_max_tokens#0")
    server = serve(sse_response(it.response_bytes))
    model = model_for(server)
    response = await model.request(call(settings=ModelSettings(max_tokens=21_334)))
    assert response.text == "2"
    assert json.loads(server.requests[0].body)["stream"] is True


async def test_max_tokens_at_the_streaming_threshold_stays_buffered(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_anthropic_model_thinking_part#0")
    server = serve(json_response(it.response_bytes))
    await model_for(server).request(call(settings=ModelSettings(max_tokens=21_333)))
    assert json.loads(server.requests[0].body)["stream"] is False


# -- errors ----------------------------------------------------------------------------------------


ERRORS: list[tuple[int, str, dict[str, str], type[ProviderError], float | None]] = [
    (429, "rate_limit_error", {"retry-after": "7"}, RateLimitError, 7.0),
    (529, "overloaded_error", {}, ServerError, None),
    (500, "api_error", {}, ServerError, None),
    (400, "invalid_request_error", {}, BadRequestError, None),
    (401, "authentication_error", {}, AuthenticationError, None),
    (404, "not_found_error", {}, BadRequestError, None),
]


@pytest.mark.parametrize(("status", "kind", "headers", "cls", "retry_after"), ERRORS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_error_bodies_map_to_error_classes(
    serve: Serve,
    status: int,
    kind: str,
    headers: dict[str, str],
    cls: type[ProviderError],
    retry_after: float | None,
    streamed: bool,
) -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": kind, "message": f"{kind} happened"}, "request_id": "req_x"}
    )
    server = serve(json_response(body.encode(), status, headers))
    model = model_for(server)
    attempt = collect(model, call()) if streamed else model.request(call())
    with pytest.raises(cls) as info:
        await attempt
    error = info.value
    assert type(error) is cls
    assert error.status_code == status
    assert error.code == kind
    assert error.retry_after == retry_after
    assert error.request_id == "req_local_1"
    assert f"{kind} happened" in error.message


async def test_the_key_never_appears_in_errors_even_when_echoed(serve: Serve) -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": f"bad key {KEY}"}}
    )
    server = serve(json_response(body.encode(), 401))
    with pytest.raises(AuthenticationError) as info:
        await model_for(server).request(
            ModelCall(messages=[ModelRequest.user_text_prompt("hi")], capture_error_body=True)
        )
    assert KEY not in str(info.value)
    assert info.value.body is not None
    assert KEY not in info.value.body
    assert KEY not in repr(model_for(server).provider)


async def test_error_event_mid_stream_raises_after_partial_output(serve: Serve) -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    server = serve(sse_response(body))
    seen: list[ModelStreamEvent] = []
    with pytest.raises(ServerError, match="Overloaded"):
        await drain(model_for(server), call(), seen)
    assert any(isinstance(e, PartDeltaEvent) for e in seen)
    assert not any(isinstance(e, ResponseCompleted) for e in seen)


async def test_stream_that_ends_without_message_stop_is_an_error(serve: Serve) -> None:
    it = recorded(lambda i: i.id == "test_anthropic/test_anthropic_model_thinking_part_stream#0")
    body = it.response_bytes
    truncated = body[: body.index(b"event: message_delta")]
    server = serve(sse_response(truncated))
    with pytest.raises(ResponseDecodeError, match="before message_stop"):
        await collect(model_for(server), call())


async def test_stalled_stream_times_out(serve: Serve) -> None:
    head = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    )

    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        conn.chunk(head)
        conn.hang()
        return False

    server = serve(handler)
    model = model_for(server, timeouts=Timeouts(connect=2.0, first_byte=2.0, read=0.3, total=10.0))
    seen: list[ModelStreamEvent] = []
    with pytest.raises(ProviderTimeoutError, match="read"):
        await drain(model, call(), seen)
    assert not any(isinstance(e, ResponseCompleted) for e in seen)


async def test_stalled_buffered_request_times_out_with_the_call_timeout(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.hang()
        return False

    server = serve(handler)
    with pytest.raises(ProviderTimeoutError):
        await model_for(server).request(call(settings=ModelSettings(timeout=0.3)))


async def test_unsupported_calls_fail_before_any_request(serve: Serve) -> None:
    server = serve(json_response(b"{}"))
    model = model_for(server, "claude-3-haiku-20240307")
    with pytest.raises(UserError):
        await model.request(call(settings=ModelSettings(thinking=True)))
    with pytest.raises(UserError):
        await collect(model_for(server), call(settings=ModelSettings(thinking_budget_tokens=10)))
    assert server.requests == []


# -- provider construction -------------------------------------------------------------------------


def test_missing_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider()
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    provider = AnthropicProvider()
    assert provider.base_url == "https://api.anthropic.com"
    assert KEY not in repr(provider)


def test_local_base_url_needs_an_explicit_policy() -> None:
    with pytest.raises(UrlPolicyError):
        AnthropicProvider(api_key=KEY, base_url="http://127.0.0.1:9")
    with pytest.raises(UserError, match="api_key"):
        AnthropicProvider(api_key=KEY, headers={"X-Api-Key": "other"})


# -- Files API and models --------------------------------------------------------------------------


FILE: dict[str, Any] = {
    "id": "file_011",
    "type": "file",
    "filename": "report.pdf",
    "mime_type": "application/pdf",
    "size_bytes": 8,
    "created_at": "2025-01-01T00:00:00Z",
    "downloadable": False,
}


def router(routes: dict[tuple[str, str], tuple[int, bytes]]) -> Callable[..., None]:
    def handler(conn: Conn, request: Request) -> None:
        status, body = routes.get(
            (request.method, request.path),
            (404, b'{"type":"error","error":{"type":"not_found_error","message":"no route"}}'),
        )
        conn.respond(status, body, {"content-type": "application/json"})

    return handler


async def test_upload_inspect_delete_and_download(serve: Serve) -> None:
    generated = {
        **FILE,
        "id": "file_gen/1",
        "downloadable": True,
        "filename": "plot.png",
        "mime_type": "image/png",
    }
    server = serve(
        router(
            {
                ("POST", "/v1/files"): (200, json.dumps(FILE).encode()),
                ("GET", "/v1/files/file_011"): (200, json.dumps(FILE).encode()),
                ("DELETE", "/v1/files/file_011"): (200, b'{"id": "file_011", "type": "file_deleted"}'),
                ("GET", "/v1/files/file_gen%2F1"): (200, json.dumps(generated).encode()),
                ("GET", "/v1/files/file_gen%2F1/content"): (200, b"\x89PNG-bytes"),
            }
        )
    )
    provider = provider_for(server)
    uploaded = await provider.upload_file(b"%PDF-1.4", filename='re"port.pdf')
    assert uploaded == AnthropicFile(**{k: v for k, v in FILE.items() if k != "type"})
    assert uploaded.uploaded_file() == UploadedFile(
        file_id="file_011", provider_name="anthropic", media_type="application/pdf"
    )
    upload = server.requests[0]
    assert upload.headers["anthropic-beta"] == "files-api-2025-04-14"
    content_type = upload.headers["content-type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    boundary = content_type.split("boundary=", 1)[1].encode()
    assert upload.body.startswith(b"--" + boundary + b"\r\n")
    assert b'name="file"; filename="re%22port.pdf"' in upload.body
    assert b"Content-Type: application/pdf\r\n\r\n%PDF-1.4\r\n--" + boundary + b"--\r\n" in upload.body

    assert await provider.get_file(uploaded.uploaded_file()) == uploaded
    await provider.delete_file(uploaded)
    with pytest.raises(FileNotDownloadableError):
        await provider.download_file(uploaded)
    requests_before = len(server.requests)
    handle = UploadedFile(file_id="file_gen/1", provider_name="anthropic")
    assert await provider.download_file(handle) == b"\x89PNG-bytes"
    assert [r.path for r in server.requests[requests_before:]] == [
        "/v1/files/file_gen%2F1",
        "/v1/files/file_gen%2F1/content",
    ]


async def test_file_handles_and_limits_are_checked_before_sending(serve: Serve) -> None:
    server = serve(router({("POST", "/v1/files"): (200, json.dumps(FILE).encode())}))
    provider = provider_for(server, file_limits=FileLimits(max_upload_bytes=8, max_filename_bytes=10))
    with pytest.raises(UserError, match="belongs to 'openai'"):
        await provider.get_file(UploadedFile(file_id="f", provider_name="openai"))
    with pytest.raises(UserError, match="empty ID"):
        await provider.delete_file(UploadedFile(file_id="", provider_name="anthropic"))
    with pytest.raises(UserError, match="no upload purpose"):
        await provider.upload_file(b"x", filename="a.txt", purpose="assistants")
    with pytest.raises(UserError, match="max_upload_bytes=8"):
        await provider.upload_file(b"123456789", filename="a.txt")
    with pytest.raises(UserError, match="max_filename_bytes"):
        await provider.upload_file(b"x", filename="abcdefg.txt")
    with pytest.raises(UserError, match="control characters"):
        await provider.upload_file(b"x", filename="a\r\nb")
    with pytest.raises(UserError, match="not a valid media type"):
        await provider.upload_file(b"x", filename="a.txt", media_type="text plain")
    assert server.requests == []
    # Exactly at both limits is accepted.
    await provider.upload_file(b"12345678", filename="abcdef.txt")
    assert len(server.requests) == 1


async def test_mismatched_file_descriptors_are_rejected(serve: Serve) -> None:
    other = {**FILE, "id": "file_other"}
    server = serve(
        router(
            {
                ("GET", "/v1/files/file_011"): (200, json.dumps(other).encode()),
                ("DELETE", "/v1/files/file_011"): (200, b'{"id": "file_011", "type": "something_else"}'),
            }
        )
    )
    provider = provider_for(server)
    handle = UploadedFile(file_id="file_011", provider_name="anthropic")
    with pytest.raises(ResponseDecodeError, match="not the one requested"):
        await provider.get_file(handle)
    with pytest.raises(ResponseDecodeError, match="not acknowledged"):
        await provider.delete_file(handle)


def models_page(ids: list[str], has_more: bool) -> bytes:
    data = [
        {"type": "model", "id": i, "display_name": i.upper(), "created_at": "2025-01-01T00:00:00Z"}
        for i in ids
    ]
    return json.dumps({"data": data, "has_more": has_more, "first_id": ids[0], "last_id": ids[-1]}).encode()


async def test_list_models_follows_pages(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> None:
        body = (
            models_page(["claude-b"], False)
            if "after_id=claude-a" in request.path
            else models_page(["claude-a"], True)
        )
        conn.respond(200, body, {"content-type": "application/json"})

    server = serve(handler)
    models = await provider_for(server).list_models()
    assert [(m.id, m.display_name) for m in models] == [("claude-a", "CLAUDE-A"), ("claude-b", "CLAUDE-B")]
    assert models[0].raw["type"] == "model"
    assert [r.path for r in server.requests] == [
        "/v1/models?limit=1000",
        "/v1/models?limit=1000&after_id=claude-a",
    ]


async def test_listing_limits_at_and_past_the_bound(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> None:
        ids = ["m1", "m2"] if "after_id" not in request.path else ["m3"]
        conn.respond(
            200, models_page(ids, "after_id" not in request.path), {"content-type": "application/json"}
        )

    server = serve(handler)
    assert len(await provider_for(server, discovery_limits=DiscoveryLimits(max_items=3)).list_models()) == 3
    with pytest.raises(ResponseDecodeError, match="max_items=2"):
        await provider_for(server, discovery_limits=DiscoveryLimits(max_items=2)).list_models()
    with pytest.raises(ResponseDecodeError, match="max_pages=1"):
        await provider_for(server, discovery_limits=DiscoveryLimits(max_pages=1)).list_models()
    assert len(await provider_for(server, discovery_limits=DiscoveryLimits(max_pages=2)).list_models()) == 3
