"""Conformance with real recorded traffic (the shared PydanticAI cassettes, read in place).

* Every interaction whose URI is a Chat Completions or Responses endpoint is decoded with ferrule's
  codec (buffered or streamed). Successful (2xx) recordings must decode; the few that must not are
  listed in `EXPECTED_DECODE_ERRORS` with the reason and the error class they must raise. Non-2xx
  recordings are asserted to map to the right error class through the provider's error path.
* A sample of decoded responses is checked field by field against the recorded bodies.
* Requests ferrule encodes for the same scenario (same model, messages, tools and output format)
  are compared structurally with the recorded requests.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from typing import cast
from urllib.parse import urlparse

import msgspec
import pytest

from ferrule.core.conformance import replay
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.http import classify_status
from ferrule.core.http import error_from_response
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai import responses_codec
from ferrule.providers.openai.compatible import DeepSeekProvider
from ferrule.providers.openai.compatible import GroqProvider
from ferrule.providers.openai.profiles import ChatDialect
from ferrule.providers.openai.profiles import deepseek_responses_profile
from ferrule.providers.openai.profiles import groq_profile
from ferrule.providers.openai.profiles import openai_chat_profile
from ferrule.providers.openai.profiles import openai_responses_profile
from tests.support.cassettes import OPENAI_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import Interaction
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.provtests import two_parts

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

DIRS = OPENAI_FOLDERS


def api_of(uri: str) -> str | None:
    """`"chat"` / `"responses"` for a generation endpoint, `None` for anything else.

    `/responses/input_tokens` (token counting) produces no model response and is not walked;
    `/responses/<id>` (retrieving a background response) and `/responses/compact` return response
    objects and are decoded like `/responses`.
    """
    path = urlparse(uri).path
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    head, _, tail = path.rpartition("/responses/")
    if head and tail and "/" not in tail and (tail.startswith("resp_") or tail == "compact"):
        return "responses"
    return None


ALL = [it for it in iter_interactions(*DIRS) if api_of(it.uri) is not None]
BY_ID = {it.id: it for it in ALL}

_BACKGROUND = "background mode: the recorded response is still queued / in progress, not a finished answer"

# Successful (2xx) recordings that must NOT decode, with why and the error they must raise.
EXPECTED_DECODE_ERRORS: dict[str, tuple[type[ProviderError], str]] = {
    # PydanticAI's test of an invalid response: a completion object without `choices`.
    "test_openai/test_invalid_response#0": (ResponseDecodeError, "recorded completion has no choices"),
    # A demo endpoint that answers text/plain instead of JSON.
    "test_openai/test_text_response#0": (ResponseDecodeError, "recorded body is plain text, not JSON"),
    # Groq reports a failed tool-call validation inside the stream (`error` chunk), after HTTP 200.
    "test_groq/test_tool_use_failed_error_streaming#0": (BadRequestError, "in-stream error chunk"),
    "test_groq/test_tool_use_failed_error_streaming_with_text#0": (BadRequestError, "in-stream error chunk"),
    # OpenRouter ends the stream with an `error` chunk ("Token limit reached", code 400).
    "test_openrouter/test_openrouter_stream_error#0": (BadRequestError, "in-stream error chunk"),
    # Background-mode requests whose recorded answers are not finished yet.
    "test_openai_responses/test_background_mode_reasoning_vcr#0": (ResponseDecodeError, _BACKGROUND),
    "test_openai_responses/test_background_mode_streaming_without_starting_after_vcr#0": (
        ResponseDecodeError,
        _BACKGROUND,
    ),
    "test_openai_responses/test_background_mode_streaming_without_starting_after_vcr#1": (
        ResponseDecodeError,
        _BACKGROUND,
    ),
    "test_openai_responses/test_background_mode_vcr#0": (ResponseDecodeError, _BACKGROUND),
    "test_openai_responses/test_background_mode_vcr#1": (ResponseDecodeError, _BACKGROUND),
    "test_openai_responses/test_background_mode_with_tool_vcr#0": (ResponseDecodeError, _BACKGROUND),
    "test_openai_responses/test_background_mode_with_tool_vcr#2": (ResponseDecodeError, _BACKGROUND),
    "test_openai_responses/test_background_mode_with_tool_vcr#3": (ResponseDecodeError, _BACKGROUND),
}


def decode(it: Interaction) -> ModelResponse:
    """The recorded response through its codec (a stream checked as `replay` checks streams)."""
    codec = chat_codec.ChatCodec() if api_of(it.uri) == "chat" else responses_codec.ResponsesCodec()
    return replay(codec, it)


def test_the_walk_covers_both_apis_buffered_and_streamed() -> None:
    kinds = {(api_of(it.uri), it.is_stream) for it in ALL if it.status < 300}
    assert kinds == {("chat", False), ("chat", True), ("responses", False), ("responses", True)}
    assert len(ALL) > 350
    for key in EXPECTED_DECODE_ERRORS:
        assert key in BY_ID, f"stale entry in EXPECTED_DECODE_ERRORS: {key}"


@pytest.mark.parametrize("it", ALL, ids=lambda it: it.id)
def test_every_recorded_interaction(it: Interaction) -> None:
    if it.status >= 300:
        # An error status goes through the provider's error path (never the codec).
        body = it.response_bytes
        error = error_from_response(it.status, it.response_headers, body, provider_name="openai")
        assert type(error).category == classify_status(it.status)
        assert error.status_code == it.status
        assert error.message  # the provider's own message, or the status phrase
        # The same body arriving with a 200 status is an in-band error of the same category.
        with pytest.raises(ProviderError) as raised:
            decode(it)
        assert raised.value.category == type(error).category
        return
    expected = EXPECTED_DECODE_ERRORS.get(it.id)
    if expected is not None:
        with pytest.raises(expected[0]):
            decode(it)
        return
    response = decode(it)
    assert isinstance(response, ModelResponse)
    assert response.parts or response.finish_reason == "length", "a successful decode must not be empty"
    assert response.finish_reason is not None
    # Round trip through ferrule's history JSON.
    again = msgspec.json.decode(msgspec.json.encode(response), type=ModelResponse)
    assert again.parts == response.parts


def _completed_event(it: Interaction) -> dict[str, Any] | None:
    for line in (it.response_text or "").splitlines():
        if line.startswith("data:") and '"response.completed"' in line:
            return json.loads(line[5:])["response"]
    return None


STREAMED_RESPONSES = [
    it
    for it in ALL
    if api_of(it.uri) == "responses"
    and it.is_stream
    and it.status < 300
    and it.id not in EXPECTED_DECODE_ERRORS
]


@pytest.mark.parametrize("it", STREAMED_RESPONSES, ids=lambda it: it.id)
def test_streamed_responses_match_their_final_event(it: Interaction) -> None:
    """The incremental decoder's answer equals the buffered decoding of the stream's own final object."""
    final = _completed_event(it)
    assert final is not None
    streamed = decode(it)
    buffered = responses_codec.decode_response(json.dumps(final).encode())
    if not final["output"]:
        pytest.skip("this provider sends an empty output list in response.completed")
    assert streamed.text == buffered.text
    assert [(c.tool_name, c.args, c.tool_call_id) for c in streamed.tool_calls] == [
        (c.tool_name, c.args, c.tool_call_id) for c in buffered.tool_calls
    ]
    # Items a stream never finished are completed at the end, so only the multiset of kinds must match.
    assert sorted(type(p).__name__ for p in streamed.parts) == sorted(
        type(p).__name__ for p in buffered.parts
    )
    assert streamed.usage == buffered.usage
    assert streamed.finish_reason == buffered.finish_reason
    mine = [p for p in streamed.parts if isinstance(p, ThinkingPart)]
    theirs = [p for p in buffered.parts if isinstance(p, ThinkingPart)]
    for ours, final_part in zip(mine, theirs, strict=True):
        assert ours.content == final_part.content
        # OpenAI encrypts reasoning afresh for each event, so only presence can be compared; some
        # proxies (OpenRouter) use temporary item IDs in stream events.
        assert bool(ours.signature) == bool(final_part.signature)
        if not (ours.id or "").startswith("rs_tmp"):
            assert ours.id == final_part.id


# --- a sample checked field by field ---------------------------------------------------------------


def _raw_usage(it: Interaction) -> dict[str, Any]:
    if it.response_json is not None:
        return it.response_json["usage"]
    usage: dict[str, Any] = {}
    for line in (it.response_text or "").splitlines():
        if line.startswith("data:") and "[DONE]" not in line:
            event = json.loads(line[5:])
            final: dict[str, Any] = event.get("response") or {}
            usage = event.get("usage") or final.get("usage") or usage
    return usage


def test_sample_openai_chat_streamed_tool_call() -> None:
    it = BY_ID["test_openai/test_run_stream_sync_streams_real_model#0"]
    response = decode(it)
    [call] = response.tool_calls
    assert (call.tool_name, call.args, call.tool_call_id) == (
        "get_capital",
        '{"country":"UK"}',
        "call_ZR5UUuTt3pf61kjwAJIYdVMj",
    )
    assert response.finish_reason == "tool_call"
    assert response.raw_finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (53, 15)
    assert _raw_usage(it)["prompt_tokens"] == 53
    assert response.model_name == "gpt-4o-mini-2024-07-18"
    assert response.provider_response_id == "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl"


def test_sample_openai_chat_image_answer() -> None:
    it = BY_ID["test_openai/test_image_as_binary_content_input#0"]
    response = decode(it)
    assert (
        response.text
        == it.response_json["choices"][0]["message"]["content"]
        == "The fruit in the image is a kiwi."
    )
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1119, 10)
    assert response.usage.cache_reported is True
    assert response.provider_details == {"finish_reason": "stop", "service_tier": "default"}


def test_sample_compatible_tool_call_without_id_gets_stable_id() -> None:
    it = BY_ID["test_openai/test_compatible_api_with_tool_calls_without_id#0"]
    assert it.response_json["choices"][0]["message"]["tool_calls"][0]["id"] == ""
    first, second = decode(it), decode(it)
    [call] = first.tool_calls
    assert call.tool_name == "get_current_time"
    assert call.args == "{}"
    assert call.tool_call_id.startswith("call_")
    assert call.tool_call_id == second.tool_calls[0].tool_call_id  # stable for the same response
    assert first.usage.cache_reported is False  # this server reports no cache counters


def test_sample_deepseek_streamed_reasoning_content() -> None:
    it = BY_ID["test_deepseek/test_deepseek_model_thinking_stream#0"]
    response = decode(it)
    thinking, text = two_parts(response, ThinkingPart, TextPart)
    assert thinking.id == "reasoning_content"
    assert thinking.content.startswith('Hmm, the user just said "Hello".')
    assert text.content == "Hello there! 😊 How can I help you today?"
    assert response.usage.output_tokens == 212
    assert response.usage.reasoning_tokens == 198
    assert _raw_usage(it)["completion_tokens_details"]["reasoning_tokens"] == 198


def test_sample_deepseek_buffered_reasoning_and_parallel_calls() -> None:
    it = BY_ID["test_deepseek/test_deepseek_deferred_capability_with_thinking#1"]
    response = decode(it)
    message = it.response_json["choices"][0]["message"]
    assert response.thinking == message["reasoning_content"]
    assert response.text == "Let me get your name and roll the die!"
    assert [(c.tool_name, c.tool_call_id) for c in response.tool_calls] == [
        ("get_player_name", "call_00_6edlnw3Z1MgeMfey687g8451"),
        ("roll_dice", "call_01_km02sac7sHxNDPATKLZy7705"),
    ]
    assert response.finish_reason == "tool_call"


def test_sample_zai_streamed_thinking() -> None:
    it = BY_ID["test_zai/test_zai_thinking_stream#0"]
    response = decode(it)
    assert response.text == "4"
    assert response.thinking is not None
    assert "Analyze the User's Request" in response.thinking
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.reasoning_tokens) == (
        13,
        564,
        561,
    )


def test_sample_groq_tool_call() -> None:
    it = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-groq]#0"]
    response = decode(it)
    [call] = response.tool_calls
    assert (call.tool_name, call.args, call.tool_call_id) == ("get_weather", '{"city":"Paris"}', "48f5r72yf")
    assert response.usage.input_tokens == 717
    assert response.usage.cache_reported is False
    assert response.provider_details == {"finish_reason": "tool_calls", "service_tier": "on_demand"}


def test_sample_openrouter_cost_and_upstream() -> None:
    it = BY_ID["test_openrouter/test_openrouter_web_search_annotations#0"]
    response = decode(it)
    assert response.text == "https://github.com/pydantic/pydantic-ai"
    assert str(response.usage.cost) == str(it.response_json["usage"]["cost"]) == "0.007637029"
    assert response.provider_details == {"finish_reason": "stop", "upstream_provider": "OpenAI"}


def test_sample_openrouter_streamed_encrypted_reasoning_details() -> None:
    it = BY_ID["test_openrouter/test_openrouter_stream_with_reasoning#0"]
    response = decode(it)
    thinking = response.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.content == ""
    details = (thinking.provider_details or {})["reasoning_details"]
    assert details[0]["type"] == "reasoning.encrypted"
    assert details[0]["data"].startswith("gAAAAABpCCSIBxdevbk")
    assert response.text is not None
    assert response.text.startswith("I\u2019m ChatGPT")
    assert str(response.usage.cost) == "0.00085"


def test_sample_openai_chat_prompt_cache_counters() -> None:
    first = decode(BY_ID["test_openai_prompt_cache/test_openai_chat_prompt_cache_e2e#0"])
    second = decode(BY_ID["test_openai_prompt_cache/test_openai_chat_prompt_cache_e2e#1"])
    assert (first.usage.cache_write_tokens, first.usage.cache_read_tokens) == (4012, 0)
    assert (second.usage.cache_write_tokens, second.usage.cache_read_tokens) == (0, 4012)
    assert second.usage.input_tokens == 4020


def test_sample_responses_reasoning_summary_and_encrypted_content() -> None:
    it = BY_ID["test_openai/test_openai_model_thinking_part#0"]
    response = decode(it)
    thinking, text = two_parts(response, ThinkingPart, TextPart)
    raw = it.response_json["output"][0]
    assert thinking.id == raw["id"]
    assert thinking.signature == raw["encrypted_content"]
    assert thinking.content == "\n\n".join(s["text"] for s in raw["summary"])
    assert text.id == it.response_json["output"][1]["id"]
    assert (response.usage.output_tokens, response.usage.reasoning_tokens) == (1915, 1600)
    assert response.finish_reason == "stop"


def test_sample_responses_function_call_ids() -> None:
    it = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[tools_plus_output-openai_responses]#0"]
    response = decode(it)
    _, call = two_parts(response, ThinkingPart, ToolCallPart)
    assert (call.tool_name, call.args, call.tool_call_id) == (
        "get_weather",
        '{"city":"Paris"}',
        "call_CV6BaAADlqML8HxE2Y7aSYVR",
    )
    assert call.id == it.response_json["output"][1]["id"]
    assert response.finish_reason == "tool_call"
    assert response.raw_finish_reason == "completed"


def test_sample_responses_streamed_web_search() -> None:
    it = BY_ID["test_openai_responses/test_openai_include_raw_annotations_streaming#0"]
    response = decode(it)
    kinds = [type(p) for p in response.parts]
    assert kinds == [
        NativeToolCallPart,
        NativeToolReturnPart,
        NativeToolCallPart,
        NativeToolReturnPart,
        TextPart,
    ]
    call = response.parts[0]
    assert isinstance(call, NativeToolCallPart)
    assert call.tool_name == "web_search"
    assert isinstance(call.args, dict)
    assert call.args["type"] == "search"
    text = response.parts[-1]
    assert isinstance(text, TextPart)
    assert text.citations
    assert text.citations[0]["type"] == "url_citation"
    assert (response.usage.input_tokens, response.usage.reasoning_tokens) == (12243, 100)


def test_sample_responses_cached_tokens() -> None:
    it = BY_ID["test_openai_responses/test_image_as_binary_content_input#0"]
    response = decode(it)
    assert response.text == "The fruit in the image is a kiwi."
    assert (
        response.usage.cache_read_tokens
        == it.response_json["usage"]["input_tokens_details"]["cached_tokens"]
        == 1024
    )


def test_sample_responses_generated_image() -> None:
    it = BY_ID["test_openai_responses/test_openai_responses_image_generation_jpeg#0"]
    response = decode(it)
    files = [p for p in response.parts if isinstance(p, FilePart)]
    assert len(files) == 1
    image = files[0].content
    assert image.media_type == "image/jpeg"
    assert image.data[:3] == b"\xff\xd8\xff"  # a JPEG


def test_sample_deepseek_responses_streamed_reasoning_text() -> None:
    it = BY_ID["test_deepseek_responses/test_deepseek_responses[function_tool_stream]#0"]
    response = decode(it)
    thinking, call = two_parts(response, ThinkingPart, ToolCallPart)
    assert thinking.content == "The user asks about temperature in Tokyo. I'll call the tool."
    assert call.args == '{"city": "Tokyo"}'
    assert response.usage.cache_read_tokens == 256


# --- encoded requests compared with recorded ones ----------------------------------------------------


def normalize(body: Any, top: bool = True) -> Any:
    """A request body without what differs by design: nulls, `stream: false`, `n: 1`, ferrule's `store`."""
    if isinstance(body, dict):
        out: dict[str, Any] = {}
        for key, value in cast("dict[str, Any]", body).items():
            if value is None:
                continue
            if top and (
                (key == "stream" and value is False) or (key == "n" and value == 1) or key == "store"
            ):
                continue
            out[key] = normalize(value, top=False)
        return out
    if isinstance(body, list):
        return [normalize(v, top=False) for v in cast("list[Any]", body)]
    return body


