"""Encoded history reused across requests (`WireCache`): the bytes sent are the uncached bytes, always.

Histories are built from real recorded Chat Completions answers (the shared cassettes, decoded by
the codec) and from every part kind the codec maps; each step is encoded with and without the cache
and the two bodies must be byte-identical, including after messages are edited in place, replaced
by a history processor, or sent to another model or dialect.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from ferrule.core.codec import WireCache
from ferrule.core.conformance import replay
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai import responses_codec
from ferrule.providers.openai.profiles import ChatDialect
from ferrule.providers.openai.profiles import deepseek_profile
from ferrule.providers.openai.profiles import openai_chat_profile
from tests.support.cassettes import OPENAI_FOLDERS
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.wire_cache import edit_answer
from tests.support.wire_cache import elide_tool_returns
from tests.support.wire_cache import one_long_history
from tests.support.wire_cache import replayed

OPENAI = openai_chat_profile("gpt-4.1").dialect
DIALECTS = {
    "openai": OPENAI,
    "o1-mini": openai_chat_profile("o1-mini").dialect,
    "deepseek": deepseek_profile("deepseek-reasoner").dialect,
    "merged-system": ChatDialect(merge_system_messages=True),
}


def codec(
    cache: WireCache | None, dialect: ChatDialect = OPENAI, model: str = "gpt-4.1"
) -> chat_codec.ChatCodec:
    return chat_codec.ChatCodec(model_name=model, dialect=dialect, wire_cache=cache)


def assert_same(
    call: ModelCall, cache: WireCache, dialect: ChatDialect = OPENAI, model: str = "gpt-4.1"
) -> bytes:
    """Encode `call` through `cache` and without one; the bodies must be the same bytes."""
    cached = codec(cache, dialect, model).encode(call).body
    plain = codec(None, dialect, model).encode(call).body
    assert cached == plain
    return cached


def synthetic_history(turns: int) -> list[Message]:
    """A history with every part kind the codec maps, `turns` tool round trips long."""
    history: list[Message] = [
        ModelRequest(
            parts=[
                SystemPromptPart(content="You are terse."),
                SystemPromptPart(content="Answer in English."),
                UserPromptPart(content=["look:", ImageUrl(url="https://example.com/a.png")]),
            ]
        )
    ]
    for i in range(turns):
        history.append(
            ModelResponse(
                parts=[
                    ThinkingPart(content=f"thinking {i}", provider_name="deepseek"),
                    TextPart(content=f'step {i} \u00e9\u2603 "quoted"'),
                    ToolCallPart(tool_name="add", args={"a": i, "b": i + 1}, tool_call_id=f"call_{i}"),
                ],
                model_name="deepseek-reasoner",
                provider_name="deepseek",
            )
        )
        parts: list[Any] = [
            ToolReturnPart(tool_name="add", content={"sum": 2 * i + 1}, tool_call_id=f"call_{i}")
        ]
        if i % 3 == 1:
            parts.append(RetryPromptPart(content="try again", tool_name="add", tool_call_id=f"call_{i}"))
        if i % 4 == 2:
            parts.append(
                ToolReturnPart(
                    tool_name="chart",
                    content=[
                        "here",
                        BinaryContent(data=b"\x89PNG" + bytes([i % 256]), media_type="image/png"),
                    ],
                    tool_call_id=f"chart_{i}",
                )
            )
        history.append(ModelRequest(parts=parts))
    history.append(ModelResponse(parts=[TextPart(content="done")]))
    return history


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
def test_every_step_of_a_growing_history_is_byte_identical(dialect: ChatDialect) -> None:
    history = synthetic_history(40)
    cache = WireCache()
    for end in range(1, len(history) + 1):
        assert_same(
            ModelCall(instructions="Be brief.", messages=history[:end]), cache, dialect, "deepseek-reasoner"
        )
    # Every message after the leading system request was cached once and reused.
    assert len(cache) == len(history) - 1


def recorded_responses() -> list[ModelResponse]:
    answers = replayed(
        iter_interactions(*OPENAI_FOLDERS),
        lambda uri: uri.endswith("/chat/completions"),
        lambda it: replay(chat_codec.ChatCodec(), it),
    )
    return [response for _, response in answers]


@pytest.mark.skipif(cassette_root() is None, reason="the shared cassettes are not available")
def test_recorded_answers_replayed_as_one_long_history() -> None:
    responses = recorded_responses()
    assert len(responses) > 50
    history = one_long_history(enumerate(responses))
    for dialect in DIALECTS.values():
        cache = WireCache()
        for end in range(1, len(history) + 1, 7):
            for model in ("gpt-4.1", "deepseek-reasoner"):
                assert_same(ModelCall(messages=history[:end]), cache, dialect, model)
        assert_same(ModelCall(messages=history), cache, dialect)


def test_a_message_changed_in_place_is_encoded_again() -> None:
    history = synthetic_history(3)
    cache = WireCache()
    assert_same(ModelCall(messages=history), cache)
    response = history[1]
    assert isinstance(response, ModelResponse)
    text = response.parts[1]
    assert isinstance(text, TextPart)
    text.content = "edited in place"
    call_part = response.parts[2]
    assert isinstance(call_part, ToolCallPart)
    call_part.args = {"a": 100, "b": 200}  # a nested value, not the message itself
    request = history[2]
    assert isinstance(request, ModelRequest)
    request.parts.append(UserPromptPart(content="appended"))
    sent = json.loads(assert_same(ModelCall(messages=history), cache))
    assistant = next(m for m in sent["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "edited in place"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 100, "b": 200}
    assert {"role": "user", "content": "appended"} in sent["messages"]


def test_a_history_processor_replacing_messages_changes_the_view() -> None:
    """A processor returns new messages (here: tool results shortened); the canonical history is untouched."""
    history = synthetic_history(10)
    before = [m for m in history]
    canonical = [
        json.dumps(chat_codec.build_request(ModelCall(messages=history), model_name="m")["messages"])
    ]
    cache = WireCache()
    assert_same(ModelCall(messages=history), cache)

    view = elide_tool_returns(history)
    sent = json.loads(assert_same(ModelCall(messages=view), cache))
    returns = sum(
        isinstance(p, ToolReturnPart) for m in history if isinstance(m, ModelRequest) for p in m.parts
    )
    tool_texts = [m["content"] for m in sent["messages"] if m["role"] == "tool"]
    assert tool_texts.count("(elided)") == returns
    assert not any('"sum"' in t for t in tool_texts)
    # Back to the full view: the original messages' fragments are still right.
    assert_same(ModelCall(messages=history), cache)
    assert history == before
    assert (
        json.dumps(chat_codec.build_request(ModelCall(messages=history), model_name="m")["messages"])
        == canonical[0]
    )


def test_another_model_or_dialect_on_the_same_cache_is_not_served_stale_fragments() -> None:
    history = synthetic_history(5)
    cache = WireCache()
    # DeepSeek thinking is replayed to the model that made it only; the user role for o1-mini.
    first = assert_same(ModelCall(messages=history), cache, DIALECTS["deepseek"], "deepseek-reasoner")
    second = assert_same(ModelCall(messages=history), cache, DIALECTS["deepseek"], "deepseek-chat")
    assert first != second
    assert_same(ModelCall(messages=history), cache, DIALECTS["o1-mini"])
    assert_same(ModelCall(messages=history), cache, DIALECTS["deepseek"], "deepseek-reasoner")


def test_the_cache_is_bounded_in_bytes_and_histories() -> None:
    history = synthetic_history(30)
    cache = WireCache(max_bytes=3_000)
    assert_same(ModelCall(messages=history[:4]), cache)
    assert len(cache) == 3
    assert_same(ModelCall(messages=history), cache)
    assert len(cache) == 0  # over the budget: encoded, not kept
    few = WireCache(max_histories=2)
    conversations = [synthetic_history(2) for _ in range(3)]
    for conversation in conversations:
        assert_same(ModelCall(messages=conversation), few)
    assert len(few) == 2 * (len(conversations[0]) - 1)  # the oldest conversation was forgotten
    assert_same(ModelCall(messages=conversations[0]), few)


def counting_encode(calls: list[object]) -> Callable[[ModelRequest], bytes]:
    def encode(m: ModelRequest) -> bytes:
        calls.append(m)
        part = m.parts[0]
        assert isinstance(part, UserPromptPart)
        return json.dumps({"role": "user", "content": part.content}).encode()

    return encode


def test_only_changed_and_new_messages_are_encoded_again() -> None:
    cache = WireCache()
    calls: list[object] = []
    encode = counting_encode(calls)
    history = [ModelRequest(parts=[UserPromptPart(content=f"m{i}")]) for i in range(50)]
    first = cache.encode(history, "view", encode)
    assert len(calls) == 50
    history.append(ModelRequest(parts=[UserPromptPart(content="new")]))
    calls.clear()
    assert cache.encode(history, "view", encode) == first + b',{"role": "user", "content": "new"}'
    assert calls == [history[-1]]
    # Changed in place at position 20: it and everything after it are encoded again.
    part = history[20].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = "changed"
    calls.clear()
    wire = cache.encode(history, "view", encode)
    assert calls == history[20:]
    assert b'"changed"' in wire
    assert b'"m20"' not in wire
    # Replaced by an equal but different object (a history processor's copy): encoded again.
    history[10] = ModelRequest(parts=[UserPromptPart(content="m10")])
    calls.clear()
    assert cache.encode(history, "view", encode) == wire
    assert calls == history[10:]
    # Another view shares nothing.
    calls.clear()
    cache.encode(history, "other view", encode)
    assert len(calls) == len(history)


def test_a_history_that_cannot_be_fingerprinted_is_encoded_every_time() -> None:
    class Opaque:
        pass

    cache = WireCache()
    calls: list[object] = []
    encode = counting_encode(calls)
    history = [ModelRequest(parts=[UserPromptPart(content="hi")], metadata={"opaque": Opaque()})]
    assert cache.encode(history, "view", encode) == cache.encode(history, "view", encode)
    assert len(calls) == 2
    assert len(cache) == 0


# --- the Responses codec ---------------------------------------------------------------------------


def assert_same_responses(call: ModelCall, cache: WireCache, model: str = "gpt-5") -> bytes:
    cached = responses_codec.ResponsesCodec(model_name=model, wire_cache=cache).encode(call).body
    plain = responses_codec.ResponsesCodec(model_name=model).encode(call).body
    assert cached == plain
    return cached


def test_responses_every_step_of_a_growing_history_is_byte_identical() -> None:
    history = synthetic_history(30)
    cache = WireCache()
    for end in range(1, len(history) + 1):
        assert_same_responses(ModelCall(instructions="Be brief.", messages=history[:end]), cache)
    assert len(cache) == len(history)
    edit_answer(history, 3)
    assert b"edited in place" in assert_same_responses(ModelCall(messages=history), cache)
    assert_same_responses(ModelCall(messages=history), cache, "gpt-4.1")


@pytest.mark.skipif(cassette_root() is None, reason="the shared cassettes are not available")
def test_responses_recorded_answers_replayed_as_one_long_history() -> None:
    answers = replayed(
        iter_interactions(*OPENAI_FOLDERS),
        lambda uri: uri.endswith("/responses"),
        lambda it: replay(responses_codec.ResponsesCodec(), it),
    )
    history = one_long_history(answers)
    assert len(history) > 50
    cache = WireCache()
    for end in range(1, len(history) + 1, 5):
        for model in ("gpt-5", "o4-mini"):
            assert_same_responses(ModelCall(messages=history[:end]), cache, model)


def test_a_model_keeps_one_cache_across_its_requests_and_codecs() -> None:
    from ferrule.providers.openai import OpenAIChatModel
    from ferrule.providers.openai import OpenAIProvider
    from ferrule.providers.openai import OpenAIResponsesModel

    provider = OpenAIProvider(api_key="sk-test-key-0000")
    chat = OpenAIChatModel("gpt-4.1", provider=provider)
    responses = OpenAIResponsesModel("gpt-5", provider=provider)
    assert chat.wire_cache is chat.wire_cache
    assert chat.wire_cache is not responses.wire_cache
    history = synthetic_history(12)
    for end in range(1, len(history) + 1):
        call = ModelCall(messages=history[:end])
        for model in (chat, responses):
            plain = model.codec()
            plain.wire_cache = None
            assert model.encode(call) == plain.encode(call).body
    assert len(chat.wire_cache) == len(history) - 1
    assert len(responses.wire_cache) == len(history)
    chat.dialect = DIALECTS["o1-mini"]  # a changed attribute is a new view, never stale bytes
    assert (
        chat.encode(ModelCall(messages=history))
        == codec(None, chat.dialect).encode(ModelCall(messages=history)).body
    )


@pytest.mark.parametrize(
    ("extra_fields", "stream", "instructions", "tools"),
    [
        (None, False, None, False),
        ({"provider": {"order": ["a"]}}, True, "Be brief.", True),
        ({"messages": "set by the caller"}, False, "Be brief.", True),  # not spliced: encoded as a dict
        ({"model": "other"}, True, None, False),
    ],
)
def test_the_body_with_the_history_joined_in_is_the_encoded_dict(
    extra_fields: dict[str, Any] | None, stream: bool, instructions: str | None, tools: bool
) -> None:
    """With a cache, the body is built around the history's JSON; it is what encoding the dict gives."""
    history = synthetic_history(6)
    definitions = [ToolDefinition(name="add", parameters_json_schema={"type": "object"})] if tools else []
    settings = ModelSettings(temperature=0.5, max_tokens=10, seed=1)
    for messages in (history, history[:1], [ModelRequest(parts=[SystemPromptPart(content="only")])]):
        call = ModelCall(messages=messages, instructions=instructions, tools=definitions, settings=settings)
        cache = WireCache()
        for _ in range(2):  # encoded, then reused
            cached = chat_codec.ChatCodec(model_name="gpt-4.1", wire_cache=cache, extra_fields=extra_fields)
            body = chat_codec.build_request(call, model_name="gpt-4.1", stream=stream)
            body.update(extra_fields or {})
            assert cached.encode(call, stream=stream).body == msgspec.json.encode(body)
            # The same cache framed as a bracketed array (`build_request`'s `Raw`) reuses it too.
            framed = chat_codec.build_request(call, model_name="gpt-4.1", stream=stream, wire_cache=cache)
            framed.update(extra_fields or {})
            assert msgspec.json.encode(framed) == msgspec.json.encode(body)


@pytest.mark.parametrize(
    ("stream", "instructions", "tools"), [(False, None, False), (True, "Be brief.", True)]
)
def test_responses_body_with_the_history_joined_in_is_the_encoded_dict(
    stream: bool, instructions: str | None, tools: bool
) -> None:
    """With a cache, the Responses body is built around the history's JSON; it is the encoded dict."""
    definitions = [ToolDefinition(name="add", parameters_json_schema={"type": "object"})] if tools else []
    settings = ModelSettings(temperature=0.5, max_tokens=10)
    for messages in (synthetic_history(6), synthetic_history(1)[:1]):
        call = ModelCall(messages=messages, instructions=instructions, tools=definitions, settings=settings)
        cache = WireCache()
        for _ in range(2):  # encoded, then reused
            cached = responses_codec.ResponsesCodec(model_name="gpt-5", wire_cache=cache)
            body = responses_codec.build_request(call, model_name="gpt-5", stream=stream)
            assert cached.encode(call, stream=stream).body == msgspec.json.encode(body)
