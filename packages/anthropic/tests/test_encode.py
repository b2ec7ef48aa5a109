"""Encoding a ModelCall into a Messages API request body: every mapping rule and every limit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextContent
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.anthropic import AnthropicModel
from ferrule.providers.anthropic import AnthropicProvider
from ferrule.providers.anthropic import codec
from tests.support.provtests import native_round
from tests.support.provtests import object_tool

SONNET = "claude-sonnet-4-5"
OPUS_47 = "claude-opus-4-7"


def encode(
    messages: list[Message] | None = None, *, model: str = SONNET, stream: bool = False, **kwargs: Any
) -> dict[str, Any]:
    call = ModelCall(messages=messages or [ModelRequest.user_text_prompt("hi")], **kwargs)
    return json.loads(codec.encode_request(call, model_name=model, stream=stream).body)


def betas(messages: list[Message] | None = None, *, model: str = SONNET, **kwargs: Any) -> frozenset[str]:
    call = ModelCall(messages=messages or [ModelRequest.user_text_prompt("hi")], **kwargs)
    return codec.encode_request(call, model_name=model).betas


def user(*content: Any) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=list(content))])


def anthropic_response(*parts: Any, model_name: str | None = "claude-sonnet-4-5-20250929") -> ModelResponse:
    return ModelResponse(parts=list(parts), provider_name="anthropic", model_name=model_name)


TOOL = object_tool("get_weather", {"city": {"type": "string"}}, description="Weather for a city.")


# -- body basics -----------------------------------------------------------------------------------


def test_minimal_body_has_model_max_tokens_messages_and_stream_flag() -> None:
    body = encode()
    assert body == {
        "model": SONNET,
        "max_tokens": 16384,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": False,
    }
    assert encode(stream=True)["stream"] is True


def test_max_tokens_default_is_per_family() -> None:
    assert encode(model="claude-3-haiku-20240307")["max_tokens"] == 4096
    assert encode(model="claude-3-5-haiku-latest")["max_tokens"] == 8192
    assert encode(model="claude-opus-4-1")["max_tokens"] == 16384
    assert encode(model="claude-nonexistent-9")["max_tokens"] == 4096


def test_max_tokens_at_the_family_limit_and_one_past_it() -> None:
    assert encode(model="claude-opus-4-1", settings=ModelSettings(max_tokens=32_000))["max_tokens"] == 32_000
    with pytest.raises(UserError, match="above the 32000 output tokens"):
        encode(model="claude-opus-4-1", settings=ModelSettings(max_tokens=32_001))


def test_system_prompts_and_instructions_are_joined_into_system() -> None:
    history: list[Message] = [
        ModelRequest(parts=[SystemPromptPart(content="Be brief."), UserPromptPart(content="hi")]),
    ]
    body = encode(history, instructions="Answer in French.")
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert "system" not in encode()


def test_consecutive_roles_are_merged_and_tool_results_lead_the_user_turn() -> None:
    call = ToolCallPart(tool_name="get_weather", args={"city": "Paris"}, tool_call_id="toolu_1")
    history: list[Message] = [
        user("first"),
        user("second"),
        anthropic_response(TextPart(content="ok"), call),
        ModelRequest(
            parts=[
                UserPromptPart(content="by the way"),
                ToolReturnPart(tool_name="get_weather", content="sunny", tool_call_id="toolu_1"),
            ]
        ),
    ]
    messages = encode(history, tools=[TOOL])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["text"] for b in messages[0]["content"]] == ["first", "second"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "is_error": False},
        {"type": "text", "text": "by the way"},
    ]


def test_empty_text_is_not_sent() -> None:
    history: list[Message] = [user("", "real"), anthropic_response(TextPart(content="")), user("next")]
    messages = encode(history)["messages"]
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "real"}, {"type": "text", "text": "next"}]}
    ]


# -- rich user content -----------------------------------------------------------------------------


def test_images_and_documents_by_bytes_url_and_text() -> None:
    content = encode(
        [
            user(
                TextContent(content="look", metadata={"never": "sent"}),
                BinaryContent(data=b"\x89PNG", media_type="image/png"),
                BinaryContent(
                    data=b"%PDF-1.4", media_type="application/pdf", vendor_metadata={"title": "Spec"}
                ),
                BinaryContent(data="héllo".encode(), media_type="text/markdown"),
                ImageUrl(url="https://example.com/cat.jpg"),
                DocumentUrl(
                    url="https://example.com/paper.pdf", vendor_metadata={"citations": {"enabled": True}}
                ),
            )
        ]
    )["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
            "title": "Spec",
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "héllo"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "document",
            "source": {"type": "url", "url": "https://example.com/paper.pdf"},
            "citations": {"enabled": True},
        },
    ]


def test_uploaded_files_use_file_sources_and_the_files_beta() -> None:
    image = UploadedFile(file_id="file_img", provider_name="anthropic", media_type="image/png")
    document = UploadedFile(file_id="file_doc", provider_name="anthropic", media_type="application/pdf")
    history: list[Message] = [user("read", image, document)]
    content = encode(history)["messages"][0]["content"]
    assert content[1] == {"type": "image", "source": {"type": "file", "file_id": "file_img"}}
    assert content[2] == {"type": "document", "source": {"type": "file", "file_id": "file_doc"}}
    assert codec.BETA_FILES_API in betas(history)
    assert codec.BETA_FILES_API not in betas()


def test_a_file_uploaded_elsewhere_is_refused() -> None:
    with pytest.raises(UserError, match="uploaded to 'openai'"):
        encode([user(UploadedFile(file_id="file-1", provider_name="openai"))])


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (BinaryContent(data=b"x", media_type="image/tiff"), "not image/tiff"),
        (BinaryContent(data=b"x", media_type="application/zip"), "does not accept application/zip"),
        (BinaryContent(data=b"\xff\xfe", media_type="text/plain"), "must be UTF-8"),
        (DocumentUrl(url="https://example.com/a.txt"), "only as PDF"),
        (ImageUrl(url="https://example.com/a.png", force_download=True), "force_download"),
        (AudioUrl(url="https://example.com/a.mp3"), "do not accept AudioUrl"),
    ],
)
def test_media_the_api_cannot_take_fails_before_sending(item: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        encode([user("x", item)])


# -- cache points ----------------------------------------------------------------------------------


def test_cache_point_marks_the_block_before_it() -> None:
    content = encode([user("a", CachePoint(), "b", CachePoint(ttl="1h"))])["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]


def test_leading_cache_point_marks_the_end_of_the_previous_message() -> None:
    history: list[Message] = [
        user("a"),
        anthropic_response(TextPart(content="reply")),
        user(CachePoint(), "b"),
    ]
    messages = encode(history)["messages"]
    assert messages[1]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert "cache_control" not in messages[2]["content"][0]


def test_cache_point_with_nothing_before_it_is_refused() -> None:
    with pytest.raises(UserError, match="CachePoint must follow some content"):
        encode([user(CachePoint(), "a")])


def test_four_cache_points_are_kept_and_a_fifth_drops_the_oldest() -> None:
    four = encode([user("1", CachePoint(), "2", CachePoint(), "3", CachePoint(), "4", CachePoint())])
    assert [("cache_control" in b) for b in four["messages"][0]["content"]] == [True] * 4
    five = encode(
        [user("0", CachePoint(), "1", CachePoint(), "2", CachePoint(), "3", CachePoint(), "4", CachePoint())]
    )
    assert [("cache_control" in b) for b in five["messages"][0]["content"]] == [False, True, True, True, True]


# -- tools -----------------------------------------------------------------------------------------


def test_tools_with_input_schema_and_auto_choice() -> None:
    body = encode(tools=[TOOL])
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    assert body["tool_choice"] == {"type": "auto"}
    assert "tools" not in encode()
    assert "tool_choice" not in encode()


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("none", False, {"type": "none"}),
        ("required", None, {"type": "any"}),
        (["get_weather"], None, {"type": "tool", "name": "get_weather"}),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", True, {"type": "any", "disable_parallel_tool_use": False}),
    ],
)
def test_tool_choice(choice: Any, parallel: bool | None, expected: dict[str, Any]) -> None:
    settings = ModelSettings(tool_choice=choice, parallel_tool_calls=parallel)
    assert encode(tools=[TOOL], settings=settings)["tool_choice"] == expected


def test_tool_choice_among_several_sends_only_those_tools() -> None:
    other = ToolDefinition(name="other")
    third = ToolDefinition(name="third")
    body = encode(tools=[TOOL, other, third], settings=ModelSettings(tool_choice=["get_weather", "third"]))
    assert [t["name"] for t in body["tools"]] == ["get_weather", "third"]
    assert body["tool_choice"] == {"type": "any"}
    with pytest.raises(UserError, match="not offered: missing"):
        encode(tools=[TOOL], settings=ModelSettings(tool_choice=["missing"]))


def test_output_tools_are_required_when_text_is_not_allowed() -> None:
    final = ToolDefinition(name="final_result", kind="output")
    body = encode(tools=[TOOL], output_tools=[final], allow_text_output=False)
    assert [t["name"] for t in body["tools"]] == ["get_weather", "final_result"]
    assert body["tool_choice"] == {"type": "any"}


def test_strict_tools_get_the_strict_schema_subset_only_where_supported() -> None:
    strict = ToolDefinition(
        name="lookup",
        parameters_json_schema={
            "type": "object",
            "title": "Args",
            "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}},
        },
        strict=True,
    )
    tool = encode(tools=[strict])["tools"][0]
    assert tool["strict"] is True
    assert tool["input_schema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "{minimum: 1, maximum: 9}"}},
        "additionalProperties": False,
    }
    old = encode(model="claude-sonnet-4-0", tools=[strict])["tools"][0]
    assert "strict" not in old
    assert old["input_schema"] == strict.parameters_json_schema


def test_deferred_tools_are_marked_only_where_the_api_loads_them() -> None:
    deferred = ToolDefinition(name="rare", defer_loading=True)
    assert encode(tools=[deferred])["tools"][0]["defer_loading"] is True
    assert "defer_loading" not in encode(model="claude-sonnet-4-0", tools=[deferred])["tools"][0]


def test_tool_search_results_become_tool_references() -> None:
    rare = ToolDefinition(name="rare", defer_loading=True)
    search = ToolCallPart(tool_name="search_tools", args={"queries": ["r"]}, tool_call_id="s1")
    history: list[Message] = [
        user("find"),
        anthropic_response(search),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="search_tools",
                    content={"tools": [{"name": "rare"}, {"name": "not_offered"}]},
                    tool_call_id="s1",
                    tool_kind="tool-search",
                )
            ]
        ),
    ]
    result = encode(history, tools=[ToolDefinition(name="search_tools"), rare])["messages"][2]["content"][0]
    assert result["content"] == [{"type": "tool_reference", "tool_name": "rare"}]
    plain = encode(history, model="claude-sonnet-4-0", tools=[ToolDefinition(name="search_tools"), rare])
    assert (
        plain["messages"][2]["content"][0]["content"] == '{"tools":[{"name":"rare"},{"name":"not_offered"}]}'
    )


def test_tool_results_with_rich_content_errors_and_retries() -> None:
    call_a = ToolCallPart(tool_name="shot", args={}, tool_call_id="a")
    call_b = ToolCallPart(tool_name="shot", args="{not json", tool_call_id="b")
    call_c = ToolCallPart(tool_name="shot", args={}, tool_call_id="c")
    history: list[Message] = [
        user("go"),
        anthropic_response(call_a, call_b, call_c),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="shot",
                    content=["the image:", BinaryContent(data=b"GIF8", media_type="image/gif"), {"n": 1}],
                    tool_call_id="a",
                ),
                RetryPromptPart(content="bad arguments", tool_name="shot", tool_call_id="b"),
                ToolReturnPart(tool_name="shot", content="refused", tool_call_id="c", outcome="denied"),
                RetryPromptPart(content="answer in JSON"),
            ]
        ),
    ]
    messages = encode(history)["messages"]
    assert messages[1]["content"][1]["input"] == {"_raw_arguments": "{not json"}
    a, b, c, text = messages[2]["content"]
    assert a == {
        "type": "tool_result",
        "tool_use_id": "a",
        "is_error": False,
        "content": [
            {"type": "text", "text": "the image:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOA=="}},
            {"type": "text", "text": '{"n":1}'},
        ],
    }
    assert b == {
        "type": "tool_result",
        "tool_use_id": "b",
        "content": "bad arguments\n\nFix the errors and try again.",
        "is_error": True,
    }
    assert c["is_error"] is True
    assert c["content"] == "refused"
    assert text == {"type": "text", "text": "answer in JSON\n\nFix the errors and try again."}


# -- structured output, sampling, stop -------------------------------------------------------------


def test_native_structured_output_uses_output_config_format() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
    }
    body = encode(output=JsonSchemaFormat(name="Person", schema=schema))
    assert body["output_config"] == {
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "{minLength: 1}"}},
                "additionalProperties": False,
                "required": ["name"],
            },
        }
    }
    with pytest.raises(UserError, match="no JSON-object output mode"):
        encode(output=JsonObjectFormat())


def test_unsupported_structured_output_fails_the_profile_check() -> None:
    model = AnthropicModel("claude-sonnet-4-0", provider=AnthropicProvider(api_key="sk-test-key-0000"))
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("hi")],
        output=JsonSchemaFormat(name="X", schema={"type": "object"}),
    )
    with pytest.raises(UnsupportedFeatureError, match="native JSON-schema output"):
        model.encode(call, stream=False)


def test_sampling_and_stop_sequences() -> None:
    settings = ModelSettings(
        temperature=0.5, top_p=0.9, top_k=20, stop_sequences=["END"], service_tier="auto"
    )
    body = encode(settings=settings)
    assert (
        body["temperature"],
        body["top_p"],
        body["top_k"],
        body["stop_sequences"],
        body["service_tier"],
    ) == (
        0.5,
        0.9,
        20,
        ["END"],
        "auto",
    )


def test_sampling_is_refused_by_families_that_reject_it() -> None:
    model = AnthropicModel(OPUS_47, provider=AnthropicProvider(api_key="sk-test-key-0000"))
    call = ModelCall(messages=[ModelRequest.user_text_prompt("hi")], settings=ModelSettings(temperature=0.2))
    with pytest.raises(UnsupportedFeatureError, match="'temperature'"):
        model.encode(call, stream=False)


# -- thinking --------------------------------------------------------------------------------------


def test_thinking_budget_at_the_minimum_and_one_below() -> None:
    body = encode(settings=ModelSettings(thinking_budget_tokens=1024))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    with pytest.raises(UserError, match="below the API's minimum of 1024"):
        encode(settings=ModelSettings(thinking_budget_tokens=1023))


def test_max_tokens_must_exceed_the_budget() -> None:
    body = encode(settings=ModelSettings(thinking_budget_tokens=4000, max_tokens=4001))
    assert body["max_tokens"] == 4001
    with pytest.raises(UserError, match="must be greater than the thinking budget"):
        encode(settings=ModelSettings(thinking_budget_tokens=4000, max_tokens=4000))


def test_default_max_tokens_grows_to_fit_a_large_budget() -> None:
    body = encode(settings=ModelSettings(thinking_budget_tokens=30_000))
    assert body["max_tokens"] == 30_000 + 16_384


def test_reasoning_effort_selects_a_budget_on_budget_families() -> None:
    assert encode(settings=ModelSettings(reasoning_effort="low"))["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2048,
    }
    assert encode(settings=ModelSettings(thinking=True))["thinking"] == {
        "type": "enabled",
        "budget_tokens": codec.DEFAULT_THINKING_BUDGET,
    }
    with pytest.raises(UserError, match="conflicts with thinking=False"):
        encode(settings=ModelSettings(reasoning_effort="low", thinking=False))


def test_effort_families_send_output_config_effort_and_adaptive_thinking() -> None:
    body = encode(model="claude-opus-4-6", settings=ModelSettings(reasoning_effort="max"))
    assert body["output_config"] == {"effort": "max"}
    assert "thinking" not in body
    body = encode(model="claude-opus-4-6", settings=ModelSettings(reasoning_effort="high", thinking=True))
    assert body["thinking"] == {"type": "adaptive"}
    body = encode(model=OPUS_47, settings=ModelSettings(reasoning_effort="xhigh", thinking=True))
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "xhigh"}
    with pytest.raises(UserError, match="rejects thinking_budget_tokens"):
        encode(model=OPUS_47, settings=ModelSettings(thinking_budget_tokens=2048))


def test_thinking_constraints_fail_before_sending() -> None:
    thinking: dict[str, Any] = {"thinking_budget_tokens": 2048}
    with pytest.raises(UserError, match="temperature 1"):
        encode(settings=ModelSettings(temperature=0.5, **thinking))
    with pytest.raises(UserError, match="top_k"):
        encode(settings=ModelSettings(top_k=5, **thinking))
    with pytest.raises(UserError, match=r"top_p between 0\.95 and 1"):
        encode(settings=ModelSettings(top_p=0.5, **thinking))
    assert encode(settings=ModelSettings(top_p=0.95, **thinking))["top_p"] == 0.95
    with pytest.raises(UserError, match="cannot force a tool call while thinking"):
        encode(tools=[TOOL], settings=ModelSettings(tool_choice="required", **thinking))
    # The agent's own demand for an output tool falls back to auto instead.
    final = ToolDefinition(name="final_result", kind="output")
    body = encode(output_tools=[final], allow_text_output=False, settings=ModelSettings(**thinking))
    assert body["tool_choice"] == {"type": "auto"}


def test_interleaved_thinking_beta_only_with_tools_and_a_budget() -> None:
    thinking = ModelSettings(thinking_budget_tokens=2048)
    assert codec.BETA_INTERLEAVED_THINKING in betas(tools=[TOOL], settings=thinking)
    assert codec.BETA_INTERLEAVED_THINKING not in betas(settings=thinking)
    assert codec.BETA_INTERLEAVED_THINKING not in betas(tools=[TOOL])
    assert codec.BETA_INTERLEAVED_THINKING not in betas(
        model="claude-3-7-sonnet-latest", tools=[TOOL], settings=thinking
    )


def test_thinking_is_replayed_only_to_anthropic() -> None:
    signed = ThinkingPart(content="hmm", signature="sig", provider_name="anthropic")
    redacted = ThinkingPart(
        content="", provider_name="anthropic", provider_details={"type": "redacted_thinking", "data": "xyz"}
    )
    legacy = ThinkingPart(content="", id="redacted_thinking", signature="old", provider_name="anthropic")
    unsigned = ThinkingPart(content="half", provider_name="anthropic")
    ours: list[Message] = [
        user("q"),
        anthropic_response(signed, redacted, legacy, unsigned, TextPart(content="a")),
        user("q2"),
    ]
    blocks = encode(ours)["messages"][1]["content"]
    assert blocks == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "xyz"},
        {"type": "redacted_thinking", "data": "old"},
        {"type": "text", "text": "a"},
    ]
    theirs = ModelResponse(
        parts=[ThinkingPart(content="secret", signature="s", provider_name="openai"), TextPart(content="a")],
        provider_name="openai",
    )
    blocks = encode([user("q"), theirs, user("q2")])["messages"][1]["content"]
    assert blocks == [{"type": "text", "text": "a"}]


# -- server tools ----------------------------------------------------------------------------------


def test_native_tools_use_the_family_versions_and_betas() -> None:
    tools = [
        NativeTool(kind="web_search", options={"max_uses": 3}),
        NativeTool(kind="web_fetch"),
        NativeTool(kind="code_execution"),
    ]
    body = encode(model="claude-sonnet-4-0", native_tools=tools)
    assert body["tools"] == [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        {"type": "web_fetch_20250910", "name": "web_fetch"},
        {"type": "code_execution_20250825", "name": "code_execution"},
    ]
    assert {codec.BETA_WEB_FETCH, codec.BETA_CODE_EXECUTION} <= betas(
        model="claude-sonnet-4-0", native_tools=tools
    )
    newer = encode(model="claude-sonnet-4-6", native_tools=tools)["tools"]
    assert [t["type"] for t in newer] == [
        "web_search_20260209",
        "web_fetch_20260209",
        "code_execution_20260120",
    ]
    assert betas(model="claude-sonnet-4-6", native_tools=tools) == frozenset()


def test_unknown_native_tool_options_are_refused() -> None:
    with pytest.raises(UserError, match="unknown option"):
        encode(native_tools=[NativeTool(kind="web_search", options={"colour": "blue"})])


def test_server_tool_blocks_are_replayed_to_anthropic_only() -> None:
    call, result = native_round(
        "code_execution",
        {"command": "ls"},
        {"type": "bash_code_execution_result", "stdout": "x"},
        tool_call_id="srv_1",
        provider_name="anthropic",
        call_details={"anthropic_tool_name": "bash_code_execution"},
    )
    history: list[Message] = [
        user("q"),
        anthropic_response(call, result, TextPart(content="done")),
        user("q2"),
    ]
    blocks = encode(history)["messages"][1]["content"]
    assert blocks == [
        {"type": "server_tool_use", "id": "srv_1", "name": "bash_code_execution", "input": {"command": "ls"}},
        {
            "type": "bash_code_execution_tool_result",
            "tool_use_id": "srv_1",
            "content": {"type": "bash_code_execution_result", "stdout": "x"},
        },
        {"type": "text", "text": "done"},
    ]
    foreign = ModelResponse(parts=[call, result, TextPart(content="done")], provider_name="openai")
    assert encode([user("q"), foreign, user("q2")])["messages"][1]["content"] == [
        {"type": "text", "text": "done"}
    ]


def test_pydantic_ai_style_native_parts_replay_with_their_wire_names() -> None:
    # PydanticAI keeps the result's wire type only in its content; tool search keeps its strategy.
    call, result = native_round(
        "code_execution",
        {"command": "view", "path": "/a"},
        {"type": "text_editor_code_execution_view_result", "content": "x"},
        tool_call_id="s1",
        provider_name="anthropic",
        call_details={"anthropic_tool_name": "text_editor_code_execution"},
    )
    search, search_result = native_round(
        "tool_search",
        {"pattern": "w.*"},
        {"type": "tool_search_tool_search_result"},
        tool_call_id="s2",
        provider_name="anthropic",
        call_details={"strategy": "regex"},
    )
    history: list[Message] = [user("q"), anthropic_response(call, result, search, search_result), user("q2")]
    blocks = encode(history)["messages"][1]["content"]
    assert [(b["type"], b.get("name")) for b in blocks] == [
        ("server_tool_use", "text_editor_code_execution"),
        ("text_editor_code_execution_tool_result", None),
        ("server_tool_use", "tool_search_tool_regex"),
        ("tool_search_tool_result", None),
    ]


def test_unpaired_server_calls_are_dropped_unless_only_tool_results_follow() -> None:
    search = NativeToolCallPart(
        tool_name="web_search", args={"query": "q"}, tool_call_id="srv", provider_name="anthropic"
    )
    fn = ToolCallPart(tool_name="get_weather", args={"city": "x"}, tool_call_id="fn")
    result = ModelRequest(parts=[ToolReturnPart(tool_name="get_weather", content="4", tool_call_id="fn")])
    in_flight = encode([user("q"), anthropic_response(search, fn), result], tools=[TOOL])["messages"]
    assert [b["type"] for b in in_flight[1]["content"]] == ["server_tool_use", "tool_use"]
    later = encode(
        [
            user("q"),
            anthropic_response(search, fn),
            result,
            anthropic_response(TextPart(content="ok")),
            user("more"),
        ],
        tools=[TOOL],
    )
    assert [b["type"] for b in later["messages"][1]["content"]] == ["tool_use"]
    alone = encode([user("q"), anthropic_response(search), user("more")])["messages"]
    assert [m["role"] for m in alone] == ["user"]


def test_compaction_is_replayed_with_its_beta() -> None:
    compaction = CompactionPart(
        content="summary", provider_name="anthropic", provider_details={"encrypted_content": "enc"}
    )
    history: list[Message] = [anthropic_response(compaction), user("go on")]
    body = encode(history)
    assert body["messages"][0]["content"] == [
        {"type": "compaction", "content": "summary", "encrypted_content": "enc"}
    ]
    assert body["context_management"] == {"edits": [{"type": "compact_20260112"}]}
    assert codec.BETA_COMPACTION in betas(history)


# -- the escape hatch ------------------------------------------------------------------------------


def test_extra_body_adds_fields_but_cannot_override_owned_keys() -> None:
    extra = ProviderExtraBody(provider="anthropic", body={"metadata": {"user_id": "u1"}})
    ignored = ProviderExtraBody(provider="openai", body={"user": "x"})
    body = encode(settings=ModelSettings(extra_body=[extra, ignored]))
    assert body["metadata"] == {"user_id": "u1"}
    assert "user" not in body
    for key in ("model", "max_tokens", "thinking", "tools", "system"):
        clash = ProviderExtraBody(provider="anthropic", body={key: 1})
        with pytest.raises(UserError, match="ferrule encodes itself"):
            encode(settings=ModelSettings(extra_body=[clash]))
