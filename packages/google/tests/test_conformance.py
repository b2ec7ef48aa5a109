"""Conformance with real Gemini traffic recorded by PydanticAI (read in place from ../shared/cassettes).

1. Every interaction of `models/cassettes/test_google/` and `models/google/` is classified: each
   GenerateContent call (buffered and streamed) is decoded and checked against invariants that tie
   the neutral response to the raw body; `countTokens` is decoded by its own function; the rest is
   in `SKIPPED` with the reason. Zero failures; the three recorded content-filter outcomes are
   asserted to raise `ContentFilterError`.
2. A sample of responses is asserted field by field with inline expected values.
3. Requests that ferrule encodes for the same scenarios are compared structurally with the
   recorded requests (after documented normalization of equivalent spellings).
"""

from __future__ import annotations

import base64
import collections
import json
import re
from typing import Any
from typing import cast

import pytest

from ferrule.core.conformance import replay
from ferrule.core.errors import ContentFilterError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import FilePart
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.google import decode_count_tokens
from ferrule.providers.google.codec import EncodeOptions
from ferrule.providers.google.codec import GoogleCodec
from ferrule.providers.google.codec import build_request
from tests.support.cassettes import GOOGLE_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import Interaction
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.provtests import native_round
from tests.support.provtests import two_parts

FOLDERS = GOOGLE_FOLDERS
INTERACTIONS: list[Interaction] = list(iter_interactions(*FOLDERS))
BY_ID = {it.id: it for it in INTERACTIONS}

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

# Interactions that are not GenerateContent and not decoded here, with the reason (matched on the URI).
SKIPPED: tuple[tuple[str, str], ...] = (
    (
        "https://oauth2.googleapis.com/token",
        "OAuth refresh made by the recording SDK; ferrule takes a ready access token",
    ),
    (
        "/fileSearchStores",
        "File Search store management is not wrapped (ferrule only sends the fileSearch tool)",
    ),
    (
        "/cachedContents",
        "explicit context-cache CRUD is not wrapped; a cache is referenced via extra_body cachedContent",
    ),
    ("https://api.openai.com/", "OpenAI traffic of a cross-provider history test; decoded by ferrule-openai"),
    (
        "https://api.anthropic.com/",
        "Anthropic traffic of a cross-provider history test; decoded by ferrule-anthropic",
    ),
)
# Media fetched by the recorded test itself (GET of a public file), not a provider API call.
MEDIA_DOWNLOAD_REASON = "a media file the recorded test downloaded itself, not a provider API call"

# The recorded content-filter outcomes: each must raise this error class.
EXPECTED_ERRORS: dict[str, type[Exception]] = {
    "test_google/test_google_model_safety_settings#0": ContentFilterError,  # candidate finishReason SAFETY, no content
    "test_google/test_google_model_armor_response_template_real_block#0": ContentFilterError,  # MODEL_ARMOR, no content
    "test_google/test_google_model_armor_prompt_template_text_gets_blocked#1": ContentFilterError,  # promptFeedback.blockReason
}


def _kind(it: Interaction) -> str:
    if re.search(r":(stream)?[gG]enerateContent\b", it.uri):
        return "generate"
    if it.uri.split("?")[0].endswith(":countTokens"):
        return "count"
    return "other"


def _skip_reason(it: Interaction) -> str | None:
    for marker, reason in SKIPPED:
        if marker in it.uri:
            return reason
    if it.method.upper() == "GET" and "googleapis.com" not in it.uri:
        return MEDIA_DOWNLOAD_REASON
    return None


def _chunks(it: Interaction) -> list[dict[str, Any]]:
    if not it.is_stream:
        return [it.response_json]
    assert it.response_text is not None
    return [json.loads(line[5:]) for line in it.response_text.splitlines() if line.startswith("data:")]


def _decode(it: Interaction, model_name: str | None = None) -> ModelResponse:
    """The recorded response through the codec; a stream is checked against the stream invariants and
    fed again in awkward pieces (calls without an ID get a fresh one each time)."""
    provider = "google-vertex" if "aiplatform" in it.uri else "google-gla"
    codec = GoogleCodec(model_name=model_name, provider_name=provider)
    return replay(codec, it, ignore=("timestamp", "tool_call_id"))