def recorded_tools(it: Interaction) -> list[ToolDefinition]:
    tools: list[ToolDefinition] = []
    for tool in it.request_json.get("tools", []):
        spec = tool.get("function", tool)
        tools.append(
            ToolDefinition(
                name=spec["name"],
                description=spec.get("description"),
                parameters_json_schema=spec["parameters"],
                # The application's choice in the recorded scenario: strict where the recording is.
                strict=bool(spec.get("strict")),
            )
        )
    return tools


def tool_round(prompt: str, answer: ModelResponse, result: str) -> list[Message]:
    """The history of one tool round: `prompt`, the recorded `answer` (one tool call), `result` for that call."""
    [call] = answer.tool_calls
    returned = ToolReturnPart(tool_name=call.tool_name, content=result, tool_call_id=call.tool_call_id)
    return [ModelRequest.user_text_prompt(prompt), answer, ModelRequest(parts=[returned])]


def chat_body(call: ModelCall, model: str, dialect: ChatDialect, provider: str = "openai") -> Any:
    return normalize(
        json.loads(chat_codec.encode_request(call, model_name=model, dialect=dialect, provider_name=provider))
    )


def test_request_instructions_chat() -> None:
    it = BY_ID["test_openai/test_openai_instructions#0"]
    call = ModelCall(
        messages=[ModelRequest(parts=[UserPromptPart(content="What is the capital of France?")])],
        instructions="You are a helpful assistant.",
    )
    assert chat_body(call, "gpt-4o", openai_chat_profile("gpt-4o").dialect) == normalize(it.request_json)


