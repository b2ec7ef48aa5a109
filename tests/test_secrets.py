"""A configured key never leaves: not in errors (nor anything they reach), logs at DEBUG, or spans.

Every provider (OpenAI Chat and Responses, Anthropic, Gemini, Vertex AI) is driven against the
local HTTP server through each leak path, with a real-shaped key of that provider and with short
keys that no credential-shape pattern recognises. The server is hostile: it echoes the key in error
bodies, in-band error objects, stream error events, request-ID headers and redirect locations.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is a test dependency of the workspace")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ferrule.agent import Agent
from ferrule.agent import InstrumentationSettings
from ferrule.core.errors import InvalidCredentialError
from ferrule.core.errors import ProviderError
from ferrule.core.http import ErrorBodyPolicy
from ferrule.core.http import Timeouts
from ferrule.core.messages import ModelRequest
from ferrule.core.model import Model
from ferrule.core.model import ModelCall
from ferrule.core.provider import Provider
from ferrule.core.retry import RetryPolicy
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.google import GoogleProvider
from ferrule.providers.google import VertexAIProvider
from ferrule.providers.openai import OpenAIProvider
from tests.support.http_server import Conn
from tests.support.http_server import LocalServer
from tests.support.http_server import Request
from tests.support.http_server import Serve
from tests.support.http_server import serve as serve  # the fixture
from tests.support.leaks import DEBUG_LOGGERS
from tests.support.leaks import exception_texts
from tests.support.leaks import find_leaks
from tests.support.leaks import log_texts
from tests.support.leaks import span_texts
from tests.support.providers import model_for

pytestmark = pytest.mark.anyio

FAST = Timeouts(connect=2.0, first_byte=5.0, read=5.0, total=10.0)
CAPTURE = ErrorBodyPolicy(capture=True, max_bytes=100_000)

# Short keys: no shape pattern (sk-..., AIza..., Bearer ...) catches them; only the configured-secret match does.
SHORT_KEYS = ("q7Zx", "k9-local-x")


def _model(api: str, server: LocalServer, key: str) -> Model:
    return model_for(api, server, key, timeouts=FAST, error_body=CAPTURE)


def _provider(api: str, key: str) -> Provider:
    """The provider of `api` built with `key` (for the construction-time checks; nothing is sent)."""
    if api in ("openai-chat", "openai-responses"):
        return OpenAIProvider(api_key=key)
    if api == "anthropic":
        return AnthropicProvider(api_key=key)
    if api == "gemini":
        return GoogleProvider(api_key=key)
    return VertexAIProvider(access_token=key, project="my-project-1")


@dataclass(frozen=True)
class Api:
    name: str
    real_key: str
    """A key of the shape this provider issues."""
    in_band: Callable[[str], bytes]
    """A 200 body holding an error object that quotes the text."""
    stream_error: Callable[[str], bytes]
    """An SSE body whose error event quotes the text."""


def _sse(*events: tuple[str | None, object]) -> bytes:
    out = b""
    for name, data in events:
        if name is not None:
            out += f"event: {name}\n".encode()
        out += f"data: {json.dumps(data)}\n\n".encode()
    return out


APIS = (
    Api(
        "openai-chat",
        "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ3lN5pR7tV9xZ1bD3fH5jL7nP9rT1vX3zB5",
        lambda text: json.dumps(
            {"error": {"message": f"upstream failed: {text}", "type": "server_error"}}
        ).encode(),
        lambda text: _sse((None, {"error": {"message": f"upstream failed: {text}", "type": "server_error"}})),
    ),
    Api(
        "openai-responses",
        "sk-proj-" + "Zy8xW7vU6tS5rQ4pO3nM2lK1jI0hG9fE8dC7bA6zY5xW4vU3tS2rQ1pO0nM9lK8jI7",
        lambda text: json.dumps(
            {"error": {"message": f"upstream failed: {text}", "code": "server_error"}}
        ).encode(),
        lambda text: _sse(
            ("error", {"type": "error", "code": "server_error", "message": f"upstream failed: {text}"})
        ),
    ),
    Api(
        "anthropic",
        "sk-ant-api03-"
        + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0X1c2V3b4N5m6Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2J3k4L5z6X7c8V9b0N1m2-AA",
        lambda text: json.dumps(
            {"type": "error", "error": {"type": "api_error", "message": f"upstream failed: {text}"}}
        ).encode(),
        lambda text: _sse(
            (
                "error",
                {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": f"upstream failed: {text}"},
                },
            )
        ),
    ),
    Api(
        "gemini",
        "AIzaSyD" + "4f5G6h7J8k9L0z1X2c3V4b5N6m7Q8w9E0r",
        lambda text: json.dumps(
            {"error": {"code": 500, "message": f"upstream failed: {text}", "status": "INTERNAL"}}
        ).encode(),
        lambda text: _sse(
            (None, {"error": {"code": 500, "message": f"upstream failed: {text}", "status": "INTERNAL"}})
        ),
    ),
    Api(
        "vertex",
        "ya29.a0" + "AfB_byC1d2E3f4G5h6I7j8K9l0M1n2O3p4Q5r6S7t8U9v0W1x2Y3z4A5b6C7d8E9f0G1h2I3j4K5l6M7n8O9p0",
        lambda text: json.dumps(
            {"error": {"code": 500, "message": f"upstream failed: {text}", "status": "INTERNAL"}}
        ).encode(),
        lambda text: _sse(
            (None, {"error": {"code": 500, "message": f"upstream failed: {text}", "status": "INTERNAL"}})
        ),
    ),
)

CASES = [
    pytest.param(api, key, id=f"{api.name}-{'real' if key == api.real_key else key}")
    for api in APIS
    for key in (api.real_key, *SHORT_KEYS)
]

CALL = ModelCall(messages=[ModelRequest.user_text_prompt("hi")])


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every logger at DEBUG: the root one and those that set their own level."""
    caplog.set_level(logging.DEBUG)
    for name in DEBUG_LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _assert_clean(key: str, error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    texts, http_objects = exception_texts(error)
    assert not http_objects, (
        f"the error reaches httpx2 objects holding the credential headers: {http_objects}"
    )
    assert not find_leaks(key, texts), find_leaks(key, texts)
    logged = log_texts(caplog.records)
    assert not find_leaks(key, logged), find_leaks(key, logged)


async def _request(model: Model) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        await model.request(CALL)
    return info.value


async def _stream(model: Model) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        async for _ in model.stream(CALL):
            pass
    return info.value


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_http_error_echoing_the_key(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    # The body quotes the key as message and code; the request-ID headers echo it too.
    def handler(conn: Conn, request: Request) -> None:
        body = {
            "error": {
                "message": f"Incorrect API key provided: {key}",
                "type": "authentication_error",
                "code": key,
            }
        }
        conn.respond_json(401, body, {"x-request-id": key, "request-id": key, "x-goog-request-id": key})

    error = await _request(_model(api.name, serve(handler), key))
    assert error.status_code == 401
    assert error.request_id is not None
    assert "<redacted>" in error.request_id
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_redirect_location_holding_the_key(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(307, b"", {"location": f"https://elsewhere.example/{key}/v1?next={key}"})

    error = await _request(_model(api.name, serve(handler), key))
    assert error.details is not None
    assert "elsewhere.example" in error.details["location"]
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_success_with_a_request_id_echoing_the_key_is_not_logged(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    # The response body is an in-band error so the call fails after a 200 with the echoing header.
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(
            200, api.in_band("no details"), {"content-type": "application/json", "x-request-id": key}
        )

    error = await _request(_model(api.name, serve(handler), key))
    assert any("request id <redacted>" in r.getMessage() for r in debug_logs.records)
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_connection_broken_mid_body(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    # httpx2's own exception holds the request and its credential headers: nothing may lead to it.
    def handler(conn: Conn, request: Request) -> bool:
        conn.respond(200, b'{"id": "x", ', {"content-type": "application/json"}, length=500)
        return False

    error = await _request(_model(api.name, serve(handler), key))
    assert error.category == "connection"
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_in_band_error_body(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(200, api.in_band(f"the key {key} was rejected"), {"content-type": "application/json"})

    error = await _request(_model(api.name, serve(handler), key))
    assert "<redacted>" in str(error)
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_stream_error_event(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.stream(api.stream_error(f"the key {key} was rejected"))

    error = await _stream(_model(api.name, serve(handler), key))
    assert "<redacted>" in str(error)
    _assert_clean(key, error, debug_logs)


@pytest.mark.parametrize(("api", "key"), CASES)
async def test_agent_spans_and_run_error(
    api: Api, key: str, serve: Serve, debug_logs: pytest.LogCaptureFixture
) -> None:
    def handler(conn: Conn, request: Request) -> None:
        conn.respond(200, api.in_band(f"the key {key} was rejected"), {"content-type": "application/json"})

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(
        _model(api.name, serve(handler), key),
        instrument=InstrumentationSettings(tracer_provider=tracer_provider, include_content=True),
        retry_policy=RetryPolicy(max_retries=0),
    )
    with pytest.raises(Exception) as info:  # noqa: PT011 - whatever the agent raises is walked
        await agent.run("hi")
    spans = span_texts(exporter.get_finished_spans())
    assert any("exception" in span for span in spans)
    assert not find_leaks(key, spans), find_leaks(key, spans)
    _assert_clean(key, info.value, debug_logs)


@pytest.mark.parametrize("api", [pytest.param(api, id=api.name) for api in APIS])
@pytest.mark.parametrize(
    "bad", ["\n", "\r\n", "\x00", "é", " "], ids=["lf", "crlf", "nul", "non-ascii", "space"]
)
def test_unsendable_key_is_refused_before_any_io(api: Api, bad: str) -> None:
    key = api.real_key + bad
    with pytest.raises(InvalidCredentialError) as info:
        _provider(api.name, key)
    texts, _ = exception_texts(info.value)
    assert not find_leaks(api.real_key, texts)
    assert info.value.__context__ is None


@pytest.mark.parametrize("api", [pytest.param(api, id=api.name) for api in APIS])
def test_key_too_short_to_redact_is_refused(api: Api) -> None:
    with pytest.raises(InvalidCredentialError, match="at least 4"):
        _provider(api.name, "k1")