def _model_of(it: Interaction) -> str:
    return it.uri.split("/models/")[1].split(":")[0]


def test_the_recordings_are_there() -> None:
    kinds = collections.Counter(_kind(it) for it in INTERACTIONS)
    assert kinds["generate"] >= 150
    assert sum(it.is_stream for it in INTERACTIONS if _kind(it) == "generate") >= 15


@pytest.mark.parametrize("it", INTERACTIONS, ids=[it.id for it in INTERACTIONS])
def test_every_interaction(it: Interaction) -> None:
    kind = _kind(it)
    if kind == "count":
        assert decode_count_tokens(it.response_bytes) == it.response_json["totalTokens"]
        return
    if kind == "other":
        reason = _skip_reason(it)
        assert reason is not None, f"unclassified interaction {it.method} {it.uri}"
        pytest.skip(reason)
    assert it.status == 200
    expected = EXPECTED_ERRORS.get(it.id)
    if expected is not None:
        with pytest.raises(expected):
            _decode(it)
        return
    response = _decode(it, _model_of(it))
    chunks = _chunks(it)
    candidates = [c["candidates"][0] for c in chunks if c.get("candidates")]
    # Finish reason: normalized, with the last raw value kept.
    raw_finish = [c["finishReason"] for c in candidates if "finishReason" in c][-1]
    assert response.raw_finish_reason == raw_finish
    assert response.finish_reason is not None
    # Usage: input + output equals Gemini's own total.
    usage = [c["usageMetadata"] for c in chunks if "usageMetadata" in c][-1]
    assert response.usage.total_tokens == usage["totalTokenCount"]
    assert response.usage.reasoning_tokens == usage.get("thoughtsTokenCount", 0)
    raw_parts: list[dict[str, Any]] = []
    for c in candidates:
        content: dict[str, Any] = c.get("content") or {}
        raw_parts.extend(content.get("parts", []))
    # Every thought signature is kept exactly once, unchanged.
    kept = [
        (p.provider_details or {}).get("thought_signature")
        for p in response.parts
        if (p.provider_details or {}).get("thought_signature")
    ]
    assert collections.Counter(kept) == collections.Counter(
        p["thoughtSignature"] for p in raw_parts if "thoughtSignature" in p
    )
    # Text and thoughts are complete and in order; calls keep their names and arguments.
    assert (response.text or "") == "".join(
        p["text"] for p in raw_parts if "text" in p and not p.get("thought")
    )
    assert (response.thinking or "") == "".join(
        p["text"] for p in raw_parts if "text" in p and p.get("thought")
    )
    calls = [
        (p["functionCall"]["name"], p["functionCall"].get("args", {}))
        for p in raw_parts
        if "functionCall" in p
    ]
    assert [(c.tool_name, c.args) for c in response.tool_calls] == calls
    assert all(c.tool_call_id for c in response.tool_calls)
    files = [base64.b64decode(p["inlineData"]["data"]) for p in raw_parts if "inlineData" in p]
    assert [p.content.data for p in response.parts if isinstance(p, FilePart)] == files


# -- field-by-field sample --------------------------------------------------------------------


def _get(id_: str) -> Interaction:
    if id_ not in BY_ID:
        pytest.skip(f"recording {id_} not found")
    return BY_ID[id_]


def test_sample_plain_text() -> None:
    r = _decode(_get("test_google/test_google_model#0"), "gemini-2.5-flash")
    assert r.parts == [TextPart(content="Hello! How can I help you today?")]
    assert (r.model_name, r.provider_name, r.provider_response_id) == (
        "gemini-2.5-flash",
        "google-gla",
        "bzlXaa_EE_aHqtsPi_zw8Ao",
    )
    assert (r.finish_reason, r.provider_details) == (
        "stop",
        {"finish_reason": "STOP", "model_version": "gemini-2.5-flash"},
    )
    u = r.usage
    assert (u.input_tokens, u.output_tokens, u.output_reasoning_tokens) == (9, 43, 34)
    assert u.details == {"reasoning_tokens": 34, "text_prompt_tokens": 9}