def test_request_tool_choice_auto_chat() -> None:
    it = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-openai]#0"]
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("What's the weather in Paris?")], tools=recorded_tools(it)
    )
    assert chat_body(call, "gpt-5-mini", openai_chat_profile("gpt-5-mini").dialect) == normalize(
        it.request_json
    )


def test_request_tool_loop_chat_round_trip() -> None:
    """Decode the recorded answer, add the tool result, encode: the next recorded request."""
    first = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-openai]#0"]
    second = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-openai]#1"]
    answer = chat_codec.decode_response(first.response_bytes)
    messages = tool_round("What's the weather in Paris?", answer, "Sunny, 22C in Paris")
    request = ModelCall(messages=messages, tools=recorded_tools(second))
    assert chat_body(request, "gpt-5-mini", openai_chat_profile("gpt-5-mini").dialect) == normalize(
        second.request_json
    )


@pytest.mark.parametrize(
    ("case", "choice", "allow_text"),
    [
        ("required-openai", "required", True),
        ("none-openai", "none", True),
        ("list_single-openai", ["get_weather"], True),
    ],
)
def test_request_tool_choice_variants_chat(case: str, choice: Any, allow_text: bool) -> None:
    it = BY_ID[f"test_tool_choice_matrix/test_tool_choice_matrix[{case}]#0"]
    prompt = it.request_json["messages"][0]["content"]
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt(prompt)],
        tools=recorded_tools(it),
        settings=ModelSettings(tool_choice=choice),
        allow_text_output=allow_text,
    )
    assert chat_body(call, it.request_json["model"], openai_chat_profile("gpt-5-mini").dialect) == normalize(
        it.request_json
    )


