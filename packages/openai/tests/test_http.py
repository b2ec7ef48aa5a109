"""The model clients end to end against a local HTTP server on 127.0.0.1 (no network).

The server replays response bodies recorded from the real APIs (status, content type, SSE split at
awkward chunk boundaries) and small hand-written ones for failure modes: error statuses with and
without JSON bodies, 429 with Retry-After, truncated streams, a server that hangs after the
headers, oversized bodies, dropped connections and early cancellation.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import msgspec
import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ProviderConnectionError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ResponseTooLargeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UrlPolicyError
from ferrule.core.errors import UserError
from ferrule.core.http import HttpLimits
from ferrule.core.http import Timeouts
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolDefinition
from ferrule.core.profile import ModelProfile
from ferrule.core.retry import RetryPolicy
from ferrule.core.retry import request_with_retry
from ferrule.core.retry import stream_with_retry
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.openai import AzureOpenAIProvider
from ferrule.providers.openai import LlamaCppServerProvider
from ferrule.providers.openai import OllamaProvider
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAICompatibleProvider
from ferrule.providers.openai import OpenAIProvider
from ferrule.providers.openai import OpenAIResponsesModel
from ferrule.providers.openai import OpenRouterProvider
from ferrule.providers.openai import OpenRouterRouting
from ferrule.providers.openai import local_url_policy
from tests.support import http_server
from tests.support.cassettes import iter_interactions
from tests.support.cassettes import require_cassettes
from tests.support.http_server import Conn
from tests.support.http_server import Handler
from tests.support.http_server import LocalServer
from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.provtests import object_tool

FAST = Timeouts(connect=2.0, first_byte=2.0, read=0.5, total=10.0)
KEY = "sk-test-SENTINEL-0123456789abcdef"
NO_WAIT = RetryPolicy(max_retries=2, initial_delay=0.0, max_delay=0.0)
"""The core retry policy without waiting (the model clients never retry on their own)."""


def recorded(interaction_id: str) -> Any:
    require_cassettes()
    directory = "models/cassettes/" + interaction_id.split("/", 1)[0]
    for it in iter_interactions(directory):
        if it.id == interaction_id:
            return it
    raise AssertionError(f"no recorded interaction {interaction_id}")


def openai(server: LocalServer, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(
        api_key=KEY, base_url=server.base_url, url_policy=server.policy, timeouts=FAST, **kwargs
    )


def user(text: str = "What is the capital of France?") -> ModelCall:
    return ModelCall(messages=[ModelRequest(parts=[UserPromptPart(content=text)])])


def json_reply(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    return http_server.json_reply(body, status, {"x-request-id": "req_123", **(headers or {})})


async def drain(stream: Any, sink: list[ModelStreamEvent]) -> None:
    """Append every event of `stream` to `sink` (which keeps what arrived before a failure)."""
    async for event in stream:
        sink.append(event)


async def collect(stream: Any) -> list[ModelStreamEvent]:
    return [event async for event in stream]


def check_stream_invariants(events: list[ModelStreamEvent]) -> None:
    """Exactly one completed response, last; every started part ends; deltas add up to the final parts."""
    assert isinstance(events[-1], ResponseCompleted)
    assert sum(isinstance(e, ResponseCompleted) for e in events) == 1
    started = {e.index for e in events if isinstance(e, PartStartEvent)}
    ended = {e.index for e in events if isinstance(e, PartEndEvent)}
    assert started == ended
    final = events[-1].response
    for index, part in enumerate(final.parts):
        if isinstance(part, TextPart):
            deltas = "".join(
                e.delta.content_delta
                for e in events
                if isinstance(e, PartDeltaEvent) and e.index == index and isinstance(e.delta, TextPartDelta)
            )
            assert deltas == part.content


# --- buffered and streamed happy paths with recorded bodies ---------------------------------------------


@pytest.mark.anyio
async def test_chat_buffered_recorded_body(serve: Serve) -> None:
    it = recorded("test_openai/test_openai_instructions#0")
    server = serve(json_reply(it.response_json))
    model = OpenAIChatModel("gpt-4o", provider=openai(server, organization="org-1", project="proj-1"))
    call = ModelCall(
        messages=user().messages,
        instructions="You are a helpful assistant.",
        request_id="run-42",
        settings=ModelSettings(extra_headers={"X-Trace": "abc"}, temperature=0.0),
    )
    response = await model.request(call)
    assert response.text == it.response_json["choices"][0]["message"]["content"]
    assert response.provider_name == "openai"
    assert response.provider_url == server.base_url
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["openai-organization"] == "org-1"
    assert request.headers["openai-project"] == "proj-1"
    assert request.headers["x-client-request-id"] == "run-42"
    assert request.headers["x-trace"] == "abc"
    body = json.loads(request.body)
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert body["temperature"] == 0.0
    assert "stream" not in body


@pytest.mark.anyio
@pytest.mark.parametrize("sizes", [(1,), (7, 1, 13, 64, 3), (4096,)])
async def test_chat_stream_recorded_tool_call_split_awkwardly(serve: Serve, sizes: tuple[int, ...]) -> None:
    it = recorded("test_openai/test_run_stream_sync_streams_real_model#0")
    server = serve(lambda conn, request: conn.stream(it.response_bytes, sizes))
    model = OpenAIChatModel("gpt-4o-mini", provider=openai(server))
    tool = object_tool("get_capital", {"country": {"type": "string"}})
    events = await collect(
        model.stream(ModelCall(messages=user("Capital of the UK?").messages, tools=[tool]))
    )
    check_stream_invariants(events)
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    [call] = final.response.tool_calls
    assert (call.tool_name, call.args) == ("get_capital", '{"country":"UK"}')
    assert final.response.usage.input_tokens == 53
    body = json.loads(server.requests[0].body)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert server.requests[0].headers["accept"] == "text/event-stream"


@pytest.mark.anyio
async def test_chat_stream_reasoning_content_utf8_split(serve: Serve) -> None:
    it = recorded("test_deepseek/test_deepseek_model_thinking_stream#0")
    # One-byte chunks split every multi-byte character (the answer has an emoji).
    server = serve(lambda conn, request: conn.stream(it.response_bytes, (1, 2, 3)))
    provider = OpenAICompatibleProvider(
        base_url=server.base_url, api_key=KEY, url_policy=server.policy, timeouts=FAST, name="deepseek"
    )
    model = OpenAIChatModel(
        "deepseek-reasoner", provider=provider, profile=ModelProfile(supports_thinking=True)
    )
    events = await collect(model.stream(user("Hello")))
    check_stream_invariants(events)
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    thinking, text = final.response.parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.id == "reasoning_content"
    assert text.content == "Hello there! 😊 How can I help you today?"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_responses_stream_recorded_reasoning_and_call(serve: Serve) -> None:
    it = recorded("test_openai_responses/test_openai_responses_thinking_part_iter#0")
    server = serve(lambda conn, request: conn.stream(it.response_bytes, (5, 11, 2, 300)))
    model = OpenAIResponsesModel("o3-mini", provider=openai(server))
    events = await collect(model.stream(user("How do I cross the street?")))
    check_stream_invariants(events)
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert any(isinstance(p, ThinkingPart) and p.signature for p in final.response.parts)
    body = json.loads(server.requests[0].body)
    assert server.requests[0].path == "/v1/responses"
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["stream"] is True


@pytest.mark.anyio
async def test_responses_buffered_recorded_body(serve: Serve) -> None:
    it = recorded("test_openai_responses/test_native_output#0")
    server = serve(json_reply(it.response_json))
    model = OpenAIResponsesModel("gpt-4o", provider=openai(server))
    tool = ToolDefinition(
        name="get_user_country", parameters_json_schema={"type": "object", "properties": {}}
    )
    response = await model.request(ModelCall(messages=user().messages, tools=[tool], cache_key="tenant-7"))
    [call] = response.tool_calls
    assert call.tool_name == "get_user_country"
    body = json.loads(server.requests[0].body)
    assert body["prompt_cache_key"] == "tenant-7"
    assert body["tools"][0]["strict"] is True
    assert "include" not in body  # gpt-4o does not reason


# --- error statuses, retries and Retry-After ----------------------------------------------------------


@pytest.mark.anyio
async def test_400_with_json_error_body_is_a_bad_request(serve: Serve) -> None:
    it = recorded("test_openai_responses/test_openai_responses_model_http_error#0")
    server = serve(json_reply(it.response_json, status=400))
    model = OpenAIResponsesModel("gpt-4o", provider=openai(server))
    with pytest.raises(BadRequestError) as raised:
        await model.request(user())
    assert "decimal below minimum value" in raised.value.message
    assert raised.value.status_code == 400
    assert raised.value.request_id == "req_123"
    assert KEY not in str(raised.value)
    assert len(server.requests) == 1  # not retried


@pytest.mark.anyio
async def test_500_without_json_body_is_retried_then_raised(serve: Serve) -> None:
    server = serve(
        lambda conn, request: conn.respond(502, b"<html>bad gateway</html>", {"content-type": "text/html"})
    )
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(ServerError) as raised:
        await model.request(user())
    assert raised.value.status_code == 502
    assert raised.value.retryable
    assert len(server.requests) == 1  # the model itself never retries
    with pytest.raises(ServerError):
        await request_with_retry(model, user(), policy=NO_WAIT)
    assert len(server.requests) == 4  # under the core policy: the first attempt and two retries


@pytest.mark.anyio
async def test_429_retry_after_is_honoured_then_succeeds(serve: Serve) -> None:
    it = recorded("test_openai/test_openai_instructions#0")
    calls = 0

    def handler(conn: Conn, request: Request) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            conn.respond(
                429,
                json.dumps({"error": {"message": "slow down", "code": "rate_limit_exceeded"}}).encode(),
                {"retry-after": "0"},
            )
        else:
            conn.respond(200, json.dumps(it.response_json).encode(), {"content-type": "application/json"})

    server = serve(handler)
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    response = await request_with_retry(model, user(), policy=RetryPolicy(max_retries=1, initial_delay=60.0))
    assert response.text  # the zero Retry-After was used instead of the 60-second backoff
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_429_with_long_retry_after_is_raised_with_the_delay(serve: Serve) -> None:
    server = serve(
        json_reply(
            {"error": {"message": "slow down", "type": "requests"}},
            status=429,
            headers={"retry-after": "3600"},
        )
    )
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(RateLimitError) as raised:
        await request_with_retry(model, user(), policy=NO_WAIT)
    assert raised.value.retry_after == 3600
    assert len(server.requests) == 1  # waiting an hour exceeds the retry budget: raised at once


@pytest.mark.anyio
async def test_429_out_of_quota_is_not_a_retryable_rate_limit(serve: Serve) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    server = serve(json_reply(body, status=429))
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(BadRequestError) as raised:
        await request_with_retry(model, user(), policy=NO_WAIT)
    assert raised.value.code == "insufficient_quota"
    assert not raised.value.retryable
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_401_is_an_authentication_error(serve: Serve) -> None:
    server = serve(
        json_reply(
            {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}},
            status=401,
        )
    )
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(AuthenticationError) as raised:
        await model.request(user())
    assert KEY not in str(raised.value)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_error_status_on_a_stream_is_raised_before_any_event(serve: Serve) -> None:
    server = serve(json_reply({"error": {"message": "overloaded"}}, status=503))
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(ServerError):
        await collect(stream_with_retry(model, user(), policy=RetryPolicy(max_retries=1, initial_delay=0.0)))
    assert len(server.requests) == 2


# --- malformed and truncated bodies ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_malformed_json_body_is_a_decode_error(serve: Serve) -> None:
    server = serve(json_reply(b'{"choices": [{"message": {"content": "hi"'))
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(ResponseDecodeError):
        await model.request(user())


@pytest.mark.anyio
async def test_truncated_stream_after_events_raises_and_is_not_retried(
    serve: Serve,
) -> None:
    it = recorded("test_openai/test_run_stream_sync_streams_real_model#1")
    body = it.response_bytes
    cut = body[: body.index(b'"finish_reason":"stop"') - 300]  # the body ends cleanly, but early
    cut = cut[: cut.rindex(b"\n\n") + 2]
    server = serve(lambda conn, request: conn.stream(cut))
    model = OpenAIChatModel("gpt-4o-mini", provider=openai(server))
    events: list[ModelStreamEvent] = []
    with pytest.raises(ResponseDecodeError, match="ended before"):
        await drain(stream_with_retry(model, user(), policy=NO_WAIT), events)
    assert events
    assert not any(isinstance(e, ResponseCompleted) for e in events)
    assert len(server.requests) == 1  # visible output was emitted: never retried


_FAILED_EVENTS: list[dict[str, Any]] = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "server_error", "message": "boom"},
        },
    },
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        pytest.param(
            b": keep-alive\n\n", ResponseDecodeError, None, id="empty-stream-is-never-an-empty-success"
        ),
        pytest.param(
            b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in _FAILED_EVENTS),
            ServerError,
            "boom",
            id="response-failed-event",
        ),
        pytest.param(
            b'event: error\ndata: {"type": "error", "code": "rate_limit_exceeded", "message": "too fast"}\n\n',
            RateLimitError,
            "too fast",
            id="error-event-rate-limit",
        ),
    ],
)
async def test_a_failed_responses_stream_raises_a_typed_error(
    serve: Serve, body: bytes, error: type[Exception], message: str | None
) -> None:
    server = serve(lambda conn, request: conn.stream(body))
    model = OpenAIResponsesModel("gpt-4o", provider=openai(server))
    with pytest.raises(error, match=message):
        await collect(model.stream(user()))


@pytest.mark.anyio
async def test_oversized_buffered_body(serve: Serve) -> None:
    it = recorded("test_openai/test_openai_instructions#0")
    data = json.dumps(it.response_json).encode()
    server = serve(json_reply(data))
    at_limit = OpenAIProvider(
        api_key=KEY,
        base_url=server.base_url,
        url_policy=server.policy,
        timeouts=FAST,
        limits=HttpLimits(max_response_bytes=len(data)),
    )
    assert (await OpenAIChatModel("gpt-4o", provider=at_limit).request(user())).text
    past = OpenAIProvider(
        api_key=KEY,
        base_url=server.base_url,
        url_policy=server.policy,
        timeouts=FAST,
        limits=HttpLimits(max_response_bytes=len(data) - 1),
    )
    with pytest.raises(ResponseTooLargeError):
        await OpenAIChatModel("gpt-4o", provider=past).request(user())


@pytest.mark.anyio
async def test_oversized_stream_line(serve: Serve) -> None:
    line = b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 5000}}]}).encode()
    server = serve(lambda conn, request: conn.stream(line + b"\n\ndata: [DONE]\n\n"))
    provider = OpenAIProvider(
        api_key=KEY,
        base_url=server.base_url,
        url_policy=server.policy,
        timeouts=FAST,
        limits=HttpLimits(max_stream_line_bytes=1024),
    )
    with pytest.raises(ResponseTooLargeError):
        await collect(OpenAIChatModel("gpt-4o", provider=provider).stream(user()))


# --- hanging, dropped and cancelled connections ----------------------------------------------------------


@pytest.mark.anyio
async def test_server_hanging_after_headers_times_out(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.start_chunked(headers={"content-type": "text/event-stream"})
        conn.chunk(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n')
        conn.hang()

    server = serve(handler)
    provider = OpenAIProvider(
        api_key=KEY,
        base_url=server.base_url,
        url_policy=server.policy,
        timeouts=Timeouts(connect=2, read=0.2, total=5),
    )
    model = OpenAIChatModel("gpt-4o", provider=provider)
    events: list[ModelStreamEvent] = []
    with pytest.raises(ProviderTimeoutError):
        await drain(model.stream(user()), events)
    assert events  # the first delta arrived before the stall
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_connection_dropped_mid_stream_is_a_connection_error(serve: Serve) -> None:
    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked(headers={"content-type": "text/event-stream"})
        conn.chunk(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n')
        conn.send(b'40\r\ndata: {"choi')  # a chunk cut short, then the socket closes
        return False

    server = serve(handler)
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(ProviderConnectionError):
        await collect(model.stream(user()))
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_cancelling_mid_stream_closes_the_connection(serve: Serve) -> None:
    closed = threading.Event()

    def handler(conn: Conn, request: Request) -> bool:
        conn.start_chunked(headers={"content-type": "text/event-stream"})
        conn.chunk(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n')
        conn.sock.settimeout(5)
        try:
            while conn.sock.recv(1024):  # the client sends nothing more; EOF means it closed
                pass
        except OSError:
            pass
        closed.set()
        return False

    server = serve(handler)
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    stream = model.stream(user())
    async for event in stream:
        if isinstance(event, PartDeltaEvent):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert await anyio.to_thread.run_sync(closed.wait, 5)


# --- content filter, profiles before I/O, and request shaping ---------------------------------------------


@pytest.mark.anyio
async def test_refusal_raises_content_filter_error(serve: Serve) -> None:
    body = {
        "id": "c1",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            }
        ],
    }
    server = serve(json_reply(body))
    model = OpenAIChatModel("gpt-4o", provider=openai(server))
    with pytest.raises(ContentFilterError, match="can't help") as raised:
        await model.request(user())
    assert raised.value.details is not None
    assert raised.value.details["response"].finish_reason == "content_filter"


@pytest.mark.anyio
async def test_unsupported_feature_fails_before_any_request(serve: Serve) -> None:
    server = serve(json_reply({}))
    model = OpenAIChatModel("mystery-model-9000", provider=openai(server))
    tool = ToolDefinition(name="t")
    with pytest.raises(UnsupportedFeatureError):
        await model.request(ModelCall(messages=user().messages, tools=[tool]))
    with pytest.raises(UnsupportedFeatureError):
        await model.request(ModelCall(messages=user().messages, settings=ModelSettings(temperature=0.5)))
    assert server.requests == []


@pytest.mark.anyio
async def test_openrouter_typed_routing_and_extra_body(serve: Serve) -> None:
    it = recorded("test_openrouter/test_openrouter_web_search_annotations#0")
    server = serve(json_reply(it.response_json))
    provider = OpenRouterProvider(
        api_key=KEY,
        base_url=server.base_url,
        url_policy=server.policy,
        timeouts=FAST,
        app_title="ferrule tests",
    )
    routing = OpenRouterRouting(
        order=["anthropic", "google-vertex"], allow_fallbacks=False, data_collection="deny", zdr=True
    )
    model = OpenAIChatModel("openai/gpt-4.1-mini", provider=provider, routing=routing)
    extra = ModelSettings(
        extra_body=[
            ProviderExtraBody(provider="openrouter", body={"transforms": ["middle-out"]}),
            ProviderExtraBody(provider="openai", body={"ignored": 1}),
        ]
    )
    await model.request(ModelCall(messages=user().messages, settings=extra))
    request = server.requests[0]
    body = json.loads(request.body)
    assert body["provider"] == {
        "order": ["anthropic", "google-vertex"],
        "allow_fallbacks": False,
        "data_collection": "deny",
        "zdr": True,
    }
    assert body["transforms"] == ["middle-out"]
    assert "ignored" not in body
    assert request.headers["x-title"] == "ferrule tests"
    clash = ModelSettings(
        extra_body=[ProviderExtraBody(provider="openrouter", body={"provider": {"order": ["x"]}})]
    )
    with pytest.raises(UserError, match="provider"):
        await model.request(ModelCall(messages=user().messages, settings=clash))
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_azure_deployment_urls_and_api_key_header(serve: Serve) -> None:
    it = recorded("test_openai/test_openai_instructions#0")
    server = serve(json_reply(it.response_json))
    legacy = AzureOpenAIProvider(
        endpoint=server.origin, api_key=KEY, api_version="2024-10-21", url_policy=server.policy, timeouts=FAST
    )
    await OpenAIChatModel("gpt-4o", provider=legacy).request(user())
    v1 = AzureOpenAIProvider(
        endpoint=server.origin + "/openai/v1", api_key=KEY, url_policy=server.policy, timeouts=FAST
    )
    await OpenAIChatModel("gpt-4o", provider=v1).request(user())
    first, second = server.requests
    assert first.path == "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    assert second.path == "/openai/v1/chat/completions"
    for request in (first, second):
        assert request.headers["api-key"] == KEY
        assert "authorization" not in request.headers
    with pytest.raises(UserError, match="deployment name"):
        await OpenAIChatModel("../admin", provider=legacy).request(user())


@pytest.mark.anyio
async def test_audio_url_is_downloaded_within_the_policy(serve: Serve) -> None:
    audio = b"ID3\x03fake-mp3-bytes"
    it = recorded("test_openai/test_audio_as_binary_content_input#0")

    def handler(conn: Conn, request: Request) -> None:
        if request.method == "GET":
            conn.respond(200, audio, {"content-type": "audio/mpeg"})
        else:
            conn.respond(200, json.dumps(it.response_json).encode(), {"content-type": "application/json"})

    server = serve(handler)
    call = ModelCall(
        messages=[
            ModelRequest(
                parts=[UserPromptPart(content=["Who speaks?", AudioUrl(url=server.origin + "/a.mp3?x=1")])]
            )
        ]
    )
    strict = OpenAIChatModel("gpt-4o-audio-preview", provider=openai(server))
    with pytest.raises(UrlPolicyError):
        await strict.request(call)  # plain http to 127.0.0.1 is refused by the default download policy
    model = OpenAIChatModel(
        "gpt-4o-audio-preview", provider=openai(server), download_url_policy=server.policy
    )
    await model.request(call)
    get, post = server.requests
    assert (get.method, get.path) == ("GET", "/a.mp3?x=1")
    assert "authorization" not in get.headers  # the provider's key never goes to a content URL
    content = json.loads(post.body)["messages"][0]["content"]
    assert content[1]["input_audio"]["format"] == "mp3"


@pytest.mark.anyio
async def test_list_models_bounded(serve: Serve) -> None:
    listing = {
        "object": "list",
        "data": [{"id": f"m{i}", "owned_by": "me", "created": 1700000000} for i in range(5)],
    }
    server = serve(json_reply(listing))
    provider = openai(server)
    models = await provider.list_models(max_models=5)  # exactly at the limit
    assert [m.id for m in models] == [f"m{i}" for i in range(5)]
    assert models[0].owned_by == "me"
    assert models[0].created is not None
    with pytest.raises(ResponseDecodeError, match="max_models"):
        await provider.list_models(max_models=4)  # one past it
    assert server.requests[0].path == "/v1/models"


def test_local_servers_need_an_explicit_policy() -> None:
    assert OllamaProvider().base_url == "http://localhost:11434/v1"  # the built-in local root is allowed
    with pytest.raises(UrlPolicyError):
        OllamaProvider(base_url="http://10.0.0.7:11434/v1")
    allowed = OllamaProvider(
        base_url="http://10.0.0.7:11434/v1", url_policy=local_url_policy("http://10.0.0.7:11434/v1")
    )
    assert allowed.base_url == "http://10.0.0.7:11434/v1"
    with pytest.raises(UrlPolicyError):
        OpenAIProvider(api_key=KEY, base_url="http://127.0.0.1:9/v1")


@pytest.mark.anyio
async def test_emulated_tools_through_constrained_output(serve: Serve) -> None:
    answer = json.dumps({"tool": "get_weather", "arguments": {"city": "Paris"}})
    body = {
        "id": "c1",
        "model": "qwen",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}
        ],
    }
    server = serve(json_reply(body))
    provider = LlamaCppServerProvider(base_url=server.base_url, url_policy=server.policy, timeouts=FAST)
    profile = msgspec.structs.replace(
        provider.chat_profile("qwen").profile, supports_tools=False, tools_emulated_via_output=True
    )
    model = OpenAIChatModel("qwen", provider=provider, profile=profile)
    tool = object_tool("get_weather", {"city": {"type": "string"}})
    response = await model.request(ModelCall(messages=user("Weather in Paris?").messages, tools=[tool]))
    [call] = response.tool_calls
    assert isinstance(call, ToolCallPart)
    assert call.tool_name == "get_weather"
    assert call.args_as_dict() == {"city": "Paris"}
    sent = json.loads(server.requests[0].body)
    assert "tools" not in sent
    assert sent["response_format"]["type"] == "json_schema"


@pytest.mark.anyio
async def test_emulated_tools_streamed_a_read_at_a_time(serve: Serve) -> None:
    # An agent streams through `stream_batches`: a model whose tools are emulated still streams
    # through the emulation, so the JSON answer is a tool call, not text.
    answer = json.dumps({"tool": "get_weather", "arguments": {"city": "Paris"}})

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"id": "c1", "model": "qwen", "choices": [choice]}).encode() + b"\n\n"

    body = (
        chunk({"role": "assistant", "content": answer[:12]})
        + chunk({"content": answer[12:]})
        + chunk({}, "stop")
        + b"data: [DONE]\n\n"
    )
    server = serve(http_server.sse_reply(body, (len(body),)))
    provider = LlamaCppServerProvider(base_url=server.base_url, url_policy=server.policy, timeouts=FAST)
    profile = msgspec.structs.replace(
        provider.chat_profile("qwen").profile, supports_tools=False, tools_emulated_via_output=True
    )
    model = OpenAIChatModel("qwen", provider=provider, profile=profile)
    tool = ToolDefinition(name="get_weather", parameters_json_schema={"type": "object"})
    call = ModelCall(messages=user("Weather in Paris?").messages, tools=[tool])
    events = [event async for batch in model.stream_batches(call) for event in batch]
    # The same events one by one (the emulation generates a fresh tool-call ID per stream).
    assert [type(e) for e in events] == [type(e) async for e in model.stream(call)]
    assert not any(isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta) for e in events)
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    [tool_call] = final.response.tool_calls
    assert (tool_call.tool_name, tool_call.args_as_dict()) == ("get_weather", {"city": "Paris"})