def test_sample_streamed_text() -> None:
    r = _decode(_get("test_google/test_google_model_stream#0"), "gemini-2.0-flash-exp")
    assert r.parts == [TextPart(content="The capital of France is Paris.\n")]
    assert (r.provider_response_id, r.finish_reason) == ("w1peaMz6INOvnvgPgYfPiQY", "stop")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (13, 8)
    assert r.usage.details == {"text_prompt_tokens": 13, "text_candidates_tokens": 8}


def test_sample_streamed_function_call() -> None:
    r = _decode(_get("test_google/test_google_model_iter_stream#0"), "gemini-2.0-flash")
    (call,) = r.parts
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args, call.id, call.provider_details) == (
        "get_capital",
        {"country": "France"},
        None,
        None,
    )
    assert call.tool_call_id.startswith("call_")
    assert (r.finish_reason, r.raw_finish_reason, r.usage.input_tokens, r.usage.output_tokens) == (
        "tool_call",
        "STOP",
        52,
        5,
    )


def test_sample_thinking_then_signed_text() -> None:
    r = _decode(_get("test_google/test_google_model_thinking_part#0"), "gemini-3-pro-preview")
    thinking, text = two_parts(r, ThinkingPart, TextPart)
    assert thinking.content.startswith("**A Safe Street-Crossing Guide: My Thought Process**")
    assert len(thinking.content) == 2238
    assert (thinking.signature, thinking.provider_details) == (None, None)
    assert text.content.startswith("Crossing the street safely is a fundamental skill")
    assert len(text.content) == 3017
    assert text.provider_details is not None
    assert text.provider_details["thought_signature"].startswith("EqoeCqceAdHtim+cXhv3")
    assert len(text.provider_details["thought_signature"]) == 5180
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.reasoning_tokens) == (29, 1737, 1001)


def test_sample_streamed_thinking() -> None:
    r = _decode(_get("test_google/test_google_model_thinking_part_iter#0"), "gemini-2.5-pro")
    thinking, text = two_parts(r, ThinkingPart, TextPart)
    assert thinking.content.startswith("**Clarifying User Goals**")
    assert (len(thinking.content), len(text.content)) == (1575, 1938)
    assert text.provider_details is not None
    assert text.provider_details["thought_signature"].startswith("CiIB0e2Kb6Syj1a961Ef")
    assert (r.usage.output_tokens, r.usage.reasoning_tokens) == (1256, 787)


def test_sample_streamed_signed_call() -> None:
    r = _decode(
        _get("test_google/test_google_streaming_tool_call_thought_signature#0"), "gemini-3-pro-preview"
    )
    (call,) = r.parts
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args) == ("get_country", {})
    assert call.provider_details is not None
    assert call.provider_details["thought_signature"].startswith("EpwICpkIAXLI2nxlU6gs")
    assert (r.provider_response_id, r.finish_reason, r.usage.output_tokens) == (
        "QUVVadTSNJ6_qtsPvN7J8Q0",
        "tool_call",
        212,
    )