def test_request_groq_dialect_has_no_strict_flag() -> None:
    it = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-groq]#0"]
    model = it.request_json["model"]
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("What's the weather in Paris?")], tools=recorded_tools(it)
    )
    body = chat_body(call, model, groq_profile(model).dialect, provider="groq")
    assert body == normalize(it.request_json)
    assert GroqProvider(api_key="gsk-test").chat_profile(model).profile.supports_tools


def test_request_native_json_schema_output_chat() -> None:
    it = BY_ID["test_openai/test_openai_native_output#0"]
    spec = it.request_json["response_format"]["json_schema"]
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("What is the largest city in the user country?")],
        tools=recorded_tools(it),
        output=JsonSchemaFormat(name=spec["name"], schema=spec["schema"], strict=False),
    )
    assert chat_body(call, "gpt-4o", openai_chat_profile("gpt-4o").dialect) == normalize(it.request_json)


def _from_data_uri(uri: str) -> BinaryContent:
    head, _, data = uri.partition(",")
    return BinaryContent(data=base64.b64decode(data), media_type=head.removeprefix("data:").split(";")[0])


def _image(block: dict[str, Any]) -> BinaryContent:
    return _from_data_uri(block["image_url"]["url"])


def _pdf(block: dict[str, Any]) -> BinaryContent:
    return _from_data_uri(block["file"]["file_data"])


