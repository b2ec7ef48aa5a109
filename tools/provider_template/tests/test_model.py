"""`FooModel` and `FooProvider` over real HTTP, against a server on 127.0.0.1 replaying the cassette."""

from __future__ import annotations

import importlib
import json
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from typing import cast

import pytest

from ferrule.core.conformance import Interaction
from ferrule.core.conformance import check_stream
from ferrule.core.conformance import load_cassette
from ferrule.core.errors import MissingCredentialError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import ModelRequest
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.core.url_policy import UrlPolicy
from ferrule.providers.foo import FooModel
from ferrule.providers.foo import FooProvider

CASSETTE = Path(__file__).parent / "cassettes" / "test_foo.yaml"
KEY = "foo-SECRET-0123456789"

pytestmark = pytest.mark.anyio


class _Replay(ThreadingHTTPServer):
    answer: Interaction
    seen: list[tuple[str, dict[str, str], Any]]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        replay = cast("_Replay", self.server)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        replay.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
        answer = replay.answer
        payload = answer.response_bytes
        self.send_response(answer.status)
        for name, value in answer.response_headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def server() -> Iterator[_Replay]:
    replay = _Replay(("127.0.0.1", 0), _Handler)
    replay.seen = []
    thread = threading.Thread(target=replay.serve_forever, daemon=True)
    thread.start()
    yield replay
    replay.shutdown()
    replay.server_close()


def _model(server: _Replay, answer: int) -> FooModel:
    server.answer = load_cassette(CASSETTE)[answer]
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    provider = FooProvider(api_key=KEY, base_url=f"{origin}/v1", url_policy=UrlPolicy.local(origin))
    return FooModel("foo-1", provider=provider)


def _call(prompt: str, **options: Any) -> ModelCall:
    return ModelCall(messages=[ModelRequest.user_text_prompt(prompt)], **options)


async def test_buffered_request(server: _Replay) -> None:
    response = await _model(server, 0).request(_call("What is the capital of France?"))
    assert response.text == "The capital of France is Paris."
    [(path, headers, body)] = server.seen
    assert (path, headers["authorization"], body["stream"]) == ("/v1/generate", f"Bearer {KEY}", False)


async def test_streamed_request_keeps_the_stream_contract(server: _Replay) -> None:
    events = [event async for event in _model(server, 1).stream(_call("Say hello in French."))]
    assert check_stream(events).text == "Bonjour à vous !"
    [(path, headers, body)] = server.seen
    assert (path, headers["accept"], body["stream"]) == ("/v1/generate/stream", "text/event-stream", True)


async def test_an_error_status_raises_its_error_without_the_key(server: _Replay) -> None:
    with pytest.raises(RateLimitError) as raised:
        await _model(server, 2).request(_call("Hi"))
    assert raised.value.retry_after == 2
    assert KEY not in str(raised.value)
    assert KEY not in repr(raised.value)


async def test_what_the_profile_lacks_fails_before_any_request(server: _Replay) -> None:
    with pytest.raises(UnsupportedFeatureError, match="tools"):
        await _model(server, 0).request(_call("Hi", tools=[ToolDefinition(name="lookup")]))
    assert server.seen == []


def test_the_entry_point_reads_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `Agent("foo:foo-1")` loads: the function the pyproject's entry point names.
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    module, _, name = project["project"]["entry-points"]["ferrule.providers"]["foo"].partition(":")
    infer_model = getattr(importlib.import_module(module), name)
    monkeypatch.delenv("FOO_API_KEY", raising=False)
    with pytest.raises(MissingCredentialError, match="FOO_API_KEY"):
        infer_model("foo-1")
    monkeypatch.setenv("FOO_API_KEY", KEY)
    model = infer_model("foo-1")
    assert isinstance(model, FooModel)
    assert model.system == "foo:foo-1"