def test_sample_code_execution() -> None:
    r = _decode(_get("test_code_execution/test_code_execution#0"), "gemini-3-flash-preview")
    code1, result1, code2, result2, text = r.parts
    assert isinstance(code1, NativeToolCallPart)
    assert isinstance(result1, NativeToolReturnPart)
    assert (code1.tool_name, code1.tool_call_id, code1.id) == ("code_execution", "h0mwtrhs", "h0mwtrhs")
    assert isinstance(code1.args, dict)
    assert code1.args["language"] == "PYTHON"
    assert code1.args["code"].startswith("from datetime import datetime\nimport pytz")
    assert (result1.tool_call_id, result1.outcome) == ("h0mwtrhs", "success")
    assert result1.content == {
        "outcome": "OUTCOME_OK",
        "output": "Current day in Utrecht: Tuesday, May 05, 2026\n",
    }
    assert isinstance(code2, NativeToolCallPart)
    assert code2.args == {
        "code": "import datetime\nprint(datetime.datetime.now())\n",
        "language": "PYTHON",
    }
    assert isinstance(result2, NativeToolReturnPart)
    assert result2.content == {
        "outcome": "OUTCOME_OK",
        "output": "2026-05-05 20:40:33.367937\n",
    }
    assert isinstance(text, TextPart)
    assert text.content.startswith("Today is **Thursday, May 23, 2024**")
    assert (r.usage.input_tokens, r.usage.output_tokens) == (1989, 943)
    assert r.usage.details["tool_use_prompt_tokens"] == 1732


def test_sample_grounded_search() -> None:
    r = _decode(_get("test_google/test_google_model_web_search_tool#0"), "gemini-2.5-pro")
    text, search, results = r.parts
    assert isinstance(text, TextPart)
    assert text.content.startswith("## Weather in San Francisco is Mild and Partly Cloudy")
    assert isinstance(search, NativeToolCallPart)
    assert search.args == {"queries": ["weather in San Francisco today"]}
    assert isinstance(results, NativeToolReturnPart)
    assert len(results.content) == 3
    assert results.content[1]["web"]["title"] == "weather.gov"
    assert r.provider_details is not None
    assert r.provider_details["grounding_metadata"]["webSearchQueries"] == ["weather in San Francisco today"]
    assert (r.usage.input_tokens, r.usage.output_tokens) == (136, 414)


def test_sample_server_side_search_parts() -> None:
    r = _decode(
        _get("test_structured_output/test_native_output_with_builtin_tools#0"), "gemini-3-flash-preview"
    )
    call, found, text = r.parts
    assert isinstance(call, NativeToolCallPart)
    assert isinstance(found, NativeToolReturnPart)
    assert (call.tool_name, call.args, call.tool_call_id) == (
        "web_search",
        {"queries": ["largest city in Mexico"]},
        "0yzlft9k",
    )
    assert call.provider_details is not None
    assert call.provider_details["tool_type"] == "GOOGLE_SEARCH_WEB"
    assert found.tool_call_id == "0yzlft9k"
    assert found.content["search_suggestions"].startswith("<style>")
    assert isinstance(text, TextPart)
    assert text.content == '{\n  "city": "Mexico City",\n  "country": "Mexico"\n} '


def test_sample_streamed_file_search() -> None:
    r = _decode(
        _get("test_google/test_google_model_file_search_grounding_gemini_3[True]#3"), "gemini-3-flash-preview"
    )
    call, found, text = r.parts
    assert isinstance(call, NativeToolCallPart)
    assert (call.tool_name, call.args, call.tool_call_id) == (
        "file_search",
        {},
        "tju3qkc9",
    )
    assert isinstance(found, NativeToolReturnPart)
    assert found.tool_call_id == "tju3qkc9"
    assert isinstance(text, TextPart)
    assert text.content.startswith("The capital of France is **Paris**.")
    assert r.provider_details is not None
    assert r.provider_details["service_tier"] == "standard"
    assert (r.usage.input_tokens, r.usage.output_tokens) == (1198, 569)


def test_sample_truncated_thinking_model() -> None:
    r = _decode(
        _get("test_google/test_google_model_max_tokens_thinking_model_empty_response#0"), "gemini-2.5-pro"
    )
    assert (r.parts, r.finish_reason, r.raw_finish_reason) == ([], "length", "MAX_TOKENS")
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.reasoning_tokens) == (15, 2, 2)


def test_sample_generated_image() -> None:
    r = _decode(_get("test_google/test_google_image_generation_with_text#0"), "gemini-3-pro-image-preview")
    text, image = two_parts(r, TextPart, FilePart)
    assert text.content.startswith("A little axolotl named Archie")
    assert image.content.media_type == "image/jpeg"
    assert image.content.data[:4] == b"\xff\xd8\xff\xe0"
    assert image.provider_details is not None
    assert "thought_signature" in image.provider_details
    assert r.usage.details["image_candidates_tokens"] == 1120