def _text_file(block: dict[str, Any]) -> BinaryContent:
    # The codec wraps an inlined text file in a header and a footer line; the file is what is between.
    text: str = block["text"].split("\n", 1)[1].rsplit("\n", 1)[0]
    return BinaryContent(data=text.encode(), media_type="text/plain")


def _audio(block: dict[str, Any]) -> BinaryContent:
    return BinaryContent(data=base64.b64decode(block["input_audio"]["data"]), media_type="audio/mpeg")


def _user_call(*content: str | BinaryContent) -> ModelCall:
    """A call whose only message is one user prompt of `content`."""
    return ModelCall(messages=[ModelRequest(parts=[UserPromptPart(content=list(content))])])


@pytest.mark.parametrize(
    ("name", "model", "item"),
    [
        ("image_as_binary_content_input", "gpt-4o", _image),
        ("document_as_binary_content_input", "gpt-4o", _pdf),
        ("text_document_as_binary_content_input", "gpt-4o", _text_file),
        ("audio_as_binary_content_input", "gpt-4o-audio-preview", _audio),
    ],
)
def test_request_binary_content_chat(
    name: str, model: str, item: Callable[[dict[str, Any]], BinaryContent]
) -> None:
    """Images, PDFs and audio are sent as data, a text file is inlined as text, as recorded."""
    it = BY_ID[f"test_openai/test_{name}#0"]
    text, block = it.request_json["messages"][0]["content"]
    binary = item(block)
    profile = openai_chat_profile(model)
    if binary.is_audio:
        assert "audio" in profile.profile.content_kinds
    assert chat_body(_user_call(text["text"], binary), model, profile.dialect) == normalize(it.request_json)


