"""History turns reused from the model's `WireCache`: the body sent is the uncached body, always.

Histories are grown from real recorded GenerateContent answers (the shared cassettes, decoded by the
codec) and from what makes a turn depend on others (system parts, roles merged into one turn); every
step is encoded with and without the cache and the two bodies must be byte-identical, also after
in-place edits, history processors and a change of model.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core.codec import WireCache
from ferrule.core.conformance import Interaction
from ferrule.core.conformance import replay
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.providers.google.codec import GoogleCodec
from tests.support.cassettes import GOOGLE_FOLDERS
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.wire_cache import Marking
from tests.support.wire_cache import assert_every_step_identical
from tests.support.wire_cache import edit_answer
from tests.support.wire_cache import elide_tool_returns
from tests.support.wire_cache import one_long_history
from tests.support.wire_cache import replayed

MODEL = "gemini-2.5-flash"


def assert_same(call: ModelCall, cache: WireCache, model: str = MODEL) -> bytes:
    cached = GoogleCodec(model_name=model, wire_cache=cache).encode(call).body
    plain = GoogleCodec(model_name=model).encode(call).body
    assert cached == plain
    return cached


def reused(call: ModelCall) -> bool:
    return b"STEP" in GoogleCodec(model_name=MODEL, wire_cache=Marking()).encode(call).body


def history(turns: int) -> list[Message]:
    out: list[Message] = [
        ModelRequest(parts=[SystemPromptPart(content="You are terse."), UserPromptPart(content="step 0")])
    ]
    for i in range(turns):
        out.append(
            ModelResponse(
                parts=[
                    ThinkingPart(content=f"thinking {i}", signature=f"sig{i}", provider_name="google-gla"),
                    TextPart(content=f'step {i} \u00e9\u2603 "quoted"'),
                    ToolCallPart(tool_name="add", args={"a": i}, tool_call_id=f"call_{i}"),
                ],
                model_name=MODEL,
                provider_name="google-gla",
            )
        )
        out.append(
            ModelRequest(
                parts=[ToolReturnPart(tool_name="add", content={"sum": i}, tool_call_id=f"call_{i}")]
            )
        )
    return out


def test_every_step_of_a_growing_history_is_byte_identical_and_reused() -> None:
    messages = history(30)
    cache = WireCache()
    for end in range(1, len(messages) + 1):
        call = ModelCall(instructions="Be brief.", messages=messages[:end])
        sent = json.loads(assert_same(call, cache))
        assert sent["systemInstruction"]["parts"] == [{"text": "You are terse."}, {"text": "Be brief."}]
        assert reused(call)
    assert len(cache) == len(messages)
    # Another model is another view: its thinking is not replayed, never stale bytes.
    assert assert_same(ModelCall(messages=messages), cache, "gemini-2.5-pro").count(b"thinking") == 0


def test_turns_that_share_a_role_are_encoded_in_full() -> None:
    messages = [*history(3), ModelRequest(parts=[UserPromptPart(content="step again")])]
    cache = WireCache()
    for end in range(1, len(messages) + 1):
        assert_same(ModelCall(messages=messages[:end]), cache)
    assert not reused(ModelCall(messages=messages))
    # Only system parts: no content to answer, the uncached encoder's error.
    empty = ModelCall(messages=[ModelRequest(parts=[SystemPromptPart(content="s")])])
    with pytest.raises(UserError, match="at least one message with content"):
        GoogleCodec(model_name=MODEL, wire_cache=cache).encode(empty)


def test_a_message_changed_in_place_or_replaced_is_encoded_again() -> None:
    messages = history(5)
    canonical = GoogleCodec(model_name=MODEL).encode(ModelCall(messages=messages)).body
    cache = WireCache()
    assert_same(ModelCall(messages=messages), cache)
    text = edit_answer(messages, 1)
    assert b"edited in place" in assert_same(ModelCall(messages=messages), cache)
    body = assert_same(ModelCall(messages=elide_tool_returns(messages)), cache)
    assert body.count(b"(elided)") == 5
    text.content = 'step 0 \u00e9\u2603 "quoted"'
    assert assert_same(ModelCall(messages=messages), cache) == canonical


@pytest.mark.skipif(cassette_root() is None, reason="the shared cassettes are not available")
def test_recorded_answers_replayed_as_one_long_history() -> None:
    def decode(it: Interaction) -> ModelResponse:
        model = it.uri.split("/models/")[1].split(":")[0]
        return replay(GoogleCodec(model_name=model), it, ignore=("timestamp", "tool_call_id"))

    history = one_long_history(
        replayed(iter_interactions(*GOOGLE_FOLDERS), lambda uri: "enerateContent" in uri, decode)
    )
    assert len(history) > 50
    cache = WireCache()
    for end in range(1, len(history) + 1, 3):
        for model in (MODEL, "gemini-3-pro-preview"):
            assert_same(ModelCall(messages=history[:end]), cache, model)


def test_a_model_keeps_one_cache_across_its_requests() -> None:
    from ferrule.providers.google import GoogleModel
    from ferrule.providers.google import GoogleProvider

    model = GoogleModel(MODEL, provider=GoogleProvider(api_key="test-key-0000"))
    messages = history(6)
    for end in range(1, len(messages) + 1):
        call = ModelCall(messages=messages[:end])
        plain = model.codec()
        plain.wire_cache = None
        assert model.codec().encode(call) == plain.encode(call)
    assert len(model.wire_cache) == len(messages)


REQUEST_PARTS: list[Any] = [
    SystemPromptPart(content="sys"),
    SystemPromptPart(content=""),
    UserPromptPart(content="step text"),
    UserPromptPart(content=[]),
    ToolReturnPart(tool_name="add", content={"sum": 3}, tool_call_id="t1"),
]
RESPONSE_PARTS: list[Any] = [
    TextPart(content="step answer"),
    ThinkingPart(content="hm", signature="sig", provider_name="google-gla"),
    ToolCallPart(tool_name="add", args={"a": 1}, tool_call_id="t1"),
]


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for _ in range(draw(st.integers(1, 16))):
        if draw(st.booleans()):
            out.append(ModelRequest(parts=draw(st.lists(st.sampled_from(REQUEST_PARTS), max_size=3))))
        else:
            parts = draw(st.lists(st.sampled_from(RESPONSE_PARTS), max_size=3))
            out.append(ModelResponse(parts=parts, model_name=MODEL, provider_name="google-gla"))
    return out


@settings(max_examples=150, derandomize=True, deadline=None)
@given(messages())
def test_random_histories_grown_step_by_step_are_byte_identical(history: list[Message]) -> None:
    assert_every_step_identical(
        history, lambda call, cache: GoogleCodec(model_name=MODEL, wire_cache=cache).encode(call).body
    )
