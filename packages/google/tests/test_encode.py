"""Encoding neutral calls into GenerateContent request bodies (no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.errors import UserError
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CachePoint
from ferrule.core.messages import DocumentUrl
from ferrule.core.messages import FilePart
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UploadedFile
from ferrule.core.messages import UserPromptPart
from ferrule.core.messages import VideoUrl
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import NativeTool
from ferrule.core.model import ToolDefinition
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.providers.google.codec import DUMMY_THOUGHT_SIGNATURE
from ferrule.providers.google.codec import EncodeOptions
from ferrule.providers.google.codec import build_request
from ferrule.providers.google.codec import encode_request
from tests.support.provtests import object_tool

GLA = "google-gla"
VERTEX = "google-vertex"
WEATHER = object_tool(
    "get_weather", {"city": {"type": "string"}}, description="Weather in a city.", additionalProperties=False
)
FINAL = object_tool("final_result", {"answer": {"type": "string"}}, kind="output")


def opts(model: str = "gemini-2.5-flash", provider: str = GLA, **kw: Any) -> EncodeOptions:
    vertex = provider == VERTEX
    return EncodeOptions(
        model_name=model,
        provider_name=provider,
        server_side_tool_invocations=not vertex,
        file_urls="any" if vertex else "youtube",
        uploaded_file_provider=None if vertex else GLA,
        **kw,
    )


def user(*content: Any) -> ModelRequest:
    if len(content) == 1 and isinstance(content[0], str):
        return ModelRequest(parts=[UserPromptPart(content=content[0])])
    return ModelRequest(parts=[UserPromptPart(content=list(content))])


def encode(
    messages: list[Any], model: str = "gemini-2.5-flash", provider: str = GLA, **call_kw: Any
) -> dict[str, Any]:
    return build_request(ModelCall(messages=messages, **call_kw), opts(model, provider))


def test_minimal_body_and_bytes() -> None:
    call = ModelCall(messages=[user("Hello")])
    assert build_request(call, opts()) == {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    assert encode_request(call, opts()) == b'{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}'


def test_system_prompts_then_instructions_and_role_merging() -> None:
    messages = [
        ModelRequest(parts=[SystemPromptPart(content="Be terse."), UserPromptPart(content="Hi")]),
        ModelRequest(parts=[UserPromptPart(content="again")]),
        ModelResponse(parts=[TextPart(content="Hello")]),
    ]
    body = encode(messages, instructions="Answer in French.")
    assert body["systemInstruction"] == {
        "role": "user",
        "parts": [{"text": "Be terse."}, {"text": "Answer in French."}],
    }
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Hi"}, {"text": "again"}]},
        {"role": "model", "parts": [{"text": "Hello"}]},
    ]


def test_no_content_is_refused() -> None:
    with pytest.raises(UserError, match="at least one message"):
        encode([ModelRequest(parts=[SystemPromptPart(content="only a system prompt")])])


def test_rich_content() -> None:
    body = encode(
        [
            user(
                "Look:",
                BinaryContent(data=b"\x89PNG", media_type="image/png"),
                BinaryContent(data=b"vid", media_type="video/mp4", vendor_metadata={"fps": 0.5}),
                VideoUrl(url="https://youtu.be/lCdaVNyHtjU", vendor_metadata={"startOffset": "2s"}),
                UploadedFile(
                    file_id="https://generativelanguage.googleapis.com/v1beta/files/abc",
                    provider_name=GLA,
                    media_type="application/pdf",
                ),
                CachePoint(),
                BinaryContent(
                    data=b"img",
                    media_type="image/jpeg; q=1",
                    vendor_metadata={"media_resolution": "MEDIA_RESOLUTION_HIGH"},
                ),
            )
        ]
    )
    assert body["contents"][0]["parts"] == [
        {"text": "Look:"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
        {"inlineData": {"mimeType": "video/mp4", "data": "dmlk"}, "videoMetadata": {"fps": 0.5}},
        {
            "fileData": {"fileUri": "https://youtu.be/lCdaVNyHtjU", "mimeType": "video/mp4"},
            "videoMetadata": {"startOffset": "2s"},
        },
        {
            "fileData": {
                "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc",
                "mimeType": "application/pdf",
            }
        },
        {
            "inlineData": {"mimeType": "image/jpeg", "data": "aW1n"},
            "mediaResolution": {"level": "MEDIA_RESOLUTION_HIGH"},
        },
    ]


def test_url_rules_differ_between_gemini_api_and_vertex() -> None:
    image = ImageUrl(url="https://example.com/cat.png")
    with pytest.raises(UserError, match="only YouTube URLs and uploaded files"):
        encode([user("x", image)])
    body = encode([user("x", image, DocumentUrl(url="gs://bucket/doc.pdf"))], provider=VERTEX)
    assert body["contents"][0]["parts"][1:] == [
        {"fileData": {"fileUri": "https://example.com/cat.png", "mimeType": "image/png"}},
        {"fileData": {"fileUri": "gs://bucket/doc.pdf", "mimeType": "application/pdf"}},
    ]
    with pytest.raises(UserError, match="https:// and gs://"):
        encode([user("x", ImageUrl(url="http://example.com/cat.png"))], provider=VERTEX)
    with pytest.raises(UserError, match="force_download"):
        encode([user("x", ImageUrl(url="https://youtu.be/x", force_download=True))])


def test_uploaded_files_only_from_their_owner() -> None:
    foreign = UploadedFile(file_id="file-123", provider_name="openai")
    with pytest.raises(UserError, match="belongs to 'openai'"):
        encode([user("x", foreign)])
    own = UploadedFile(file_id="https://generativelanguage.googleapis.com/v1beta/files/a", provider_name=GLA)
    with pytest.raises(UserError, match="cannot read"):
        encode([user("x", own)], provider=VERTEX)
    with pytest.raises(UserError, match="non-empty file_id"):
        encode([user("x", UploadedFile(file_id="", provider_name=GLA))])


def test_vendor_metadata_and_media_type_are_checked() -> None:
    with pytest.raises(UserError, match="unknown Gemini vendor_metadata"):
        encode([user(BinaryContent(data=b"x", media_type="image/png", vendor_metadata={"detail": "high"}))])
    with pytest.raises(UserError, match="not a MIME type"):
        encode([user(BinaryContent(data=b"x", media_type="png"))])


def test_tool_results_and_retries() -> None:
    call = ToolCallPart(tool_name="get_weather", args={"city": "Paris"}, tool_call_id="c1")
    messages = [
        user("weather?"),
        ModelResponse(parts=[call], provider_name=GLA, model_name="gemini-2.5-flash"),
        ModelRequest(
            parts=[
                ToolReturnPart(tool_name="get_weather", content="sunny", tool_call_id="c1"),
                ToolReturnPart(tool_name="get_weather", content={"temp": 20}, tool_call_id="c2"),
                ToolReturnPart(tool_name="get_weather", content="boom", tool_call_id="c3", outcome="failed"),
                RetryPromptPart(content="bad city", tool_name="get_weather", tool_call_id="c4"),
                RetryPromptPart(content="answer in JSON"),
                ToolReturnPart(
                    tool_name="get_weather",
                    content=["chart", BinaryContent(data=b"png", media_type="image/png")],
                    tool_call_id="c5",
                ),
            ]
        ),
    ]
    body = encode(messages)
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}}],
    }
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "id": "c1", "response": {"return_value": "sunny"}}},
        {"functionResponse": {"name": "get_weather", "id": "c2", "response": {"temp": 20}}},
        {"functionResponse": {"name": "get_weather", "id": "c3", "response": {"error": "boom"}}},
        {
            "functionResponse": {
                "name": "get_weather",
                "id": "c4",
                "response": {"error": "bad city\n\nFix the errors and try again."},
            }
        },
        {"text": "answer in JSON\n\nFix the errors and try again."},
        {"functionResponse": {"name": "get_weather", "id": "c5", "response": {"return_value": "chart"}}},
        {"inlineData": {"mimeType": "image/png", "data": "cG5n"}},
    ]


def test_unencodable_tool_result_is_a_user_error() -> None:
    messages = [
        user("x"),
        ModelRequest(parts=[ToolReturnPart(tool_name="t", content=object(), tool_call_id="c")]),
    ]
    with pytest.raises(UserError, match="not JSON-encodable"):
        encode(messages)


def _history(provider: str, model: str) -> ModelResponse:
    return ModelResponse(
        parts=[
            ThinkingPart(
                content="hmm",
                signature="SIG-T",
                provider_name=provider,
                provider_details={"thought_signature": "SIG-T"},
            ),
            TextPart(
                content="Let me check.",
                provider_name=provider,
                provider_details={"thought_signature": "SIG-X"},
            ),
            ToolCallPart(
                tool_name="get_weather",
                args='{"city": "Paris"}',
                tool_call_id="c1",
                provider_name=provider,
                provider_details={"thought_signature": "SIG-C"},
            ),
            NativeToolCallPart(
                tool_name="code_execution",
                args={"code": "print(1)", "language": "PYTHON"},
                tool_call_id="e1",
                id="e1",
                provider_name=provider,
                provider_details={"google_part": "executableCode", "thought_signature": "SIG-E"},
            ),
            NativeToolReturnPart(
                tool_name="code_execution",
                content={"outcome": "OUTCOME_OK", "output": "1\n"},
                tool_call_id="e1",
                provider_name=provider,
                provider_details={"google_part": "codeExecutionResult", "id": "e1"},
            ),
            NativeToolCallPart(
                tool_name="web_search",
                args={"queries": ["x"]},
                tool_call_id="g1",
                provider_name=provider,
                provider_details={"google_part": "metadata"},
            ),
        ],
        provider_name=provider,
        model_name=model,
    )


def test_signatures_and_reasoning_replay_only_to_the_same_model() -> None:
    own = encode([user("q"), _history(GLA, "gemini-2.5-flash")])
    assert own["contents"][1]["parts"] == [
        {"text": "hmm", "thought": True, "thoughtSignature": "SIG-T"},
        {"text": "Let me check.", "thoughtSignature": "SIG-X"},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
            "thoughtSignature": "SIG-C",
        },
        {
            "executableCode": {"code": "print(1)", "language": "PYTHON", "id": "e1"},
            "thoughtSignature": "SIG-E",
        },
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n", "id": "e1"}},
    ]
    for other in (
        encode([user("q"), _history(GLA, "gemini-2.5-pro")]),
        encode([user("q"), _history("anthropic", "claude")]),
    ):
        assert other["contents"][1]["parts"] == [
            {"text": "Let me check."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}},
        ]


def test_gemini_3_gets_a_placeholder_signature_for_unsigned_calls() -> None:
    foreign = ModelResponse(
        parts=[
            ToolCallPart(tool_name="a", args={}, tool_call_id="x1"),
            ToolCallPart(tool_name="b", args={}, tool_call_id="x2"),
        ],
        provider_name="openai",
        model_name="gpt-5",
    )
    body = encode([user("q"), foreign], model="gemini-3-pro-preview")
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"name": "a", "args": {}, "id": "x1"}, "thoughtSignature": DUMMY_THOUGHT_SIGNATURE},
        {"functionCall": {"name": "b", "args": {}, "id": "x2"}},
    ]
    assert "thoughtSignature" not in encode([user("q"), foreign])["contents"][1]["parts"][0]


def test_empty_and_odd_model_turns() -> None:
    body = encode([user("q"), ModelResponse(parts=[]), user("again")])
    assert body["contents"][1] == {"role": "model", "parts": [{"text": ""}]}
    bad_args = ModelResponse(parts=[ToolCallPart(tool_name="t", args="not json", tool_call_id="c")])
    assert encode([user("q"), bad_args])["contents"][1]["parts"][0]["functionCall"]["args"] == {
        "_raw_arguments": "not json"
    }
    image = ModelResponse(
        parts=[
            FilePart(
                content=BinaryContent(data=b"img", media_type="image/png"),
                provider_name=GLA,
                provider_details={"thought_signature": "S"},
            )
        ],
        provider_name=GLA,
        model_name="gemini-2.5-flash",
    )
    assert encode([user("q"), image])["contents"][1]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "aW1n"}, "thoughtSignature": "S"}
    ]


def test_function_declarations_per_dialect() -> None:
    json_body = encode([user("q")], tools=[WEATHER])
    assert json_body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather in a city.",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                        "additionalProperties": False,
                    },
                }
            ]
        }
    ]
    no_args = ToolDefinition(name="ping")
    openapi = build_request(
        ModelCall(messages=[user("q")], tools=[WEATHER, no_args]), opts(schema_dialect="openapi")
    )
    assert openapi["tools"][0]["functionDeclarations"] == [
        {
            "name": "get_weather",
            "description": "Weather in a city.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"city": {"type": "STRING"}},
                "required": ["city"],
            },
        },
        {"name": "ping"},
    ]
    # gemini-1.5's default dialect is the OpenAPI one.
    assert (
        "parameters"
        in encode([user("q")], model="gemini-1.5-flash", tools=[WEATHER])["tools"][0]["functionDeclarations"][
            0
        ]
    )


@pytest.mark.parametrize("name", ["1abc", "has space", "a" * 129, "semi;colon", ""])
def test_invalid_function_names(name: str) -> None:
    with pytest.raises(UserError, match="function names"):
        encode([user("q")], tools=[ToolDefinition(name=name)])


def test_function_name_length_limit() -> None:
    encode([user("q")], tools=[ToolDefinition(name="a" * 128)])
    with pytest.raises(UserError):
        encode([user("q")], tools=[ToolDefinition(name="a" * 129)])


def test_duplicate_tool_names() -> None:
    with pytest.raises(UserError, match="more than once"):
        encode([user("q")], tools=[WEATHER, WEATHER])


def test_native_tools() -> None:
    body = encode(
        [user("q")],
        model="gemini-3-flash-preview",
        native_tools=[
            NativeTool(kind="web_search"),
            NativeTool(kind="url_context"),
            NativeTool(kind="code_execution"),
            NativeTool(kind="file_search", options={"fileSearchStoreNames": ["fileSearchStores/s"]}),
        ],
        tools=[WEATHER],
    )
    assert body["tools"][:4] == [
        {"googleSearch": {}},
        {"urlContext": {}},
        {"codeExecution": {}},
        {"fileSearch": {"fileSearchStoreNames": ["fileSearchStores/s"]}},
    ]
    assert body["toolConfig"] == {"includeServerSideToolInvocations": True}
    # Vertex and pre-3 families do not get the server-side invocation flag.
    assert "toolConfig" not in encode(
        [user("q")],
        model="gemini-3-flash-preview",
        provider=VERTEX,
        native_tools=[NativeTool(kind="web_search")],
    )
    assert "toolConfig" not in encode([user("q")], native_tools=[NativeTool(kind="web_search")])
    with pytest.raises(UserError, match="enable it once"):
        encode([user("q")], native_tools=[NativeTool(kind="url_context"), NativeTool(kind="web_fetch")])
    with pytest.raises(UserError, match="fileSearchStoreNames"):
        encode([user("q")], native_tools=[NativeTool(kind="file_search")])
    with pytest.raises(UnsupportedFeatureError):
        encode([user("q")], native_tools=[NativeTool(kind="image_generation")])


def test_function_calling_modes() -> None:
    def config(**kw: Any) -> Any:
        return encode([user("q")], tools=[WEATHER], **kw).get("toolConfig")

    assert config() is None
    assert config(settings=ModelSettings(tool_choice="auto")) is None
    assert config(settings=ModelSettings(tool_choice="none")) == {"functionCallingConfig": {"mode": "NONE"}}
    assert config(settings=ModelSettings(tool_choice="required")) == {
        "functionCallingConfig": {"mode": "ANY"}
    }
    assert config(settings=ModelSettings(tool_choice=["get_weather"])) == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    body = encode([user("q")], tools=[WEATHER], output_tools=[FINAL], allow_text_output=False)
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather", "final_result"]}
    }
    with pytest.raises(UserError, match="unknown tool"):
        config(settings=ModelSettings(tool_choice=["nope"]))
    with pytest.raises(UserError, match="needs at least one function tool"):
        encode([user("q")], settings=ModelSettings(tool_choice="required"))
    with pytest.raises(UserError, match="conflicts"):
        encode(
            [user("q")],
            output_tools=[FINAL],
            allow_text_output=False,
            settings=ModelSettings(tool_choice="none"),
        )
    with pytest.raises(UnsupportedFeatureError, match="parallel_tool_calls=False"):
        config(settings=ModelSettings(parallel_tool_calls=False))


def test_generation_settings() -> None:
    settings = ModelSettings(
        max_tokens=100,
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        seed=7,
        stop_sequences=["END"],
        presence_penalty=0.1,
        frequency_penalty=0.2,
    )
    assert encode([user("q")], settings=settings)["generationConfig"] == {
        "maxOutputTokens": 100,
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "seed": 7,
        "stopSequences": ["END"],
        "presencePenalty": 0.1,
        "frequencyPenalty": 0.2,
    }


@pytest.mark.parametrize(
    ("model", "settings", "expected"),
    [
        ("gemini-2.5-flash", ModelSettings(thinking=True), {"includeThoughts": True}),
        ("gemini-2.5-flash", ModelSettings(thinking=False), {"thinkingBudget": 0}),
        ("gemini-2.5-flash", ModelSettings(reasoning_effort="low"), {"thinkingBudget": 1024}),
        ("gemini-2.5-flash", ModelSettings(reasoning_effort="none"), {"thinkingBudget": 0}),
        (
            "gemini-2.5-pro",
            ModelSettings(thinking=True, reasoning_effort="high"),
            {"includeThoughts": True, "thinkingBudget": 32768},
        ),
        ("gemini-2.5-pro", ModelSettings(thinking_budget_tokens=128), {"thinkingBudget": 128}),
        ("gemini-2.5-pro", ModelSettings(thinking_budget_tokens=32768), {"thinkingBudget": 32768}),
        ("gemini-2.5-pro", ModelSettings(thinking_budget_tokens=-1), {"thinkingBudget": -1}),
        ("gemini-2.5-flash-lite", ModelSettings(thinking_budget_tokens=512), {"thinkingBudget": 512}),
        (
            "gemini-3-pro-preview",
            ModelSettings(thinking=True, reasoning_effort="low"),
            {"includeThoughts": True, "thinkingLevel": "low"},
        ),
        ("gemini-3-flash-preview", ModelSettings(reasoning_effort="minimal"), {"thinkingLevel": "minimal"}),
    ],
)
def test_thinking_config(model: str, settings: ModelSettings, expected: dict[str, Any]) -> None:
    assert (
        encode([user("q")], model=model, settings=settings)["generationConfig"]["thinkingConfig"] == expected
    )


@pytest.mark.parametrize(
    ("model", "settings", "error", "match"),
    [
        ("gemini-2.5-pro", ModelSettings(thinking_budget_tokens=127), UserError, "out of range"),
        ("gemini-2.5-pro", ModelSettings(thinking_budget_tokens=32769), UserError, "out of range"),
        ("gemini-2.5-flash-lite", ModelSettings(thinking_budget_tokens=511), UserError, "out of range"),
        (
            "gemini-2.5-pro",
            ModelSettings(thinking_budget_tokens=0),
            UnsupportedFeatureError,
            "always reasons",
        ),
        ("gemini-2.5-pro", ModelSettings(thinking=False), UnsupportedFeatureError, "always reasons"),
        ("gemini-2.5-flash", ModelSettings(thinking=False, reasoning_effort="high"), UserError, "conflicts"),
        ("gemini-2.5-flash", ModelSettings(thinking=True, reasoning_effort="none"), UserError, "conflicts"),
        (
            "gemini-2.5-flash",
            ModelSettings(reasoning_effort="low", thinking_budget_tokens=10),
            UserError,
            "not both",
        ),
        (
            "gemini-2.0-flash",
            ModelSettings(thinking_budget_tokens=10),
            UnsupportedFeatureError,
            "does not think",
        ),
    ],
)
def test_thinking_config_errors(
    model: str, settings: ModelSettings, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        encode([user("q")], model=model, settings=settings)


def test_structured_output() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = encode(
        [user("q")], output=JsonSchemaFormat(name="CityLocation", schema=schema, description="A city.")
    )
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": {**schema, "description": "A city.", "title": "CityLocation"},
    }
    openapi = build_request(
        ModelCall(messages=[user("q")], output=JsonSchemaFormat(name="C", schema=schema)),
        opts("gemini-1.5-pro"),
    )
    assert openapi["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING"}},
            "required": ["city"],
        },
    }
    assert encode([user("q")], output=JsonObjectFormat())["generationConfig"] == {
        "responseMimeType": "application/json"
    }
    with pytest.raises(UnsupportedFeatureError, match="function tools together with JSON output"):
        encode([user("q")], output=JsonObjectFormat(), tools=[WEATHER])
    # Gemini 3 combines them.
    assert encode([user("q")], model="gemini-3-flash-preview", output=JsonObjectFormat(), tools=[WEATHER])[
        "generationConfig"
    ]


def test_extra_body() -> None:
    safety = [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_LOW_AND_ABOVE"}]
    settings = ModelSettings(
        extra_body=[
            ProviderExtraBody(
                provider="google",
                body={"safetySettings": safety, "generationConfig": {"responseModalities": ["TEXT"]}},
            ),
            ProviderExtraBody(provider=VERTEX, body={"labels": {"team": "a"}}),
            ProviderExtraBody(provider="openai", body={"contents": "ignored: another provider's"}),
        ],
        temperature=0.5,
    )
    body = encode([user("q")], settings=settings)
    assert body["safetySettings"] == safety
    assert body["generationConfig"] == {"temperature": 0.5, "responseModalities": ["TEXT"]}
    assert "labels" not in body
    assert encode([user("q")], provider=VERTEX, settings=settings)["labels"] == {"team": "a"}
    encodes_itself: list[dict[str, Any]] = [{"contents": []}, {"tools": []}, {"systemInstruction": {}}]
    for bad in encodes_itself:
        with pytest.raises(UserError, match="encodes itself"):
            encode(
                [user("q")],
                settings=ModelSettings(extra_body=[ProviderExtraBody(provider="google", body=bad)]),
            )
    for key in ("temperature", "max_output_tokens", "thinkingConfig", "response_schema"):
        with pytest.raises(UserError, match="encoded by ferrule"):
            encode(
                [user("q")],
                settings=ModelSettings(
                    extra_body=[ProviderExtraBody(provider="google", body={"generationConfig": {key: 1}})]
                ),
            )
    with pytest.raises(UserError, match="JSON object"):
        encode(
            [user("q")],
            settings=ModelSettings(
                extra_body=[ProviderExtraBody(provider="google", body={"generationConfig": 3})]
            ),
        )
