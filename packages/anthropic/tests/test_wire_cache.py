"""History turns reused from the model's `WireCache`: the body sent is the uncached body, always.

Histories are grown from real recorded Messages API answers (the shared cassettes, decoded by the
codec) and from the part kinds whose turn depends on other messages (system parts, merged roles,
cache points, unanswered server-tool calls); every step is encoded with and without the cache and
the two bodies must be byte-identical, also after in-place edits and history processors.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core.codec import WireCache
from ferrule.core.conformance import replay
from ferrule.core.messages import CachePoint
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.providers.anthropic import codec
from tests.support.cassettes import ANTHROPIC_FOLDERS
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.provtests import native_round
from tests.support.wire_cache import Marking
from tests.support.wire_cache import assert_every_step_identical
from tests.support.wire_cache import edit_answer
from tests.support.wire_cache import elide_tool_returns
from tests.support.wire_cache import one_long_history
from tests.support.wire_cache import replayed

MODEL = "claude-sonnet-4-5"


def assert_same(call: ModelCall, cache: WireCache, model: str = MODEL) -> codec.EncodedRequest:
    """Encode `call` through `cache` and without one; the requests must be the same bytes and headers."""
    cached = codec.AnthropicCodec(model_name=model, wire_cache=cache).encode(call)
    plain = codec.AnthropicCodec(model_name=model).encode(call)
    assert cached == plain
    return cached


def reused(call: ModelCall) -> bool:
    """Whether the body of `call` is built from the cache's turns (not by the uncached encoder)."""
    return b"STEP" in codec.AnthropicCodec(model_name=MODEL, wire_cache=Marking()).encode(call).body


def history(turns: int) -> list[Message]:
    out: list[Message] = [
        ModelRequest(
            parts=[
                SystemPromptPart(content="You are terse."),
                UserPromptPart(content=["look:", ImageUrl(url="https://example.com/a.png"), CachePoint()]),
            ]
        )
    ]
    for i in range(turns):
        out.append(
            ModelResponse(
                parts=[
                    ThinkingPart(content=f"thinking {i}", signature=f"sig{i}", provider_name="anthropic"),
                    TextPart(content=f'step {i} \u00e9\u2603 "quoted"'),
                    ToolCallPart(tool_name="add", args={"a": i}, tool_call_id=f"call_{i}"),
                ],
                provider_name="anthropic",
            )
        )
        parts: list[ModelRequestPart] = [
            UserPromptPart(content=f"and then {i}"),  # sent after the result: results open the turn
            ToolReturnPart(tool_name="add", content={"sum": i}, tool_call_id=f"call_{i}"),
        ]
        out.append(ModelRequest(parts=parts))
    out.append(ModelResponse(parts=[TextPart(content="step done")], provider_name="anthropic"))
    return out


def test_every_step_of_a_growing_history_is_byte_identical_and_reused() -> None:
    messages = history(30)
    cache = WireCache()
    for end in range(1, len(messages) + 1):
        call = ModelCall(instructions="Be brief.", messages=messages[:end])
        sent = json.loads(assert_same(call, cache).body)
        assert sent["system"] == "You are terse.\n\nBe brief."
        assert reused(call) == (end > 1)  # the first turn has no "step" to mark
    assert len(cache) == len(messages)


def test_turns_that_depend_on_their_neighbours_are_encoded_in_full() -> None:
    messages = history(4)
    cases: dict[str, list[Message]] = {
        # Two requests in a row are one user turn.
        "merged": [*messages[:-1], ModelRequest(parts=[UserPromptPart(content="step a")])],
        # A cache point first in a message marks the previous message's last block.
        "reaching back": [*messages, ModelRequest(parts=[UserPromptPart(content=[CachePoint(), "x"])])],
        # More than four breakpoints: the earliest are dropped.
        "five cache points": [
            m
            for i in range(5)
            for m in (
                ModelRequest(parts=[UserPromptPart(content=[f"step {i}", CachePoint()])]),
                ModelResponse(parts=[TextPart(content=f"step {i}")]),
            )
        ],
        # A server-tool call whose result is missing is dropped once the history goes on.
        "unanswered server call": [
            *messages,
            ModelResponse(
                parts=[
                    TextPart(content="step web"),
                    NativeToolCallPart(
                        tool_name="web_search",
                        args={"query": "q"},
                        tool_call_id="srv_1",
                        provider_name="anthropic",
                    ),
                ],
                provider_name="anthropic",
            ),
            ModelRequest(parts=[UserPromptPart(content="go on")]),
        ],
    }
    for name, case in cases.items():
        cache = WireCache()
        for end in range(1, len(case) + 1):
            assert_same(ModelCall(messages=case[:end]), cache)
        assert not reused(ModelCall(messages=case)), name


def test_system_parts_betas_and_answered_server_calls_come_from_the_cache() -> None:
    messages = history(3)
    request = messages[2]
    assert isinstance(request, ModelRequest)
    messages[2] = ModelRequest(
        parts=[
            SystemPromptPart(content="Later system part."),
            *request.parts,
            UserPromptPart(
                content=[
                    UploadedFile(file_id="file_1", provider_name="anthropic", media_type="application/pdf")
                ]
            ),
        ]
    )
    messages[-1] = (  # the last answer searched the web: the call and its result
        ModelResponse(
            parts=[
                *native_round(
                    "web_search",
                    {"query": "q"},
                    [{"type": "web_search_result"}],
                    tool_call_id="srv_1",
                    provider_name="anthropic",
                ),
                TextPart(content="step found"),
            ],
            provider_name="anthropic",
        )
    )
    cache = WireCache()
    for end in range(1, len(messages)):
        assert_same(ModelCall(messages=messages[:end]), cache)
    wire = assert_same(ModelCall(messages=messages), cache)
    assert reused(ModelCall(messages=messages))
    assert codec.BETA_FILES_API in wire.betas
    assert json.loads(wire.body)["system"] == "You are terse.\n\nLater system part."


