"""The HTTP path against a local server on 127.0.0.1 replaying recorded and hand-written Gemini bodies."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.http import Timeouts
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.settings import ModelSettings
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.google import DiscoveryLimits
from ferrule.providers.google import FileLimits
from ferrule.providers.google import GoogleFile
from ferrule.providers.google import GoogleModel
from ferrule.providers.google import GoogleProvider
from ferrule.providers.google import VertexAIProvider
from ferrule.providers.google.codec import decode_stream
from tests.support.cassettes import iter_interactions
from tests.support.cassettes import require_cassettes
from tests.support.http_server import Serve
from tests.support.http_server import json_reply

KEY = "AIzaSy-SENTINEL-test-key-0123456789abcdefghij"
TOKEN = "ya29.SENTINEL-access-token-0123456789"
FAST = Timeouts(connect=2.0, first_byte=2.0, read=0.4, total=10.0)
CALL = ModelCall(messages=[ModelRequest(parts=[UserPromptPart(content="Hello")])])

pytestmark = pytest.mark.anyio


def recorded(id_: str) -> Any:
    require_cassettes()
    for it in iter_interactions("models/cassettes/test_google"):
        if it.id == id_:
            return it
    pytest.skip(f"recording {id_} not found")


def gla(server: Any, **kw: Any) -> GoogleProvider:
    return GoogleProvider(
        api_key=KEY,
        base_url=f"{server.origin}/v1beta",
        upload_url=f"{server.origin}/upload/v1beta",
        url_policy=kw.pop("url_policy", server.policy),
        timeouts=kw.pop("timeouts", FAST),
        **kw,
    )


async def consume(model: GoogleModel, seen: list[Any] | None = None) -> None:
    """Read a whole stream, keeping its events in `seen`."""
    async for event in model.stream(CALL):
        if seen is not None:
            seen.append(event)


def google_error(code: int, status: str, message: str, **extra: Any) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "status": status, **extra}}).encode()


def error_case(
    status: int,
    code: str,
    message: str,
    error: type[Exception],
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> tuple[int, bytes, dict[str, str], type[Exception], str]:
    """A row of the error table: an HTTP `status` whose Gemini error says `code`, and the `error` it raises."""
    return status, google_error(status, code, message, **extra), headers or {}, error, code


async def test_buffered_request_replays_a_recorded_body(serve: Serve) -> None:
    it = recorded("test_google/test_google_model#0")
    server = serve(json_reply(it.response_bytes))
    model = GoogleModel("gemini-2.5-flash", provider=gla(server))
    response = await model.request(CALL)
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1beta/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers
    assert (
        request.json()
        == model.build_request(CALL)
        == {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    )
    assert response.text == "Hello! How can I help you today?"
    assert (response.provider_name, response.provider_url) == ("google-gla", f"{server.origin}/v1beta")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 43)


def _awkward(data: bytes) -> list[bytes]:
    """Pieces that split lines, CRLFs, `data:` prefixes and multi-byte characters."""
    sizes = [1, 2, 3, 5, 7, 11, 13]
    pieces: list[bytes] = []
    position = 0
    for index in range(len(data)):
        if position >= len(data):
            break
        size = sizes[index % len(sizes)]
        pieces.append(data[position : position + size])
        position += size
    return pieces


async def test_stream_split_at_awkward_boundaries(serve: Serve) -> None:
    it = recorded("test_google/test_google_model_thinking_part_iter#0")
    data = it.response_bytes.replace(b"\n", b"\r\n")  # CRLF framing, as the live API sends it

    def handler(conn: Any, request: Any) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        for piece in _awkward(data):
            conn.chunk(piece)
        conn.end_chunked()
        return False

    server = serve(handler)
    model = GoogleModel("gemini-2.5-pro", provider=gla(server))
    events = [event async for event in model.stream(CALL)]
    (request,) = server.requests
    assert (request.path, request.query) == ("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse")
    assert request.headers["accept"] == "text/event-stream"
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert sum(isinstance(e, ResponseCompleted) for e in events) == 1
    expected = decode_stream(it.response_bytes, model_name="gemini-2.5-pro")
    assert [type(p) for p in final.response.parts] == [type(p) for p in expected.parts]
    assert final.response.text == expected.text
    assert final.response.thinking == expected.thinking
    assert final.response.usage == expected.usage
    deltas = "".join(
        e.delta.content_delta
        for e in events
        if isinstance(e, PartDeltaEvent) and e.index == 1 and isinstance(e.delta, TextPartDelta)
    )
    assert deltas == expected.text
    assert [e.index for e in events if isinstance(e, PartStartEvent)] == [0, 1]
    assert [e.index for e in events if isinstance(e, PartEndEvent)] == [0, 1]


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "code"),
    [
        error_case(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            RateLimitError,
            {"retry-after": "37"},
            details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}],
        ),
        error_case(500, "INTERNAL", "An internal error has occurred.", ServerError),
        error_case(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ServerError),
        error_case(
            400,
            "INVALID_ARGUMENT",
            "* GenerateContentRequest.contents: contents is not specified",
            BadRequestError,
        ),
        error_case(
            400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", AuthenticationError
        ),
        error_case(
            400, "FAILED_PRECONDITION", "User location is not supported for the API use.", BadRequestError
        ),
        error_case(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta", BadRequestError),
        error_case(
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired before operation could complete.",
            ProviderTimeoutError,
        ),
    ],
)
@pytest.mark.parametrize("streamed", [False, True])
async def test_error_bodies_map_to_error_classes(
    serve: Serve,
    status: int,
    body: bytes,
    headers: dict[str, str],
    error: type[Exception],
    code: str,
    streamed: bool,
) -> None:
    # The streaming endpoint wraps its error in a one-item array.
    payload = b"[" + body + b"]" if streamed else body
    model = GoogleModel("gemini-2.5-flash", provider=gla(serve(json_reply(payload, status, headers))))
    with pytest.raises(error) as info:
        await (consume(model) if streamed else model.request(CALL))
    raised: Any = info.value
    assert raised.status_code == status
    assert raised.code == code
    assert json.loads(body)["error"]["message"][:40] in raised.message
    assert KEY not in str(raised)
    if status == 429:
        assert raised.retry_after == 37.0


async def test_retry_delay_in_the_body_sets_retry_after_without_a_header(serve: Serve) -> None:
    body = google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded.",
        details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}],
    )
    model = GoogleModel("gemini-2.5-flash", provider=gla(serve(json_reply(body, 429))))
    with pytest.raises(RateLimitError) as info:
        await model.request(CALL)
    assert info.value.retry_after == 12.0


async def test_error_body_capture_is_opt_in_and_redacted(serve: Serve) -> None:
    echoed = google_error(400, "INVALID_ARGUMENT", f"bad request for key {KEY}")
    model = GoogleModel("gemini-2.5-flash", provider=gla(serve(json_reply(echoed, 400))))
    with pytest.raises(BadRequestError) as plain:
        await model.request(CALL)
    assert plain.value.body is None
    with pytest.raises(BadRequestError) as captured:
        await model.request(ModelCall(messages=CALL.messages, capture_error_body=True))
    assert captured.value.body is not None
    assert "INVALID_ARGUMENT" in captured.value.body
    for error in (plain.value, captured.value):
        assert KEY not in str(error)
        assert KEY not in (error.body or "")


PARTIAL_TEXT_EVENT = b'data: {"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]}\r\n\r\n'
"""The first event of a stream that never finishes: some text, no finishReason."""


async def test_stalled_stream_times_out(serve: Serve) -> None:
    def handler(conn: Any, request: Any) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        conn.chunk(PARTIAL_TEXT_EVENT)
        conn.hang()
        return False

    model = GoogleModel(
        "gemini-2.5-flash",
        provider=gla(serve(handler), timeouts=Timeouts(connect=2, first_byte=2, read=0.3, total=10)),
    )
    seen: list[Any] = []
    with pytest.raises(ProviderTimeoutError, match="read"):
        await consume(model, seen)
    assert not any(isinstance(e, ResponseCompleted) for e in seen)
    assert seen  # the text before the stall was delivered


async def test_settings_timeout_bounds_a_buffered_call(serve: Serve) -> None:
    def handler(conn: Any, request: Any) -> bool:
        conn.hang()
        return False

    model = GoogleModel(
        "gemini-2.5-flash",
        provider=gla(serve(handler), timeouts=Timeouts(connect=2, first_byte=None, read=None, total=60)),
    )
    call = ModelCall(messages=CALL.messages, settings=ModelSettings(timeout=0.3))
    with pytest.raises(ProviderTimeoutError):
        await model.request(call)


@pytest.mark.parametrize(
    ("chunks", "error", "message"),
    [
        pytest.param(
            [PARTIAL_TEXT_EVENT], ResponseDecodeError, "without a finishReason", id="cut-before-finish-reason"
        ),
        pytest.param(
            [
                PARTIAL_TEXT_EVENT,
                b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}'
                b"\r\n\r\n",
            ],
            ServerError,
            "overloaded",
            id="error-event-inside-a-stream",
        ),
    ],
)
async def test_a_broken_stream_raises_a_typed_error(
    serve: Serve, chunks: list[bytes], error: type[Exception], message: str
) -> None:
    def handler(conn: Any, request: Any) -> bool:
        conn.start_chunked(200, {"content-type": "text/event-stream"})
        for chunk in chunks:
            conn.chunk(chunk)
        conn.end_chunked()
        return False

    model = GoogleModel("gemini-2.5-flash", provider=gla(serve(handler)))
    with pytest.raises(error, match=message):
        await consume(model)


async def test_extra_headers_are_sent_and_credentials_refused(serve: Serve) -> None:
    it = recorded("test_google/test_google_model#0")
    server = serve(json_reply(it.response_bytes))
    model = GoogleModel("gemini-2.5-flash", provider=gla(server))
    await model.request(
        ModelCall(messages=CALL.messages, settings=ModelSettings(extra_headers={"X-Trace": "abc"}))
    )
    assert server.requests[0].headers["x-trace"] == "abc"
    with pytest.raises(UserError, match="x-goog-api-key"):
        await model.request(
            ModelCall(
                messages=CALL.messages, settings=ModelSettings(extra_headers={"x-goog-api-key": "other"})
            )
        )
    assert len(server.requests) == 1


async def test_vertex_paths_and_bearer_token(serve: Serve) -> None:
    it = recorded("test_google/test_google_model_vertex_provider#0")
    server = serve(json_reply(it.response_bytes))
    provider = VertexAIProvider(
        access_token=TOKEN,
        project="my-project-1",
        location="europe-west4",
        base_url=f"{server.origin}/v1",
        url_policy=server.policy,
        timeouts=FAST,
    )
    model = GoogleModel("gemini-2.0-flash", provider=provider)
    response = await model.request(CALL)
    (request,) = server.requests
    assert (
        request.path
        == "/v1/projects/my-project-1/locations/europe-west4/publishers/google/models/gemini-2.0-flash:generateContent"
    )
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert "x-goog-api-key" not in request.headers
    assert response.provider_name == "google-vertex"
    assert response.text


async def test_count_tokens(serve: Serve) -> None:
    server = serve(
        json_reply({"totalTokens": 12, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}]})
    )
    model = GoogleModel("gemini-2.5-flash", provider=gla(server))
    assert await model.count_tokens(ModelCall(messages=CALL.messages, instructions="Be brief.")) == 12
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash:countTokens"
    assert request.json() == {
        "generateContentRequest": {
            "model": "models/gemini-2.5-flash",
            "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
        }
    }


# -- Files API ------------------------------------------------------------------------------------


def _file_record(origin: str, name: str = "files/abc-123", size: int = 5, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "displayName": "notes",
        "mimeType": "text/plain",
        "sizeBytes": str(size),
        "createTime": "2026-01-01T00:00:00Z",
        "expirationTime": "2026-01-03T00:00:00Z",
        "sha256Hash": "aGFzaA==",
        "uri": f"{origin}/v1beta/{name}",
        "state": "ACTIVE",
        **extra,
    }


async def test_resumable_upload(serve: Serve) -> None:
    def handler(conn: Any, request: Any) -> None:
        if request.headers.get("x-goog-upload-command") == "start":
            session = f"{conn.server.origin}/upload/v1beta/files?upload_id=U1&upload_protocol=resumable"
            conn.respond(200, b"", {"x-goog-upload-url": session, "x-goog-upload-status": "active"})
        else:
            conn.respond_json(200, {"file": _file_record(conn.server.origin)})

    server = serve(handler)
    provider = gla(server)
    stored = await provider.upload_file(b"hello", media_type="text/plain", display_name="notes")
    start, upload = server.requests
    assert (start.method, start.target) == ("POST", "/upload/v1beta/files")
    assert start.headers["x-goog-upload-protocol"] == "resumable"
    assert start.headers["x-goog-upload-header-content-length"] == "5"
    assert start.headers["x-goog-upload-header-content-type"] == "text/plain"
    assert start.headers["x-goog-api-key"] == KEY
    assert start.json() == {"file": {"displayName": "notes"}}
    assert upload.target == "/upload/v1beta/files?upload_id=U1&upload_protocol=resumable"
    assert (upload.headers["x-goog-upload-command"], upload.headers["x-goog-upload-offset"]) == (
        "upload, finalize",
        "0",
    )
    assert upload.body == b"hello"
    assert stored.name == "files/abc-123"
    assert stored.size_bytes == 5
    assert stored.state == "ACTIVE"
    assert stored.uploaded_file() == UploadedFile(
        file_id=f"{server.origin}/v1beta/files/abc-123", provider_name="google-gla", media_type="text/plain"
    )


async def test_foreign_upload_session_url_is_rejected(serve: Serve) -> None:
    elsewhere = serve(lambda conn, request: conn.respond(200, b"{}"))

    def handler(conn: Any, request: Any) -> None:
        conn.respond(200, b"", {"x-goog-upload-url": f"{elsewhere.origin}/upload/v1beta/files?upload_id=U1"})

    server = serve(handler)
    # Even with both origins allowed by the URL policy, the session must be on the upload origin.
    both = UrlPolicy.local(server.origin, elsewhere.origin)
    with pytest.raises(ResponseDecodeError, match="not on the configured upload origin"):
        await gla(server, url_policy=both).upload_file(b"secret data", media_type="text/plain")
    assert len(server.requests) == 1  # only the start request
    assert elsewhere.requests == []  # the file (and the key) never left


@pytest.mark.parametrize(
    "session",
    [
        None,
        "",
        "http://[zz/x",
        "/upload/v1beta/files?upload_id=relative",
        "https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id=1",
    ],
)
async def test_bad_upload_session_urls(serve: Serve, session: str | None) -> None:
    def handler(conn: Any, request: Any) -> None:
        conn.respond(200, b"", {} if session is None else {"x-goog-upload-url": session})

    server = serve(handler)
    with pytest.raises(ResponseDecodeError):
        await gla(server).upload_file(b"x", media_type="text/plain")
    assert len(server.requests) == 1


async def test_upload_limits_and_result_checks(serve: Serve) -> None:
    sizes: list[int] = []

    def handler(conn: Any, request: Any) -> None:
        if request.headers.get("x-goog-upload-command") == "start":
            conn.respond(
                200, b"", {"x-goog-upload-url": f"{conn.server.origin}/upload/v1beta/files?upload_id=U"}
            )
        else:
            conn.respond_json(200, {"file": _file_record(conn.server.origin, size=sizes.pop(0))})

    server = serve(handler)
    provider = gla(server, file_limits=FileLimits(max_upload_bytes=10, max_display_name_chars=4))
    sizes.append(10)
    await provider.upload_file(b"x" * 10, media_type="text/plain", display_name="abcd")
    before = len(server.requests)
    with pytest.raises(UserError, match="max_upload_bytes"):
        await provider.upload_file(b"x" * 11, media_type="text/plain")
    with pytest.raises(UserError, match="display_name"):
        await provider.upload_file(b"x", media_type="text/plain", display_name="abcde")
    with pytest.raises(UserError, match="MIME type"):
        await provider.upload_file(b"x", media_type="text plain")
    with pytest.raises(UserError, match="empty"):
        await provider.upload_file(b"", media_type="text/plain")
    assert len(server.requests) == before  # refused before any request
    sizes.append(3)
    with pytest.raises(ResponseDecodeError, match="stored 3 bytes"):
        await provider.upload_file(b"x" * 5, media_type="text/plain")


async def test_inspect_delete_and_no_download(serve: Serve) -> None:
    def handler(conn: Any, request: Any) -> None:
        if request.method == "DELETE":
            conn.respond_json(200, {})
        elif request.path.endswith("/other"):
            conn.respond_json(200, _file_record(conn.server.origin, name="files/not-other"))
        else:
            conn.respond_json(200, _file_record(conn.server.origin))

    server = serve(handler)
    provider = gla(server)
    record = await provider.inspect_file("files/abc-123")
    assert record.name == "files/abc-123"
    assert record.raw["sha256Hash"] == "aGFzaA=="
    assert (await provider.inspect_file(record.uploaded_file())).name == record.name
    assert (await provider.inspect_file("abc-123")).name == record.name
    await provider.delete_file(record)
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/v1beta/files/abc-123"),
        ("GET", "/v1beta/files/abc-123"),
        ("GET", "/v1beta/files/abc-123"),
        ("DELETE", "/v1beta/files/abc-123"),
    ]
    with pytest.raises(ResponseDecodeError, match="asked for"):
        await provider.inspect_file("files/other")
    count = len(server.requests)
    for bad in (
        UploadedFile(file_id="file-1", provider_name="openai"),
        "",
        "files/../../secret",
        "FILES/ABC",
    ):
        with pytest.raises(UserError):
            await provider.inspect_file(bad)
        with pytest.raises(UserError):
            await provider.delete_file(bad)
    with pytest.raises(UnsupportedFeatureError, match="downloading stored files"):
        await provider.download_file(record)
    assert len(server.requests) == count  # nothing was sent for refused handles


async def test_delete_needs_an_empty_acknowledgement(serve: Serve) -> None:
    server = serve(json_reply({"unexpected": True}))
    with pytest.raises(ResponseDecodeError, match="acknowledgement"):
        await gla(server).delete_file("files/x")


@pytest.mark.parametrize(
    "record",
    [
        {"name": "files/abc"},  # no uri
        {"name": "notfiles/abc", "uri": "https://x/v1beta/notfiles/abc"},
        {"name": "files/abc", "uri": "https://x/v1beta/files/zzz"},
        {"name": "files/abc", "uri": "https://x/v1beta/files/abc", "sizeBytes": "-1"},
        {"name": "files/abc", "uri": "https://x/v1beta/files/abc", "sizeBytes": "many"},
    ],
)
async def test_invalid_file_records(serve: Serve, record: dict[str, Any]) -> None:
    server = serve(json_reply(record))
    with pytest.raises(ResponseDecodeError):
        await gla(server).inspect_file("files/abc")


# -- model discovery --------------------------------------------------------------------------------


def _pages(count: int, per_page: int) -> Callable[[Any, Any], None]:
    def handler(conn: Any, request: Any) -> None:
        query = dict(pair.split("=", 1) for pair in request.query.split("&"))
        page = int(query.get("pageToken", "0"))
        models = [
            {
                "name": f"models/gemini-{page}-{i}",
                "displayName": f"G {page}.{i}",
                "inputTokenLimit": 1000,
                "supportedGenerationMethods": ["generateContent"],
            }
            for i in range(per_page)
        ]
        body: dict[str, Any] = {"models": models}
        if page + 1 < count:
            body["nextPageToken"] = str(page + 1)
        conn.respond_json(200, body)

    return handler


async def test_list_models_follows_pages(serve: Serve) -> None:
    server = serve(_pages(3, 2))
    listed = await gla(server, discovery_limits=DiscoveryLimits(page_size=2, max_pages=3)).list_models()
    assert [m.id for m in listed.models] == [
        "gemini-0-0",
        "gemini-0-1",
        "gemini-1-0",
        "gemini-1-1",
        "gemini-2-0",
        "gemini-2-1",
    ]
    assert not listed.truncated
    assert listed.models[0].input_token_limit == 1000
    assert listed.models[0].supported_generation_methods == ["generateContent"]
    assert server.requests[0].query == "pageSize=2"
    assert server.requests[1].query == "pageSize=2&pageToken=1"


async def test_list_models_page_limit_exactly_and_one_past(serve: Serve) -> None:
    exact = await gla(serve(_pages(2, 1)), discovery_limits=DiscoveryLimits(max_pages=2)).list_models()
    assert (len(exact.models), exact.truncated) == (2, False)
    server = serve(_pages(3, 1))
    past = await gla(server, discovery_limits=DiscoveryLimits(max_pages=2)).list_models()
    assert (len(past.models), past.truncated, len(server.requests)) == (2, True, 2)


async def test_list_models_model_limit_exactly_and_one_past(serve: Serve) -> None:
    exact = await gla(serve(_pages(2, 3)), discovery_limits=DiscoveryLimits(max_models=6)).list_models()
    assert (len(exact.models), exact.truncated) == (6, False)
    past = await gla(serve(_pages(2, 3)), discovery_limits=DiscoveryLimits(max_models=5)).list_models()
    assert (len(past.models), past.truncated) == (5, True)


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"models": {}}',
        b'{"models": [1]}',
        b'{"models": [{"name": "gemini"}]}',
        b'{"models": [], "nextPageToken": 3}',
        b"{",
    ],
)
async def test_list_models_rejects_malformed_pages(serve: Serve, body: bytes) -> None:
    server = serve(json_reply(body))
    with pytest.raises(ResponseDecodeError):
        await gla(server).list_models()


async def test_vertex_has_no_discovery_and_no_files() -> None:
    provider = VertexAIProvider(access_token=TOKEN, project="my-project-1", location="global")
    with pytest.raises(UnsupportedFeatureError, match="model discovery"):
        await provider.list_models()
    assert not hasattr(provider, "upload_file")


def test_google_file_handle_round_trip() -> None:
    record = GoogleFile(
        name="files/a1",
        uri="https://generativelanguage.googleapis.com/v1beta/files/a1",
        media_type="video/mp4",
    )
    assert record.uploaded_file() == UploadedFile(
        file_id="https://generativelanguage.googleapis.com/v1beta/files/a1",
        provider_name="google-gla",
        media_type="video/mp4",
    )