def test_sample_vertex_flex_and_logprobs() -> None:
    flex = _decode(_get("test_google/test_google_vertex_service_tier_flex#0"), "gemini-3-flash-preview")
    assert flex.provider_name == "google-vertex"
    assert flex.text == "OK"
    assert flex.provider_details is not None
    assert flex.provider_details["traffic_type"] == "ON_DEMAND_FLEX"
    assert flex.timestamp.isoformat() == "2026-03-21T18:11:27.235482+00:00"
    logprobs = _decode(_get("test_google/test_google_vertex_logprobs#0"), "gemini-2.5-flash")
    assert logprobs.text == "2 + 2 = 4"
    assert logprobs.provider_details is not None
    assert logprobs.provider_details["avg_logprobs"] == -1.0858495576041085
    assert logprobs.provider_details["logprobs_result"]["chosenCandidates"][0] == {
        "logProbability": -0.01972555,
        "token": "2",
        "tokenId": 236778,
    }


def test_sample_cached_content() -> None:
    r = _decode(_get("test_cache/test_google_model_cached_content#1"), "gemini-2.5-flash")
    assert r.text == "Paris."
    u = r.usage
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (3520, 3512, 44)
    assert u.details["text_cache_tokens"] == 3512


def test_sample_url_context_stream() -> None:
    r = _decode(_get("test_google/test_google_model_web_fetch_tool_stream#0"), "gemini-2.5-flash")
    text, fetch, fetched = r.parts
    assert isinstance(text, TextPart)
    assert text.content == "Pydantic AI Gateway is now available!"
    assert isinstance(fetch, NativeToolCallPart)
    assert (fetch.tool_name, fetch.args) == (
        "url_context",
        {"urls": ["https://ai.pydantic.dev"]},
    )
    assert isinstance(fetched, NativeToolReturnPart)
    assert fetched.content == [
        {"retrievedUrl": "https://ai.pydantic.dev", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}
    ]
    assert r.usage.details["tool_use_prompt_tokens"] == 4610


def test_sample_content_filters() -> None:
    with pytest.raises(ContentFilterError, match="finishReason SAFETY") as safety:
        _decode(_get("test_google/test_google_model_safety_settings#0"))
    assert safety.value.code == "SAFETY"
    assert safety.value.details is not None
    assert safety.value.details["safety_ratings"][0]["blocked"] is True
    with pytest.raises(ContentFilterError, match="Prompt Injection and Jailbreak") as armor:
        _decode(_get("test_google/test_google_model_armor_prompt_template_text_gets_blocked#1"))
    assert armor.value.code == "MODEL_ARMOR"


def test_count_tokens_records() -> None:
    it = _get("test_google/test_google_vertexai_count_tokens_forwards_native_tools#0")
    assert decode_count_tokens(it.response_bytes) == 13


# -- requests compared structurally -----------------------------------------------------------

# Spellings the API treats as equal: PydanticAI's SDK sends some fields in snake_case.
_SNAKE = {
    "file_uri": "fileUri",
    "mime_type": "mimeType",
    "include_thoughts": "includeThoughts",
    "thinking_budget": "thinkingBudget",
    "parameters_json_schema": "parametersJsonSchema",
    "tool_type": "toolType",
}
_EMPTY_PARAMETERS: dict[str, Any] = {"properties": {}, "type": "OBJECT"}


