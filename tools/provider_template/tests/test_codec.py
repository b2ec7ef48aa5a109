"""The Foo codec on recorded traffic (through `ferrule.core.conformance`) and on hand-made calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ferrule.core.conformance import check_stream
from ferrule.core.conformance import feed_sse
from ferrule.core.conformance import load_cassette
from ferrule.core.conformance import replay
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import UnsupportedContentError
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.foo.codec import FooCodec

CASSETTE = Path(__file__).parent / "cassettes" / "test_foo.yaml"
CODEC = FooCodec(model_name="foo-1", provider_url="https://api.foo.example/v1")


def test_every_recorded_success_replays_with_the_stream_contract() -> None:
    buffered, streamed, _ = load_cassette(CASSETTE)
    answer = replay(CODEC, buffered)
    assert (answer.text, answer.finish_reason, answer.provider_response_id) == (
        "The capital of France is Paris.",
        "stop",
        "gen_01",
    )
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (9, 7)
    assert answer.provider_url == "https://api.foo.example/v1"
    # `replay` fed the stream whole and in awkward pieces, and checked both against the invariants.
    spoken = replay(CODEC, streamed)
    assert (spoken.text, spoken.finish_reason, spoken.model_name) == (
        "Bonjour à vous !",
        "length",
        "foo-1-2026-01",
    )


def test_requests_match_the_recorded_ones() -> None:
    buffered, streamed, _ = load_cassette(CASSETTE)
    for recorded, prompt, stream in (
        (buffered, "What is the capital of France?", False),
        (streamed, "Say hello in French.", True),
    ):
        call = ModelCall(messages=[ModelRequest.user_text_prompt(prompt)])
        assert json.loads(CODEC.encode(call, stream=stream).body) == json.loads(recorded.request_text or "")


def test_history_instructions_and_settings_are_encoded() -> None:
    call = ModelCall(
        messages=[
            ModelRequest.user_text_prompt("Hi"),
            ModelResponse(parts=[TextPart("Hello!")]),
            ModelRequest.user_text_prompt("Again"),
        ],
        instructions="Be brief.",
        settings=ModelSettings(
            max_tokens=50, temperature=0.2, extra_body=[ProviderExtraBody(provider="foo", body={"seed": 1})]
        ),
    )
    body = json.loads(CODEC.encode(call).body)
    assert body == {
        "model": "foo-1",
        "system": "Be brief.",
        "messages": [
            {"role": "user", "text": "Hi"},
            {"role": "assistant", "text": "Hello!"},
            {"role": "user", "text": "Again"},
        ],
        "max_tokens": 50,
        "temperature": 0.2,
        "seed": 1,
        "stream": False,
    }


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (ModelRequest(parts=[UserPromptPart(["look", ImageUrl("https://example.com/a.png")])]), "image-url"),
        (ModelResponse(parts=[ToolCallPart("lookup", {}, "call_1")]), "tool-call"),
    ],
)
def test_what_foo_cannot_take_is_refused_before_sending(
    message: ModelRequest | ModelResponse, kind: str
) -> None:
    with pytest.raises(UnsupportedContentError) as refused:
        CODEC.encode(ModelCall(messages=[message]))
    assert (refused.value.kind, refused.value.provider) == (kind, "foo")


@pytest.mark.parametrize(
    "body",
    [
        b'event: delta\ndata: {"text":"cut"}\n\n',  # no done event
        b"event: delta\ndata: {not json\n\n",
        b"event: done\ndata: {}\n\n",  # no finish reason
        b'event: done\ndata: {"finish":"stop"}\n\nevent: delta\ndata: {"text":"late"}\n\n',
    ],
)
def test_truncated_or_malformed_streams_raise(body: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        check_stream(feed_sse(CODEC.stream_decoder(), body))


def test_an_error_event_raises_its_error_class() -> None:
    body = b'event: delta\ndata: {"text":"Hi"}\n\nevent: error\ndata: {"code":"rate_limited","message":"slow"}\n\n'
    with pytest.raises(RateLimitError, match="slow"):
        feed_sse(CODEC.stream_decoder(), body)


def test_a_malformed_body_raises() -> None:
    with pytest.raises(ResponseDecodeError):
        CODEC.decode(b"[1, 2]")