def test_request_image_from_tool_result_chat() -> None:
    first = BY_ID["test_openai/test_image_url_tool_response#0"]
    second = BY_ID["test_openai/test_image_url_tool_response#1"]
    answer = chat_codec.decode_response(first.response_bytes)
    [call] = answer.tool_calls
    url = second.request_json["messages"][3]["content"][1]["image_url"]["url"]
    messages = [
        ModelRequest(
            parts=[UserPromptPart(content=["What food is in the image you can get from the get_image tool?"])]
        ),
        answer,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="get_image", content=ImageUrl(url=url), tool_call_id=call.tool_call_id
                )
            ]
        ),
    ]
    request = ModelCall(messages=messages, tools=recorded_tools(second))
    assert chat_body(request, "gpt-4o", openai_chat_profile("gpt-4o").dialect) == normalize(
        second.request_json
    )


def test_request_history_with_system_prompts_and_id_less_calls_chat() -> None:
    it = BY_ID["test_openai/test_compatible_api_with_tool_calls_without_id#1"]
    recorded = it.request_json["messages"]
    call_id = recorded[1]["tool_calls"][0]["id"]
    messages = [
        ModelRequest.user_text_prompt("What is the current time?"),
        ModelResponse(parts=[ToolCallPart(tool_name="get_current_time", args="{}", tool_call_id=call_id)]),
        ModelRequest(
            parts=[ToolReturnPart(tool_name="get_current_time", content="Noon", tool_call_id=call_id)]
        ),
    ]
    request = ModelCall(messages=messages, tools=recorded_tools(it))
    dialect = ChatDialect(strict_tools=False)  # a generic compatible endpoint
    assert chat_body(request, it.request_json["model"], dialect) == normalize(it.request_json)


def responses_body(call: ModelCall, model: str, provider: str = "openai") -> Any:
    resolved = (
        deepseek_responses_profile(model) if provider == "deepseek" else openai_responses_profile(model)
    )
    return normalize(
        json.loads(
            responses_codec.encode_request(
                call,
                model_name=model,
                dialect=resolved.dialect,
                profile=resolved.profile,
                provider_name=provider,
            )
        )
    )