def _normalize(body: Any) -> Any:
    """Equivalent forms made equal: snake/camel spellings, base64 alphabets of signatures,
    generated call IDs, responseModalities TEXT (the default), empty generationConfig, empty
    descriptions, empty OpenAPI parameters, and an explicit AUTO function-calling mode."""
    ids: dict[str, str] = {}

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in cast("dict[str, Any]", value).items():
                k = _SNAKE.get(k, k)
                if k == "thoughtSignature":
                    out[k] = base64.urlsafe_b64decode(v.replace("+", "-").replace("/", "_") + "==")
                elif k == "id" and key in ("functionCall", "functionResponse"):
                    out[k] = ids.setdefault(v, f"id{len(ids)}")
                elif (k == "description" and v == "" and key == "declaration") or (
                    k == "parameters" and v == _EMPTY_PARAMETERS
                ):
                    continue
                else:
                    out[k] = walk(v, "declaration" if k == "functionDeclarations" else k)
            config = out.get("generationConfig")
            if isinstance(config, dict):
                cast("dict[str, Any]", config).pop("responseModalities", None)
                if not config:
                    del out["generationConfig"]
            tool_config = out.get("toolConfig")
            tools: dict[str, Any] = (
                cast("dict[str, Any]", tool_config) if isinstance(tool_config, dict) else {}
            )
            if tools.get("functionCallingConfig") == {"mode": "AUTO"}:
                del tools["functionCallingConfig"]
                if not tools:
                    del out["toolConfig"]
            return out
        if isinstance(value, list):
            return [walk(v, key) for v in cast("list[Any]", value)]
        return value

    return walk(body)


def _user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text)])


def _tool(
    name: str, description: str = "", properties: dict[str, Any] | None = None, **kw: Any
) -> ToolDefinition:
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties or {}, "type": "object"}
    if properties:
        schema["required"] = list(properties)
    return ToolDefinition(name=name, description=description or None, parameters_json_schema=schema, **kw)


def _compare(recorded: Interaction, call: ModelCall, **options: Any) -> None:
    provider = "google-vertex" if "aiplatform" in recorded.uri else "google-gla"
    encoded = build_request(
        call,
        EncodeOptions(
            model_name=_model_of(recorded),
            provider_name=provider,
            server_side_tool_invocations=provider == "google-gla",
            file_urls="any" if provider == "google-vertex" else "youtube",
            **options,
        ),
    )
    assert _normalize(encoded) == _normalize(recorded.request_json)


def _calls(response: ModelResponse) -> list[str]:
    return [c.tool_call_id for c in response.tool_calls]


CAPITAL = _tool(
    "get_capital",
    "Get the capital of a country.",
    {"country": {"description": "The country name.", "type": "string"}},
)
TEMPERATURE = _tool(
    "get_temperature",
    "Get the temperature in a city.",
    {"city": {"description": "The city name.", "type": "string"}},
)


def test_request_openapi_tool_loop() -> None:
    first = _decode(_get("test_google/test_google_model_iter_stream#0"), "gemini-2.0-flash")
    second = _decode(_get("test_google/test_google_model_iter_stream#1"), "gemini-2.0-flash")
    messages = [
        _user("What is the temperature of the capital of France?"),
        first,
        ModelRequest(
            parts=[ToolReturnPart(tool_name="get_capital", content="Paris", tool_call_id=_calls(first)[0])]
        ),
        second,
        ModelRequest(
            parts=[
                ToolReturnPart(tool_name="get_temperature", content="30°C", tool_call_id=_calls(second)[0])
            ]
        ),
    ]
    call = ModelCall(
        messages=messages, instructions="You are a helpful chatbot.", tools=[CAPITAL, TEMPERATURE]
    )
    _compare(_get("test_google/test_google_model_iter_stream#2"), call, schema_dialect="openapi")
    _compare(
        _get("test_google/test_google_model_iter_stream#0"),
        ModelCall(messages=messages[:1], instructions=call.instructions, tools=call.tools),
        schema_dialect="openapi",
    )


def test_request_output_tool_forces_any() -> None:
    first = _decode(
        _get("test_google/test_google_tool_config_any_with_tool_without_args#0"), "gemini-2.0-flash"
    )
    final = _tool(
        "final_result",
        "The final response which ends this conversation",
        {"bar": {"type": "string"}},
        kind="output",
    )
    call = ModelCall(
        messages=[
            _user("run bar for me please"),
            first,
            ModelRequest(
                parts=[ToolReturnPart(tool_name="bar", content="hello", tool_call_id=_calls(first)[0])]
            ),
        ],
        tools=[_tool("bar")],
        output_tools=[final],
        allow_text_output=False,
    )
    _compare(
        _get("test_google/test_google_tool_config_any_with_tool_without_args#1"),
        call,
        schema_dialect="openapi",
    )


