"""The Chat Completions codec as pure functions: encoding, buffered decoding and the stream decoder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core.errors import BadRequestError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ResponseTooLargeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import NativeTool
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.core.sse import SseEvent
from ferrule.core.sse import SseParser
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai.profiles import ChatDialect
from ferrule.providers.openai.profiles import deepseek_profile
from ferrule.providers.openai.profiles import openai_chat_profile
from ferrule.providers.openai.profiles import openrouter_profile
from tests.support.provtests import object_tool

OPENAI = openai_chat_profile("gpt-4.1").dialect
WEATHER = object_tool("get_weather", {"city": {"type": "string"}}, description="Weather for a city.")


def body(call: ModelCall, dialect: ChatDialect = OPENAI, **kwargs: Any) -> dict[str, Any]:
    return json.loads(
        chat_codec.encode_request(call, model_name=kwargs.pop("model", "gpt-4.1"), dialect=dialect, **kwargs)
    )


def ask(*parts: Any, **kwargs: Any) -> ModelCall:
    return ModelCall(messages=[ModelRequest(parts=list(parts) or [UserPromptPart(content="hi")])], **kwargs)


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "model": "m",
            "created": 1700000000,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            **extra,
        }
    ).encode()


def sse(*chunks: Any, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def delta(d: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-9",
        "model": "m",
        "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
        **extra,
    }


# --- encoding ------------------------------------------------------------------------------------------


def test_messages_roles_and_order() -> None:
    call = ModelCall(
        instructions="Be brief.",
        messages=[
            ModelRequest(parts=[SystemPromptPart(content="sys"), UserPromptPart(content="q1")]),
            ModelResponse(parts=[TextPart(content="a1"), TextPart(content="a2")]),
            ModelRequest(parts=[RetryPromptPart(content="bad output")]),
        ],
    )
    messages = body(call)["messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user", "assistant", "user"]
    assert messages[3]["content"] == "a1\n\na2"
    assert messages[4]["content"].startswith("bad output")


def test_o1_mini_sends_system_prompts_as_user() -> None:
    dialect = openai_chat_profile("o1-mini").dialect
    assert (
        body(ModelCall(instructions="x", messages=ask().messages), dialect)["messages"][0]["role"] == "user"
    )


def test_merge_leading_system_messages() -> None:
    call = ModelCall(
        instructions="a",
        messages=[ModelRequest(parts=[SystemPromptPart(content="b"), UserPromptPart(content="q")])],
    )
    messages = body(call, ChatDialect(merge_system_messages=True))["messages"]
    assert messages[0] == {"role": "system", "content": "a\n\nb"}
    assert messages[1]["role"] == "user"


def test_tool_calls_and_results() -> None:
    call = ModelCall(
        messages=[
            ModelRequest.user_text_prompt("weather?"),
            ModelResponse(
                parts=[ToolCallPart(tool_name="get_weather", args={"city": "Paris"}, tool_call_id="c1")]
            ),
            ModelRequest(
                parts=[
                    ToolReturnPart(tool_name="get_weather", content={"temp": 21}, tool_call_id="c1"),
                    RetryPromptPart(content="try again", tool_name="get_weather", tool_call_id="c2"),
                ]
            ),
        ],
        tools=[WEATHER],
    )
    sent = body(call)
    assistant, result, retry = sent["messages"][1:]
    assert assistant == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    assert result == {"role": "tool", "tool_call_id": "c1", "content": '{"temp":21}'}
    assert retry["role"] == "tool"
    assert retry["tool_call_id"] == "c2"
    tool = sent["tools"][0]["function"]
    assert tool["strict"] is True
    assert tool["parameters"]["additionalProperties"] is False
    assert sent["tool_choice"] == "auto"


def test_tool_choice_required_when_text_is_not_allowed_and_named_choices() -> None:
    assert body(ask(tools=[WEATHER], allow_text_output=False))["tool_choice"] == "required"
    second = ToolDefinition(name="get_time")
    multi = body(
        ask(tools=[WEATHER, second], settings=ModelSettings(tool_choice=["get_weather", "get_time"]))
    )
    assert multi["tool_choice"]["type"] == "allowed_tools"
    assert [t["function"]["name"] for t in multi["tool_choice"]["allowed_tools"]["tools"]] == [
        "get_weather",
        "get_time",
    ]
    narrowed = body(
        ask(
            tools=[WEATHER, second, ToolDefinition(name="other")],
            settings=ModelSettings(tool_choice=["get_weather", "get_time"]),
        ),
        ChatDialect(allowed_tools=False),
    )
    assert narrowed["tool_choice"] == "required"
    assert [t["function"]["name"] for t in narrowed["tools"]] == ["get_weather", "get_time"]
    with pytest.raises(UserError, match="not offered"):
        body(ask(tools=[WEATHER], settings=ModelSettings(tool_choice=["nope"])))
    with pytest.raises(UserError, match="offers none"):
        body(ask(settings=ModelSettings(tool_choice=["nope"])))


def test_non_strict_dialect_sends_schema_unchanged() -> None:
    sent = body(ask(tools=[WEATHER]), deepseek_profile("deepseek-chat").dialect)
    assert sent["tools"][0]["function"] == {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": WEATHER.parameters_json_schema,
    }


def test_response_formats() -> None:
    assert body(ask(output=JsonObjectFormat()))["response_format"] == {"type": "json_object"}
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a"],
    }
    strict = body(ask(output=JsonSchemaFormat(name="out", schema=schema, strict=True, description="d")))[
        "response_format"
    ]
    spec = strict["json_schema"]
    assert spec["strict"] is True
    assert spec["description"] == "d"
    assert spec["schema"]["required"] == ["a", "b"]
    assert spec["schema"]["properties"]["b"] == {"type": ["string", "null"]}
    relaxed = body(ask(output=JsonSchemaFormat(name="out", schema=schema)))["response_format"]["json_schema"]
    assert relaxed["strict"] is False  # optional property: not strict-compatible, so not forced


def test_settings_mapping() -> None:
    settings = ModelSettings(
        max_tokens=100,
        temperature=0.2,
        top_p=0.9,
        seed=7,
        stop_sequences=["END"],
        presence_penalty=0.1,
        frequency_penalty=0.3,
        logit_bias={"50256": -100},
        top_logprobs=3,
        parallel_tool_calls=False,
        reasoning_effort="low",
        service_tier="flex",
    )
    sent = body(ask(tools=[WEATHER], settings=settings))
    assert sent["max_completion_tokens"] == 100
    assert (sent["temperature"], sent["top_p"], sent["seed"], sent["stop"]) == (0.2, 0.9, 7, ["END"])
    assert (sent["presence_penalty"], sent["frequency_penalty"]) == (0.1, 0.3)
    assert sent["logit_bias"] == {"50256": -100}
    assert (sent["logprobs"], sent["top_logprobs"]) == (True, 3)
    assert sent["parallel_tool_calls"] is False
    assert (sent["reasoning_effort"], sent["service_tier"]) == ("low", "flex")
    assert (
        body(ask(settings=ModelSettings(max_tokens=5)), ChatDialect(max_tokens_field="max_tokens"))[
            "max_tokens"
        ]
        == 5
    )
    assert body(ask(settings=ModelSettings(thinking=False)))["reasoning_effort"] == "none"
    with pytest.raises(UserError, match="top_k"):
        body(ask(settings=ModelSettings(top_k=5)))
    assert body(ask(settings=ModelSettings(top_k=5)), ChatDialect(top_k=True))["top_k"] == 5


def test_thinking_controls_per_dialect() -> None:
    deepseek = deepseek_profile("deepseek-chat").dialect
    assert body(ask(settings=ModelSettings(thinking=True)), deepseek)["thinking"] == {"type": "enabled"}
    router = openrouter_profile("openai/o3").dialect
    sent = body(
        ask(settings=ModelSettings(reasoning_effort="high", thinking=True, thinking_budget_tokens=99)), router
    )
    assert sent["reasoning"] == {"effort": "high", "enabled": True, "max_tokens": 99}
    with pytest.raises(UserError, match="reasoning_effort"):
        body(ask(settings=ModelSettings(reasoning_effort="high")), ChatDialect(thinking_control="none"))


def test_stream_options_and_prompt_cache_key() -> None:
    sent = body(ModelCall(messages=ask().messages, cache_key="k1"), stream=True)
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["prompt_cache_key"] == "k1"
    plain = body(
        ModelCall(messages=ask().messages, cache_key="k1"), ChatDialect(stream_usage=False), stream=True
    )
    assert "stream_options" not in plain
    assert "prompt_cache_key" not in plain


def test_extra_body_cannot_override_owned_keys() -> None:
    ok = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"user": "u1"})])
    assert body(ask(settings=ok))["user"] == "u1"
    clash = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"messages": []})])
    with pytest.raises(UserError, match="messages"):
        body(ask(settings=clash))
    other = ModelSettings(extra_body=[ProviderExtraBody(provider="groq", body={"messages": []})])
    assert body(ask(settings=other))["messages"][0]["role"] == "user"  # not for this provider: ignored


def test_rich_content() -> None:
    png = BinaryContent(data=b"\x89PNG", media_type="image/png", vendor_metadata={"detail": "low"})
    wav = BinaryContent(data=b"RIFF", media_type="audio/wav")
    pdf = BinaryContent(data=b"%PDF", media_type="application/pdf")
    csv = BinaryContent(data=b"a,b\n1,2", media_type="text/csv", identifier="data1")
    mine = UploadedFile(file_id="file-1", provider_name="openai", media_type="application/pdf")
    part = UserPromptPart(content=["look", png, wav, pdf, csv, ImageUrl(url="https://x.test/i.jpg"), mine])
    content = body(ask(part))["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "look"}
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw==", "detail": "low"},
    }
    assert content[2] == {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    assert content[3]["file"]["filename"] == "filename.pdf"
    assert content[4]["text"].startswith('-----BEGIN FILE id="data1" type="text/csv"-----\na,b\n1,2')
    assert content[5] == {"type": "image_url", "image_url": {"url": "https://x.test/i.jpg"}}
    assert content[6] == {"type": "file", "file": {"file_id": "file-1"}}
    with pytest.raises(UserError, match="uploaded to 'anthropic'"):
        body(ask(UserPromptPart(content=[UploadedFile(file_id="f", provider_name="anthropic")])))
    with pytest.raises(UserError, match="downloaded"):
        body(ask(UserPromptPart(content=[AudioUrl(url="https://x.test/a.mp3")])))
    with pytest.raises(UserError, match="downloaded"):
        body(ask(UserPromptPart(content=[DocumentUrl(url="https://x.test/a.pdf")])))
    router = openrouter_profile("openai/gpt-4o").dialect
    routed = body(ask(UserPromptPart(content=[DocumentUrl(url="https://x.test/a.pdf")])), router)
    assert routed["messages"][0]["content"][0]["file"]["file_data"] == "https://x.test/a.pdf"


def test_reasoning_replay_rules() -> None:
    thinking = ThinkingPart(content="let me think", id="reasoning_content", provider_name="deepseek")
    turn_with_call = ModelResponse(
        parts=[thinking, ToolCallPart(tool_name="get_weather", args="{}", tool_call_id="c1")],
        provider_name="deepseek",
    )
    plain_turn = ModelResponse(parts=[thinking, TextPart(content="done")], provider_name="deepseek")
    messages = [
        ModelRequest.user_text_prompt("q"),
        turn_with_call,
        ModelRequest(parts=[ToolReturnPart(tool_name="get_weather", content="ok", tool_call_id="c1")]),
        plain_turn,
    ]
    dialect = deepseek_profile("deepseek-reasoner").dialect
    sent = body(ModelCall(messages=messages, tools=[WEATHER]), dialect, provider_name="deepseek")["messages"]
    assert sent[1]["reasoning_content"] == "let me think"  # tool turn: replayed
    assert "reasoning_content" not in sent[3]  # final answer turn: not
    other = body(ModelCall(messages=messages, tools=[WEATHER]), dialect, provider_name="groq")["messages"]
    assert "reasoning_content" not in other[1]  # never replayed to another provider
    always = body(
        ModelCall(messages=messages, tools=[WEATHER]),
        ChatDialect(thinking_field="reasoning", thinking_replay="always"),
        provider_name="deepseek",
    )["messages"]
    assert always[3]["reasoning"] == "let me think"


def test_openrouter_reasoning_details_replayed_to_same_model_only() -> None:
    details = [{"type": "reasoning.encrypted", "data": "enc", "index": 0}]
    answer = ModelResponse(
        parts=[
            ThinkingPart(
                content="",
                id="reasoning_details",
                provider_name="openrouter",
                provider_details={"reasoning_details": details},
            ),
            TextPart(content="hi"),
        ],
        provider_name="openrouter",
        model_name="openai/o3",
    )
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("q"), answer, ModelRequest.user_text_prompt("again")]
    )
    dialect = openrouter_profile("openai/o3").dialect
    assert (
        body(call, dialect, model="openai/o3", provider_name="openrouter")["messages"][1]["reasoning_details"]
        == details
    )
    assert (
        "reasoning_details"
        not in body(call, dialect, model="openai/gpt-4o", provider_name="openrouter")["messages"][1]
    )


def test_tool_result_with_media_is_followed_by_a_user_message() -> None:
    image = BinaryContent(data=b"img", media_type="image/png", identifier="pic")
    call = ModelCall(
        messages=[
            ModelRequest.user_text_prompt("q"),
            ModelResponse(parts=[ToolCallPart(tool_name="snap", tool_call_id="c1")]),
            ModelRequest(
                parts=[ToolReturnPart(tool_name="snap", content=["caption", image], tool_call_id="c1")]
            ),
        ]
    )
    messages = body(call)["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": '["caption"]\n\nSee file pic'}
    assert messages[3]["content"][0] == {"type": "text", "text": "This is file pic:"}
    assert messages[3]["content"][1]["type"] == "image_url"


def test_native_parts_are_not_sent_and_web_search_options() -> None:
    answer = ModelResponse(parts=[NativeToolCallPart(tool_name="web_search"), TextPart(content="x")])
    assert body(ModelCall(messages=[ModelRequest.user_text_prompt("q"), answer]))["messages"][1] == {
        "role": "assistant",
        "content": "x",
    }
    search = openai_chat_profile("gpt-4o-search-preview").dialect
    sent = body(
        ask(native_tools=[NativeTool(kind="web_search", options={"search_context_size": "low"})]), search
    )
    assert sent["web_search_options"] == {"search_context_size": "low"}
    with pytest.raises(UserError, match="Responses API"):
        body(ask(native_tools=[NativeTool(kind="code_execution")]))


# --- buffered decoding -------------------------------------------------------------------------------------


def test_decode_text_tool_calls_usage() -> None:
    response = chat_codec.decode_response(
        completion(
            {
                "role": "assistant",
                "content": "hi",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                ],
            },
            "tool_calls",
            usage={
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 1},
                "completion_tokens_details": {"reasoning_tokens": 2, "audio_tokens": 1},
            },
        ),
        provider_name="openai",
    )
    assert response.text == "hi"
    [call] = response.tool_calls
    assert (call.tool_name, call.args, call.tool_call_id) == ("f", '{"a":1}', "c1")
    assert response.finish_reason == "tool_call"
    assert response.raw_finish_reason == "tool_calls"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (10, 5, 4)
    assert (usage.input_audio_tokens, usage.output_audio_tokens, usage.reasoning_tokens) == (1, 1, 2)
    assert response.provider_response_id == "chatcmpl-1"
    assert response.timestamp.year == 2023


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_call"),
        ("function_call", "tool_call"),
        ("content_filter", "content_filter"),
        ("eos", "stop"),
        ("weird", "other"),
    ],
)
def test_finish_reasons(raw: str, normalized: str) -> None:
    response = chat_codec.decode_response(completion({"role": "assistant", "content": "x"}, raw))
    assert response.finish_reason == normalized
    assert response.provider_details == {"finish_reason": raw}


def test_reasoning_fields_become_thinking_parts() -> None:
    for field in ("reasoning_content", "reasoning"):
        response = chat_codec.decode_response(
            completion({"role": "assistant", "content": "a", field: "because"}), provider_name="vllm"
        )
        thinking = response.parts[0]
        assert isinstance(thinking, ThinkingPart)
        assert (thinking.content, thinking.id, thinking.provider_name) == ("because", field, "vllm")


def test_tool_calls_without_ids_get_stable_distinct_ids() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"function": {"name": "a", "arguments": "{}"}},
            {"id": "", "function": {"name": "b", "arguments": "{}"}},
        ],
    }
    data = completion(message, "tool_calls")
    first = chat_codec.decode_response(data)
    ids = [c.tool_call_id for c in first.tool_calls]
    assert len(set(ids)) == 2
    assert ids == [c.tool_call_id for c in chat_codec.decode_response(data).tool_calls]
    other = json.loads(data)
    other["id"] = "chatcmpl-2"
    assert not set(ids) & {
        c.tool_call_id for c in chat_codec.decode_response(json.dumps(other).encode()).tool_calls
    }


def test_content_as_a_list_and_arguments_as_an_object() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}],
    }
    response = chat_codec.decode_response(completion(message))
    assert response.text == "ab"
    assert response.tool_calls[0].args == {"x": 1}


def test_refusal_is_a_content_filter_finish() -> None:
    response = chat_codec.decode_response(
        completion({"role": "assistant", "content": None, "refusal": "no"}, "stop")
    )
    assert response.finish_reason == "content_filter"
    assert response.provider_details == {"finish_reason": "stop", "refusal": "no"}
    assert response.parts == []


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"message": "slow", "code": 429}, RateLimitError),
        ({"message": "bad", "type": "invalid_request_error"}, BadRequestError),
        ({"message": "oops", "code": "server_error"}, ServerError),
        ("plain text error", ServerError),
    ],
)
def test_error_object_in_a_200_body(error: Any, cls: type[Exception]) -> None:
    with pytest.raises(cls):
        chat_codec.decode_response(json.dumps({"error": error}).encode())


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"null",
        b"[]",
        b"{}",
        b'{"choices": []}',
        b'{"choices": [{}]}',
        b'{"choices": "x"}',
        b"{bad",
        b'{"choices": [{"message": {"content": 5}}]}',
        b'{"choices":[{"message":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}',
    ],
)
def test_malformed_bodies_raise_decode_error(data: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        chat_codec.decode_response(data)


# --- streaming -------------------------------------------------------------------------------------------


def test_stream_text_thinking_tools_and_usage() -> None:
    data = sse(
        delta({"role": "assistant", "reasoning_content": "hm"}),
        delta({"reasoning_content": "m"}),
        delta({"content": "Hel"}),
        delta({"content": "lo"}),
        delta({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_", "arguments": ""}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": '{"ci'}}]}),
        delta({"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "other", "arguments": "{}"}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": 'ty":"P"}'}}]}),
        delta({}, "tool_calls"),
        {"id": "chatcmpl-9", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    )
    decoder = chat_codec.ChatStreamDecoder(provider_name="deepseek")
    events: list[ModelStreamEvent] = []
    for event in SseParser().feed(data):
        events.extend(decoder.feed(event))
    events.extend(decoder.finish())
    assert sum(isinstance(e, PartStartEvent) for e in events) == 4
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    thinking, text, first, second = final.response.parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.content == "hmm"
    assert thinking.id == "reasoning_content"
    assert isinstance(text, TextPart)
    assert text.content == "Hello"
    assert isinstance(first, ToolCallPart)
    assert (first.tool_name, first.args, first.tool_call_id) == (
        "get_weather",
        '{"city":"P"}',
        "c1",
    )
    assert isinstance(second, ToolCallPart)
    assert second.tool_call_id == "c2"
    assert final.response.usage.input_tokens == 3
    assert final.response.finish_reason == "tool_call"


def test_stream_calls_sharing_index_zero_with_distinct_ids() -> None:
    data = sse(
        delta({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}),
        delta({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        delta({}, "tool_calls"),
    )
    response = chat_codec.decode_stream(data)
    assert [(c.tool_name, c.tool_call_id) for c in response.tool_calls] == [("f", "a"), ("g", "b")]


def test_stream_tool_call_without_id_gets_one_at_start() -> None:
    decoder = chat_codec.ChatStreamDecoder()
    events = decoder.feed(
        SseEvent(
            data=json.dumps(
                delta({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]})
            )
        )
    )
    start_delta = next(e for e in events if isinstance(e, PartDeltaEvent))
    assert start_delta.delta.tool_call_id  # type: ignore[union-attr]
    decoder.feed(SseEvent(data=json.dumps(delta({}, "stop"))))
    completed = decoder.finish()[-1]
    assert isinstance(completed, ResponseCompleted)
    assert completed.response.tool_calls[0].tool_call_id == start_delta.delta.tool_call_id  # type: ignore[union-attr]


def test_stream_complete_with_finish_reason_but_no_done() -> None:
    response = chat_codec.decode_stream(sse(delta({"content": "x"}), delta({}, "length"), done=False))
    assert response.finish_reason == "length"
    assert response.text == "x"


def test_stream_done_without_finish_reason_is_complete() -> None:
    assert chat_codec.decode_stream(sse(delta({"content": "x"}))).text == "x"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        sse(done=False),
        sse(delta({"content": "partial"}), done=False),
        b"data: {not json}\n\n",
        b'data: {"choices": [{"delta": {"content": 1}}]}\n\n',
        sse(delta({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}), delta({}, "stop")),
    ],
)
def test_truncated_or_malformed_streams(data: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        chat_codec.decode_stream(data)


def test_data_after_done_and_finish_twice() -> None:
    with pytest.raises(ResponseDecodeError, match="after \\[DONE\\]"):
        chat_codec.decode_stream(b"data: [DONE]\n\n" + sse(delta({"content": "x"})))
    decoder = chat_codec.ChatStreamDecoder()
    decoder.feed(SseEvent(data="[DONE]"))
    decoder.finish()
    with pytest.raises(ResponseDecodeError):
        decoder.finish()
    with pytest.raises(ResponseDecodeError):
        decoder.feed(SseEvent(data="[DONE]"))


def test_stream_error_chunk() -> None:
    with pytest.raises(RateLimitError, match="busy"):
        chat_codec.decode_stream(sse(delta({"content": "x"}), {"error": {"code": 429, "message": "busy"}}))


def test_stream_event_size_limit() -> None:
    huge = b"data: " + b"x" * (17 * 1024 * 1024) + b"\n\n"
    with pytest.raises(ResponseTooLargeError):
        chat_codec.decode_stream(huge)


def test_only_the_first_choice_is_decoded() -> None:
    chunk = {
        "id": "x",
        "choices": [
            {"index": 1, "delta": {"content": "B"}},
            {"index": 0, "delta": {"content": "A"}, "finish_reason": "stop"},
        ],
    }
    assert chat_codec.decode_stream(sse(chunk)).text == "A"


def test_groq_usage_in_x_groq() -> None:
    response = chat_codec.decode_stream(
        sse(delta({"content": "x"}, "stop", x_groq={"usage": {"prompt_tokens": 8, "completion_tokens": 2}}))
    )
    assert (response.usage.input_tokens, response.usage.output_tokens) == (8, 2)
    assert response.usage.cache_reported is False