def test_request_tools_responses() -> None:
    it = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[auto-openai_responses]#0"]
    call = ModelCall(
        messages=[ModelRequest.user_text_prompt("What's the weather in Paris?")], tools=recorded_tools(it)
    )
    assert responses_body(call, "gpt-5-mini") == normalize(it.request_json)


def test_request_reasoning_replay_round_trip_responses() -> None:
    """Encrypted reasoning and the function call's item ID go back to the same model, unchanged."""
    first = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[tools_plus_output-openai_responses]#0"]
    second = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[tools_plus_output-openai_responses]#1"]
    answer = responses_codec.decode_response(first.response_bytes, model_name="gpt-5-mini")
    answer.model_name = "gpt-5-mini"  # the request names the alias, the response the snapshot
    tools = recorded_tools(second)
    request = ModelCall(
        messages=tool_round("Get weather for Paris and summarize", answer, "Sunny, 22C in Paris"),
        tools=tools[:2],
        output_tools=tools[2:],
        settings=ModelSettings(tool_choice=["final_result", "get_weather"]),
    )
    assert responses_body(request, "gpt-5-mini") == normalize(second.request_json)


def test_reasoning_is_not_replayed_to_another_model() -> None:
    first = BY_ID["test_tool_choice_matrix/test_tool_choice_matrix[tools_plus_output-openai_responses]#0"]
    answer = responses_codec.decode_response(first.response_bytes)
    request = ModelCall(
        messages=[ModelRequest.user_text_prompt("hi"), answer, ModelRequest.user_text_prompt("again")]
    )
    body = responses_body(request, "gpt-5")  # a different model than the one that reasoned
    kinds = [item.get("type") for item in body["input"]]
    assert "reasoning" not in kinds
    assert all("id" not in item for item in body["input"])


def test_request_deepseek_responses_round_trip() -> None:
    first = BY_ID["test_deepseek_responses/test_deepseek_responses[function_tool]#0"]
    second = BY_ID["test_deepseek_responses/test_deepseek_responses[function_tool]#1"]
    answer = responses_codec.decode_response(first.response_bytes, provider_name="deepseek")
    messages = tool_round("What is the temperature in Tokyo?", answer, "21.0")
    request = ModelCall(messages=messages, tools=recorded_tools(second))
    assert responses_body(request, "deepseek-v4-flash", provider="deepseek") == normalize(second.request_json)
    assert (
        DeepSeekProvider(api_key="sk-test")
        .responses_profile("deepseek-v4-flash")
        .dialect.replay_reasoning_text
    )


def test_request_deepseek_responses_text_history() -> None:
    first = BY_ID["test_deepseek_responses/test_deepseek_responses[text_multi_turn]#0"]
    second = BY_ID["test_deepseek_responses/test_deepseek_responses[text_multi_turn]#1"]
    answer = responses_codec.decode_response(first.response_bytes, provider_name="deepseek")
    messages = [
        ModelRequest.user_text_prompt("Say exactly: hello"),
        answer,
        ModelRequest.user_text_prompt("Now say exactly: goodbye"),
    ]
    assert responses_body(
        ModelCall(messages=messages), "deepseek-v4-flash", provider="deepseek"
    ) == normalize(second.request_json)


def test_request_system_prompt_parts_chat() -> None:
    it = BY_ID["test_deepseek/test_deepseek_deferred_capability_with_thinking#0"]
    recorded = it.request_json["messages"]
    call = ModelCall(
        messages=[
            ModelRequest(
                parts=[
                    SystemPromptPart(content=recorded[0]["content"]),
                    SystemPromptPart(content=recorded[1]["content"]),
                    UserPromptPart(content=recorded[2]["content"]),
                ]
            )
        ],
    )
    body = chat_body(call, "deepseek-reasoner", ChatDialect())
    assert body["messages"] == recorded


def test_non_2xx_recordings_map_to_their_classes() -> None:
    statuses = {it.id: it.status for it in ALL if it.status >= 300}
    assert statuses  # the corpus has 400, 404 and 429 recordings
    it = BY_ID["test_openrouter/test_openrouter_errors_raised#0"]
    error = error_from_response(it.status, it.response_headers, it.response_bytes, provider_name="openrouter")
    assert isinstance(error, RateLimitError)
    assert error.retryable