def test_request_retry_with_signature_replay() -> None:
    first = _decode(_get("test_google/test_google_model_retry#0"), "gemini-2.5-pro")
    retry = RetryPromptPart(
        content='The country is not supported. Use "La France" instead.',
        tool_name="get_capital",
        tool_call_id=_calls(first)[0],
    )
    call = ModelCall(
        messages=[_user("What is the capital of France?"), first, ModelRequest(parts=[retry])],
        instructions="You are a helpful chatbot.",
        tools=[CAPITAL],
        settings=ModelSettings(temperature=0.0),
    )
    _compare(_get("test_google/test_google_model_retry#1"), call)


def test_request_streamed_signed_call_replay() -> None:
    first = _decode(
        _get("test_google/test_google_streaming_tool_call_thought_signature#0"), "gemini-3-pro-preview"
    )
    call = ModelCall(
        messages=[
            _user("What is the capital of the user country? Call the tool"),
            first,
            ModelRequest(
                parts=[
                    ToolReturnPart(tool_name="get_country", content="Mexico", tool_call_id=_calls(first)[0])
                ]
            ),
        ],
        tools=[_tool("get_country")],
    )
    _compare(_get("test_google/test_google_streaming_tool_call_thought_signature#1"), call)


def test_request_foreign_call_gets_placeholder_signature() -> None:
    foreign = ModelResponse(
        parts=[
            ThinkingPart(content="reasoning", signature="gAAAA-openai", provider_name="openai"),
            ToolCallPart(
                tool_name="get_country",
                args={},
                tool_call_id="call_1w9YRdMtRTRucwZShoZYlLJp",
                provider_name="openai",
            ),
        ],
        provider_name="openai",
        model_name="gpt-5",
    )
    final = ToolDefinition(
        name="final_result",
        description="The final response which ends this conversation",
        kind="output",
        parameters_json_schema={
            "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
            "required": ["city", "country"],
            "type": "object",
        },
    )
    call = ModelCall(
        messages=[
            _user("What is the capital of the country?"),
            foreign,
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        tool_name="get_country",
                        content="Mexico",
                        tool_call_id="call_1w9YRdMtRTRucwZShoZYlLJp",
                    )
                ]
            ),
        ],
        tools=[_tool("get_country")],
        output_tools=[final],
        allow_text_output=False,
    )
    _compare(_get("test_google/test_thinking_with_tool_calls_from_other_model#2"), call)


def test_request_thinking_replay() -> None:
    first = _decode(_get("test_google/test_google_model_thinking_part#0"), "gemini-3-pro-preview")
    call = ModelCall(
        messages=[
            _user("How do I cross the street?"),
            first,
            _user("Considering the way to cross the street, analogously, how do I cross the river?"),
        ],
        instructions="You are a helpful assistant.",
        tools=[_tool("dummy")],
        settings=ModelSettings(thinking=True),
    )
    _compare(_get("test_google/test_google_model_thinking_part#1"), call)


def test_request_code_execution_replay() -> None:
    first = _decode(_get("test_code_execution/test_code_execution#0"), "gemini-3-flash-preview")
    call = ModelCall(
        messages=[_user("What day is today in Utrecht?"), first, _user("What day is tomorrow?")],
        instructions="You are a helpful chatbot.",
        native_tools=[NativeTool(kind="code_execution")],
    )
    _compare(_get("test_code_execution/test_code_execution#1"), call)