def test_a_message_changed_in_place_is_encoded_again() -> None:
    messages = history(3)
    cache = WireCache()
    assert_same(ModelCall(messages=messages), cache)
    edit_answer(messages, 1)
    request = messages[2]
    assert isinstance(request, ModelRequest)
    request.parts.append(UserPromptPart(content=["appended", CachePoint()]))
    sent = json.loads(assert_same(ModelCall(messages=messages), cache).body)
    assert {"type": "text", "text": "edited in place"} in sent["messages"][1]["content"]
    assert sent["messages"][2]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    # The cache point that moves with the last message: it marks the newest turn, every step.
    request.parts.pop()
    sent = json.loads(assert_same(ModelCall(messages=messages), cache).body)
    assert "cache_control" not in sent["messages"][2]["content"][-1]


def test_a_history_processor_replacing_messages_and_another_model() -> None:
    messages = history(8)
    canonical = codec.AnthropicCodec(model_name=MODEL).encode(ModelCall(messages=messages)).body
    cache = WireCache()
    assert_same(ModelCall(messages=messages), cache)
    body = assert_same(ModelCall(messages=elide_tool_returns(messages)), cache).body
    assert body.count(b"(elided)") == 8
    assert b'"sum"' not in body
    assert assert_same(ModelCall(messages=messages), cache).body == canonical
    assert_same(ModelCall(messages=messages), cache, "claude-3-5-haiku-latest")
    assert codec.AnthropicCodec(model_name=MODEL).encode(ModelCall(messages=messages)).body == canonical


@pytest.mark.skipif(cassette_root() is None, reason="the shared cassettes are not available")
def test_recorded_answers_replayed_as_one_long_history() -> None:
    answers = replayed(
        iter_interactions(*ANTHROPIC_FOLDERS),
        lambda uri: uri.split("?", 1)[0].endswith("/v1/messages"),
        lambda it: replay(codec.AnthropicCodec(), it),
    )
    history = one_long_history(answers)
    assert len(history) > 50
    cache = WireCache()
    for end in range(1, len(history) + 1, 3):
        for model in (MODEL, "claude-opus-4-5"):
            assert_same(ModelCall(messages=history[:end]), cache, model)
    assert_same(ModelCall(messages=history), cache)


def test_a_model_keeps_one_cache_across_its_requests() -> None:
    from ferrule.providers.anthropic import AnthropicModel
    from ferrule.providers.anthropic import AnthropicProvider

    model = AnthropicModel(MODEL, provider=AnthropicProvider(api_key="sk-ant-test-0000"))
    assert model.wire_cache is model.wire_cache
    messages = history(6)
    for end in range(1, len(messages) + 1):
        call = ModelCall(messages=messages[:end])
        plain = model.codec()
        plain.wire_cache = None
        assert model.encode(call, stream=False) == plain.encode(call)
    assert len(model.wire_cache) == len(messages)


# -- random histories ---------------------------------------------------------------------------------

USER_ITEMS: list[Any] = [
    CachePoint(),  # first: the items hypothesis shrinks towards, so cache points are frequent
    "step text",
    CachePoint(ttl="1h"),
    ImageUrl(url="https://example.com/b.png"),
    UploadedFile(file_id="file_2", provider_name="anthropic", media_type="image/png"),
]
REQUEST_PARTS: list[Any] = [
    SystemPromptPart(content="sys"),
    SystemPromptPart(content=""),
    ToolReturnPart(tool_name="add", content="3", tool_call_id="t1"),
    ToolReturnPart(tool_name="add", content="4", tool_call_id="t2"),
]
RESPONSE_PARTS: list[Any] = [
    TextPart(content="step answer"),
    TextPart(content=""),
    ThinkingPart(content="hm", signature="sig", provider_name="anthropic"),
    ThinkingPart(content="unsigned"),
    ToolCallPart(tool_name="add", args={"a": 1}, tool_call_id="t1"),
    NativeToolCallPart(tool_name="web_search", args={"q": "x"}, tool_call_id="s1", provider_name="anthropic"),
    NativeToolReturnPart(tool_name="web_search", content=[], tool_call_id="s1", provider_name="anthropic"),
    NativeToolCallPart(tool_name="web_search", args={"q": "y"}, tool_call_id="s2", provider_name="anthropic"),
]


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for _ in range(draw(st.integers(1, 16))):
        if draw(st.booleans()):
            parts: list[ModelRequestPart] = list(draw(st.lists(st.sampled_from(REQUEST_PARTS), max_size=3)))
            if draw(st.booleans()):
                parts.append(UserPromptPart(content=draw(st.lists(st.sampled_from(USER_ITEMS), max_size=3))))
            out.append(ModelRequest(parts=parts))
        else:
            answer = draw(st.lists(st.sampled_from(RESPONSE_PARTS), max_size=4))
            out.append(ModelResponse(parts=answer, provider_name="anthropic"))
    return out


@settings(max_examples=150, derandomize=True, deadline=None)
@given(messages())
def test_random_histories_grown_step_by_step_are_byte_identical(history: list[Message]) -> None:
    assert_every_step_identical(
        history, lambda call, cache: codec.AnthropicCodec(model_name=MODEL, wire_cache=cache).encode(call)
    )
