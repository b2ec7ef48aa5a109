"""One fingerprint of the history per request (`WireCache.prove`), shared by the model's checks and the
encode: what each check skips is only what the proof shows unchanged since it passed, so a message
edited in place between requests is checked, downloaded and encoded again, exactly as without it.

Over a local HTTP server: every body sent is the uncached codec's body for the same call, and every
error is the one a model without a cache raises.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.profile import ModelProfile
from ferrule.providers.openai import OpenAIChatModel
from ferrule.providers.openai import OpenAIProvider
from ferrule.providers.openai import OpenAIResponsesModel
from tests.support.checked_openai import CheckedChatModel
from tests.support.http_server import Conn
from tests.support.http_server import LocalServer
from tests.support.http_server import Request
from tests.support.http_server import Serve

pytestmark = pytest.mark.anyio

AUDIO = b"ID3\x03fake-mp3-bytes"
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
CHOICES: list[dict[str, Any]] = [
    {"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None},
    {"index": 0, "delta": {}, "finish_reason": "stop"},
]
CHUNKS: list[dict[str, Any]] = [
    {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "choices": [choice]}
    for choice in CHOICES
]


def handler(conn: Conn, request: Request) -> None:
    """GET: the audio file; POST: one Chat Completions answer, buffered or streamed."""
    if request.method == "GET":
        conn.respond(200, AUDIO, {"content-type": "audio/mpeg"})
    elif json.loads(request.body).get("stream"):
        conn.start_chunked(headers={"content-type": "text/event-stream"})
        for chunk in CHUNKS:
            conn.chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        conn.chunk(b"data: [DONE]\n\n")
        conn.end_chunked()
    else:
        conn.respond(200, json.dumps(COMPLETION).encode(), {"content-type": "application/json"})


def provider(server: LocalServer) -> OpenAIProvider:
    return OpenAIProvider(api_key="sk-test-key", base_url=server.base_url, url_policy=server.policy)


def text_history(n: int) -> list[Message]:
    return [
        ModelRequest(parts=[UserPromptPart(content=f"question {i}")])
        if i % 2 == 0
        else ModelResponse(parts=[TextPart(content=f"answer {i}")])
        for i in range(n)
    ]


async def send(model: OpenAIChatModel | OpenAIResponsesModel, call: ModelCall, stream: bool) -> None:
    if stream:
        async for _ in model.stream(call):
            pass
    else:
        await model.request(call)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_message_edited_in_place_to_carry_audio_is_downloaded(serve: Serve, stream: bool) -> None:
    server = serve(handler)
    model = CheckedChatModel(
        "gpt-4o-audio-preview", provider=provider(server), download_url_policy=server.policy
    )
    history = text_history(40)
    for _ in range(2):  # the second request finds every message proved and checked
        await send(model, ModelCall(messages=history), stream)
    assert [r.method for r in server.requests] == ["POST", "POST"]
    part = history[20].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = ["listen", AudioUrl(url=server.origin + "/a.mp3")]
    await send(model, ModelCall(messages=history), stream)
    assert [r.method for r in server.requests] == ["POST", "POST", "GET", "POST"]
    sent = json.loads(server.requests[-1].body)["messages"][20]["content"]
    assert sent[1]["input_audio"]["format"] == "mp3"
    part.content = "plain again"  # and back: nothing to download, the text is sent
    history.append(ModelRequest(parts=[UserPromptPart(content="more")]))
    await send(model, ModelCall(messages=history), stream)
    assert [r.method for r in server.requests][4:] == ["POST"]
    assert json.loads(server.requests[-1].body)["messages"][20]["content"] == "plain again"
    assert len(model.sent) == (0 if stream else 4)  # buffered: each body checked against the uncached one


async def test_the_responses_model_sees_a_download_added_in_place(serve: Serve) -> None:
    server = serve(handler)
    model = OpenAIResponsesModel("gpt-5", provider=provider(server), download_url_policy=server.policy)
    history = text_history(12)
    call = ModelCall(messages=history)
    proof = model.wire_cache.prove(history)
    assert proof is not None
    assert model._prepare_now(call, proof) is call
    part = history[4].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = ["see", ImageUrl(url=server.origin + "/a.png")]  # sent by URL: nothing to download
    proof = model.wire_cache.prove(history)
    assert proof is not None
    assert model._prepare_now(call, proof) is call
    part.content = ["see", ImageUrl(url=server.origin + "/a.png", force_download=True)]
    proof = model.wire_cache.prove(history)
    assert proof is not None
    assert proof.unchanged_count == 4
    assert model._prepare_now(call, proof) is None


@pytest.mark.parametrize("stream", [False, True])
async def test_content_added_in_place_is_refused_with_the_uncached_error(serve: Serve, stream: bool) -> None:
    server = serve(handler)
    history = text_history(30)
    for profile in (ModelProfile(), None):  # text only; the unknown model's profile (with its hint)
        model = OpenAIChatModel("some-unknown-model", provider=provider(server), profile=profile)
        for _ in range(2):
            await send(model, ModelCall(messages=history), stream)
        part = history[10].parts[0]
        assert isinstance(part, UserPromptPart)
        part.content = ["see", ImageUrl(url="https://example.com/cat.png")]
        fresh = OpenAIChatModel("some-unknown-model", provider=provider(server), profile=profile)
        with pytest.raises(UnsupportedFeatureError) as expected:
            fresh.check(ModelCall(messages=history))
        with pytest.raises(UnsupportedFeatureError) as raised:
            await send(model, ModelCall(messages=history), stream)
        assert str(raised.value) == str(expected.value)
        assert raised.value.hint == expected.value.hint
        part.content = "back to text"
        await send(model, ModelCall(messages=history), stream)


async def test_every_body_is_the_uncached_body_across_edits_and_system_prompts(serve: Serve) -> None:
    server = serve(handler)
    model = CheckedChatModel("gpt-4o", provider=provider(server))
    history: list[Message] = [
        ModelRequest(parts=[SystemPromptPart(content="Be terse."), UserPromptPart("hi")])
    ]
    history += text_history(20)
    for step in range(6):
        call = ModelCall(messages=history, instructions="Answer briefly." if step % 2 else None)
        await model.request(call)
        history.append(ModelResponse(parts=[TextPart(content=f"step {step}")]))
        history.append(ModelRequest(parts=[UserPromptPart(content=f"next {step}")]))
        if step == 2:
            history[5] = ModelRequest(parts=[UserPromptPart(content="replaced")])
        if step == 3:
            part = history[8].parts[0]
            assert isinstance(part, TextPart)
            part.content = "edited in place"
    assert len(model.sent) == 6
    assert b"edited in place" in model.sent[-1]
    assert b"replaced" in model.sent[-1]


async def test_a_subclass_prepare_or_request_of_its_own_still_runs(serve: Serve) -> None:
    server = serve(handler)
    prepared: list[ModelCall] = []
    requested: list[ModelCall] = []

    class OwnPrepare(OpenAIChatModel):
        async def _prepare(self, call: ModelCall) -> ModelCall:
            prepared.append(call)
            return await super()._prepare(call)

    class OwnRequest(OpenAIChatModel):
        async def _request(self, call: ModelCall) -> Any:
            requested.append(call)
            return await super()._request(call)

    history = text_history(10)
    for cls in (OwnPrepare, OwnRequest):
        model = cls("gpt-4o", provider=provider(server), profile=ModelProfile())
        for _ in range(2):
            await model.request(ModelCall(messages=history))
    assert len(prepared) == 2
    assert len(requested) == 2
    part = history[2].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = ["see", ImageUrl(url="https://example.com/cat.png")]
    model = OwnRequest("gpt-4o", provider=provider(server), profile=ModelProfile())
    with pytest.raises(UnsupportedFeatureError, match="image input"):
        await model.request(ModelCall(messages=history))


async def test_a_history_that_cannot_be_proved_is_checked_and_encoded_in_full(serve: Serve) -> None:
    class Opaque:
        pass

    server = serve(handler)
    model = CheckedChatModel("gpt-4o", provider=provider(server), profile=ModelProfile())
    history = text_history(6)
    history[2] = ModelRequest(parts=[UserPromptPart(content="opaque")], metadata={"x": Opaque()})
    for _ in range(2):
        await model.request(ModelCall(messages=history))
    assert model.wire_cache.prove(history) is None
    part = history[4].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = ["see", ImageUrl(url="https://example.com/cat.png")]
    with pytest.raises(UnsupportedFeatureError, match="image input"):
        await model.request(ModelCall(messages=history))
    assert len(model.sent) == 2