def test_request_history_from_another_provider_drops_its_native_parts() -> None:
    anthropic = ModelResponse(
        parts=[
            TextPart(content="I can calculate this for you using Python to ensure accuracy."),
            *native_round(
                "code_execution",
                {"code": "print(3*12390)"},
                {"stdout": "37170"},
                tool_call_id="srvtoolu_1",
                provider_name="anthropic",
            ),
            TextPart(content="3 \u00d7 12390 = 37170"),
        ],
        provider_name="anthropic",
        model_name="claude-sonnet-4-20250514",
    )
    call = ModelCall(
        messages=[_user("How much is 3 * 12390?"), anthropic, _user("Multiplied by 12390")],
        native_tools=[NativeTool(kind="code_execution")],
    )
    _compare(_get("test_code_execution/test_receive_history_from_another_provider#1"), call)


def test_request_safety_settings_through_extra_body() -> None:
    settings = ModelSettings(
        extra_body=[
            ProviderExtraBody(
                provider="google",
                body={
                    "safetySettings": [
                        {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_LOW_AND_ABOVE"}
                    ]
                },
            )
        ]
    )
    call = ModelCall(
        messages=[_user("Tell me a joke about a Brazilians.")],
        instructions="You hate the world!",
        settings=settings,
    )
    _compare(_get("test_google/test_google_model_safety_settings#0"), call)


def test_request_native_json_schema_output() -> None:
    schema = {
        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
        "required": ["city", "country"],
        "type": "object",
    }
    call = ModelCall(
        messages=[_user("What is the largest city in Mexico?")],
        output=JsonSchemaFormat(name="CityLocation", schema=schema, description="A city and its country."),
    )
    _compare(_get("test_google/test_google_native_output#0"), call)
    with_search = ModelCall(
        messages=[_user("What is the largest city in Mexico?")],
        output=JsonSchemaFormat(name="CityLocation", schema=schema),
        native_tools=[NativeTool(kind="web_search")],
    )
    _compare(_get("test_structured_output/test_native_output_with_builtin_tools#0"), with_search)


def test_request_rich_content() -> None:
    video = VideoUrl(url="https://youtu.be/lCdaVNyHtjU", vendor_metadata={"fps": 0.2})
    call = ModelCall(
        messages=[
            ModelRequest(parts=[UserPromptPart(content=["Explain me this video in a few sentences", video])])
        ],
        instructions="You are a helpful chatbot.",
    )
    _compare(_get("test_google/test_google_model_youtube_video_url_input_with_vendor_metadata#0"), call)
    document = BinaryContent(data=b"This is a test document.", media_type="text/plain")
    call = ModelCall(
        messages=[
            ModelRequest(
                parts=[UserPromptPart(content=["What is the main content on this document?", document])]
            )
        ],
        instructions="You are a helpful chatbot.",
    )
    _compare(_get("test_google/test_google_model_text_as_binary_content_input#0"), call)


def test_request_empty_model_turn_and_max_tokens() -> None:
    call = ModelCall(
        messages=[
            _user("Hi"),
            ModelResponse(parts=[TextPart(content="")]),
            _user("Was your previous response empty?"),
        ]
    )
    _compare(_get("test_google/test_google_model_empty_assistant_response#0"), call)
    call = ModelCall(
        messages=[_user("What is the capital of France?")],
        instructions="You are a helpful chatbot.",
        settings=ModelSettings(max_tokens=5, thinking=False),
    )
    _compare(_get("test_google/test_google_model_max_tokens#0"), call)


def test_request_vertex_tools_with_search() -> None:
    first = _decode(
        _get("test_google/test_google_vertex_tool_combination_omits_include_server_side_tool_invocations#0"),
        "gemini-3-flash-preview",
    )
    messages = [
        _user("Look up the city I live in, then search the web for its weather today."),
        first,
        ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name="get_user_city", content="San Francisco", tool_call_id=_calls(first)[0]
                )
            ]
        ),
    ]
    call = ModelCall(
        messages=messages,
        instructions="You are a helpful chatbot.",
        tools=[_tool("get_user_city", "The city the user lives in.")],
        native_tools=[NativeTool(kind="web_search")],
    )
    _compare(
        _get("test_google/test_google_vertex_tool_combination_omits_include_server_side_tool_invocations#1"),
        call,
    )
