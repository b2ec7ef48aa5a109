"""Decoding GenerateContent responses and streams (no sockets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core import bounded_json
from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.messages import FilePart
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.providers.google.codec import StreamDecoder
from ferrule.providers.google.codec import decode_response
from ferrule.providers.google.codec import decode_stream
from ferrule.providers.google.codec import map_finish_reason
from tests.support.sse import sse_body
from tests.support.sse import sse_event

USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def body(parts: list[dict[str, Any]], finish: str | None = "STOP", **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return json.dumps(
        {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash", **extra}
    ).encode()


def sse(*chunks: dict[str, Any]) -> bytes:
    return sse_body(*chunks, line_break="\r\n")


def chunk(
    parts: list[dict[str, Any]], finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-2.5-flash"}
    if usage:
        out["usageMetadata"] = usage
    return out


def test_text_response() -> None:
    response = decode_response(
        body(
            [{"text": "Hello "}, {"text": "world"}],
            responseId="abc",
            createTime="2026-03-21T18:11:27.235482123Z",
        ),
        model_name="gemini-2.5-flash-preview",
    )
    assert response.parts == [TextPart(content="Hello world")]
    assert response.model_name == "gemini-2.5-flash-preview"
    assert response.provider_name == "google-gla"
    assert response.provider_response_id == "abc"
    assert response.finish_reason == "stop"
    assert response.raw_finish_reason == "STOP"
    assert response.provider_details is not None
    assert response.provider_details["model_version"] == "gemini-2.5-flash"
    assert response.timestamp.isoformat() == "2026-03-21T18:11:27.235482+00:00"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 5)
    # Without a requested model name the reported version is used.
    assert decode_response(body([{"text": "x"}])).model_name == "gemini-2.5-flash"


def test_thinking_signatures_and_calls() -> None:
    response = decode_response(
        body(
            [
                {"text": "plan", "thought": True},
                {"text": " more", "thought": True},
                {"text": "answer", "thoughtSignature": "SIG1"},
                {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "SIG2"},
                {"functionCall": {"name": "g", "args": {}, "id": "wire-id"}},
                {"text": "", "thoughtSignature": "SIG3"},
            ]
        )
    )
    thinking, text, first, second, carrier = response.parts
    assert thinking == ThinkingPart(content="plan more", provider_name="google-gla")
    assert text == TextPart(
        content="answer", provider_name="google-gla", provider_details={"thought_signature": "SIG1"}
    )
    assert isinstance(first, ToolCallPart)
    assert isinstance(second, ToolCallPart)
    assert (first.tool_name, first.args, first.provider_details) == (
        "f",
        {"a": 1},
        {"thought_signature": "SIG2"},
    )
    assert first.tool_call_id.startswith("call_")
    assert (second.tool_call_id, second.id) == ("wire-id", "wire-id")
    # A lone signature after a function call is kept on an empty thinking part, in place.
    assert carrier == ThinkingPart(
        content="",
        signature="SIG3",
        provider_name="google-gla",
        provider_details={"thought_signature": "SIG3"},
    )
    assert response.finish_reason == "tool_call"


def test_trailing_signature_joins_the_text_it_follows() -> None:
    response = decode_stream(
        sse(
            chunk([{"text": "Hel"}]),
            chunk([{"text": "lo"}]),
            chunk([{"text": "", "thoughtSignature": "SIG"}], finish="STOP", usage=USAGE),
        )
    )
    assert response.parts == [
        TextPart(content="Hello", provider_name="google-gla", provider_details={"thought_signature": "SIG"})
    ]


def test_signed_text_after_signed_text_starts_a_new_part() -> None:
    response = decode_response(
        body([{"text": "a", "thoughtSignature": "S1"}, {"text": "b", "thoughtSignature": "S2"}])
    )
    assert [p.provider_details for p in response.parts] == [
        {"thought_signature": "S1"},
        {"thought_signature": "S2"},
    ]


def test_stream_events_follow_the_contract() -> None:
    decoder = StreamDecoder(model_name="m")
    events = decoder.feed(sse_event(chunk([{"text": "Hi", "thought": True}])))
    events += decoder.feed(sse_event(chunk([{"text": "Hel"}])))
    events += decoder.feed(sse_event("  "))  # keep-alive noise is ignored
    events += decoder.feed(
        sse_event(
            chunk([{"text": "lo"}, {"functionCall": {"name": "f", "args": {}}}], finish="STOP", usage=USAGE)
        )
    )
    events += decoder.finish()
    kinds = [(type(e).__name__, getattr(e, "index", None)) for e in events]
    assert kinds == [
        ("PartStartEvent", 0),
        ("PartDeltaEvent", 0),
        ("PartStartEvent", 1),
        ("PartDeltaEvent", 1),
        ("PartDeltaEvent", 1),
        ("PartStartEvent", 2),
        ("PartDeltaEvent", 2),
        ("PartEndEvent", 2),  # a function call arrives whole and ends at once
        ("PartEndEvent", 0),
        ("PartEndEvent", 1),
        ("ResponseCompleted", None),
    ]
    assert isinstance(events[4], PartDeltaEvent)
    assert events[4].delta == TextPartDelta("lo")
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    assert [type(p).__name__ for p in final.response.parts] == ["ThinkingPart", "TextPart", "ToolCallPart"]
    assert isinstance(events[0], PartStartEvent)
    assert isinstance(events[8], PartEndEvent)
    with pytest.raises(ResponseDecodeError, match="already finished"):
        decoder.finish()
    with pytest.raises(ResponseDecodeError, match="after the response was completed"):
        decoder.feed(sse_event(chunk([{"text": "late"}])))


def test_usage_is_the_last_reported_and_normalized() -> None:
    usage = {
        "promptTokenCount": 100,
        "candidatesTokenCount": 20,
        "cachedContentTokenCount": 40,
        "thoughtsTokenCount": 30,
        "toolUsePromptTokenCount": 7,
        "totalTokenCount": 157,
        "promptTokensDetails": [
            {"modality": "TEXT", "tokenCount": 90},
            {"modality": "AUDIO", "tokenCount": 10},
        ],
        "cacheTokensDetails": [{"modality": "AUDIO", "tokenCount": 4}],
        "candidatesTokensDetails": [
            {"modality": "AUDIO", "tokenCount": 3},
            {"modality": "bad spelling!", "tokenCount": 1},
        ],
        "toolUsePromptTokensDetails": [{"modality": "TEXT", "tokenCount": 7}],
        "serviceTier": "standard",
    }
    response = decode_stream(
        sse(
            chunk([{"text": "a"}], usage={"promptTokenCount": 1, "totalTokenCount": 1}),
            chunk([{"text": "b"}], "STOP", usage),
        )
    )
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.total_tokens) == (107, 50, 157)
    assert (u.cache_read_tokens, u.input_audio_tokens, u.cache_audio_read_tokens, u.output_audio_tokens) == (
        40,
        10,
        4,
        3,
    )
    assert u.output_reasoning_tokens == 30
    assert u.reasoning_tokens == 30
    assert u.details == {
        "reasoning_tokens": 30,
        "tool_use_prompt_tokens": 7,
        "cached_content_tokens": 40,
        "text_prompt_tokens": 90,
        "audio_prompt_tokens": 10,
        "audio_cache_tokens": 4,
        "audio_candidates_tokens": 3,
        "text_tool_use_prompt_tokens": 7,
    }
    assert response.provider_details is not None
    assert response.provider_details["service_tier"] == "standard"


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [
        ("STOP", False, "stop"),
        ("STOP", True, "tool_call"),
        ("MAX_TOKENS", False, "length"),
        ("SAFETY", False, "content_filter"),
        ("RECITATION", False, "content_filter"),
        ("BLOCKLIST", False, "content_filter"),
        ("PROHIBITED_CONTENT", False, "content_filter"),
        ("SPII", False, "content_filter"),
        ("MALFORMED_FUNCTION_CALL", False, "error"),
        ("LANGUAGE", False, "error"),
        ("OTHER", False, "other"),
        ("SOMETHING_NEW", False, "other"),
        (None, False, None),
    ],
)
def test_finish_reasons(raw: str | None, calls: bool, expected: str | None) -> None:
    assert map_finish_reason(raw, has_tool_calls=calls) == expected


def test_truncation_keeps_partial_text_and_raw_reason() -> None:
    response = decode_response(body([{"text": "partial"}], finish="MAX_TOKENS"))
    assert (response.finish_reason, response.raw_finish_reason, response.text) == (
        "length",
        "MAX_TOKENS",
        "partial",
    )
    empty = decode_response(
        body(
            [],
            finish="MALFORMED_FUNCTION_CALL",
        )
    )
    assert (empty.parts, empty.finish_reason) == ([], "error")


def test_blocked_prompt_raises_content_filter() -> None:
    blocked = json.dumps(
        {"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "nope"}, "usageMetadata": USAGE}
    ).encode()
    with pytest.raises(ContentFilterError, match=r"blocked the prompt \(SAFETY\): nope") as info:
        decode_response(blocked)
    assert info.value.code == "SAFETY"


def test_filtered_candidate_without_content_raises_with_content_is_returned() -> None:
    safety = json.dumps(
        {
            "candidates": [
                {
                    "content": {},
                    "finishReason": "SAFETY",
                    "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "blocked": True}],
                }
            ]
        }
    ).encode()
    with pytest.raises(ContentFilterError, match="finishReason SAFETY") as info:
        decode_response(safety)
    assert info.value.details == {
        "finish_reason": "SAFETY",
        "safety_ratings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "blocked": True}],
    }
    with pytest.raises(ContentFilterError):
        decode_stream(sse(chunk([{"text": "", "thoughtSignature": "S"}], finish="RECITATION")))
    partial = decode_response(body([{"text": "half an answer"}], finish="RECITATION"))
    assert (partial.finish_reason, partial.text) == ("content_filter", "half an answer")


def test_missing_finish_reason_is_never_an_empty_success() -> None:
    with pytest.raises(ResponseDecodeError, match="without a finishReason"):
        decode_stream(sse(chunk([{"text": "Hel"}]), chunk([{"text": "lo"}])))
    with pytest.raises(ResponseDecodeError, match="without a finishReason"):
        decode_stream(b"")
    with pytest.raises(ResponseDecodeError, match="without a finishReason"):
        decode_response(b"{}")
    with pytest.raises(ResponseDecodeError, match="without a finishReason"):
        decode_response(body([{"text": "no finish"}], finish=None))


@pytest.mark.parametrize(
    ("status", "code", "error"),
    [
        ("RESOURCE_EXHAUSTED", 429, RateLimitError),
        ("UNAVAILABLE", 503, ServerError),
        ("INTERNAL", 500, ServerError),
        ("INVALID_ARGUMENT", 400, BadRequestError),
        ("DEADLINE_EXCEEDED", 504, ProviderTimeoutError),
        ("PERMISSION_DENIED", 403, AuthenticationError),
        (None, 429, RateLimitError),
    ],
)
def test_error_objects_in_a_stream(status: str | None, code: int, error: type[Exception]) -> None:
    data = sse(chunk([{"text": "Hel"}]), {"error": {"code": code, "message": "went wrong", "status": status}})
    with pytest.raises(error, match="went wrong"):
        decode_stream(data)


def test_invalid_api_key_is_an_auth_error() -> None:
    data = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
        }
    )
    with pytest.raises(AuthenticationError):
        decode_response(data.encode())


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[1, 2",
        b'{"candidates": "nope"}',
        b'{"candidates": [{"content": {"parts": [{"text": 3}]}, "finishReason": "STOP"}]}',
        b'{"candidates": [{"finishReason": "STOP", "index": -1}]}',
        b'{"usageMetadata": {"promptTokenCount": -5}}',
        b'{"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}, "finishReason": "STOP"}]}',
        b'{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "@@@"}}]}, "finishReason": "STOP"}]}',
        b'{"candidates": [{"content": {"parts": [{"inlineData": {"data": "AAAA"}}]}, "finishReason": "STOP"}]}',
        b"[" * 200 + b"]" * 200,
    ],
)
def test_malformed_bodies(payload: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        decode_response(payload)
    with pytest.raises(ResponseDecodeError):
        decode_stream(b"data: " + payload + b"\n\n")


def test_truncated_recorded_body_fails() -> None:
    full = body([{"text": "Hello"}])
    decode_response(full)
    for cut in range(1, len(full)):
        with pytest.raises(ResponseDecodeError):
            decode_response(full[:cut])


def test_oversized_body_is_rejected_at_the_limit() -> None:
    limits = bounded_json.PROVIDER_RESPONSE
    room = limits.max_bytes - len(body([{"text": ""}, {"text": ""}]))
    first = limits.max_string_bytes  # one string may not exceed its own limit, so two parts fill the body
    exact = body([{"text": "x" * first}, {"text": "y" * (room - first)}])
    assert len(exact) == limits.max_bytes
    assert len(decode_response(exact).text or "") == room
    with pytest.raises(ResponseDecodeError, match="max_bytes"):
        decode_response(body([{"text": "x" * first}, {"text": "y" * (room - first + 1)}]))


def test_stream_event_limit_exactly_and_one_past() -> None:
    limit = bounded_json.STREAM_EVENT.max_bytes
    room = limit - len(json.dumps(chunk([{"text": ""}])))
    decoder = StreamDecoder()
    decoder.feed(sse_event(chunk([{"text": "x" * room}])))
    with pytest.raises(ResponseDecodeError, match="max_bytes"):
        StreamDecoder().feed(sse_event(chunk([{"text": "x" * (room + 1)}])))


def test_native_parts() -> None:
    response = decode_response(
        body(
            [
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}, "thoughtSignature": "E"},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                {"executableCode": {"language": "PYTHON", "code": "1/0", "id": "x2"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "id": "x2"}},
                {
                    "toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {"queries": ["q"]}, "id": "s1"},
                    "thoughtSignature": "T",
                },
                {
                    "toolResponse": {
                        "toolType": "GOOGLE_SEARCH_WEB",
                        "response": {"search_suggestions": "<b>"},
                        "id": "s1",
                    }
                },
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw"}, "thought": True},
            ]
        )
    )
    call1, result1, call2, result2, search, found, image = response.parts
    assert isinstance(call1, NativeToolCallPart)
    assert isinstance(result1, NativeToolReturnPart)
    assert call1.args == {"code": "print(1)", "language": "PYTHON"}
    assert call1.provider_details == {"google_part": "executableCode", "thought_signature": "E"}
    assert result1.tool_call_id == call1.tool_call_id
    assert result1.content == {
        "outcome": "OUTCOME_OK",
        "output": "1\n",
    }
    assert isinstance(call2, NativeToolCallPart)
    assert isinstance(result2, NativeToolReturnPart)
    assert (call2.tool_call_id, result2.tool_call_id, result2.outcome) == ("x2", "x2", "failed")
    assert isinstance(search, NativeToolCallPart)
    assert isinstance(found, NativeToolReturnPart)
    assert (search.tool_name, search.args, found.tool_call_id) == ("web_search", {"queries": ["q"]}, "s1")
    assert found.provider_details == {
        "google_part": "toolResponse",
        "tool_type": "GOOGLE_SEARCH_WEB",
        "id": "s1",
    }
    assert isinstance(image, FilePart)
    assert image.content.data == b"\x89PNG"
    assert image.provider_details == {"thought": True}


def test_grounding_metadata_becomes_search_parts_after_the_answer() -> None:
    grounding = {
        "webSearchQueries": ["weather sf"],
        "groundingChunks": [{"web": {"uri": "https://w", "title": "w"}}],
    }
    raw = {
        "candidates": [
            {
                "content": {"parts": [{"text": "Sunny."}]},
                "finishReason": "STOP",
                "groundingMetadata": grounding,
                "urlContextMetadata": {
                    "urlMetadata": [
                        {"retrievedUrl": "https://a", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS"}
                    ]
                },
            }
        ]
    }
    response = decode_response(json.dumps(raw).encode())
    text, search, results, fetch, fetched = response.parts
    assert text == TextPart(content="Sunny.")
    assert isinstance(search, NativeToolCallPart)
    assert isinstance(results, NativeToolReturnPart)
    assert (search.tool_name, search.args, results.content) == (
        "web_search",
        {"queries": ["weather sf"]},
        grounding["groundingChunks"],
    )
    assert isinstance(fetch, NativeToolCallPart)
    assert isinstance(fetched, NativeToolReturnPart)
    assert (fetch.tool_name, fetch.args) == ("url_context", {"urls": ["https://a"]})
    assert response.provider_details is not None
    assert response.provider_details["grounding_metadata"] == grounding


def test_json_array_stream_form() -> None:
    data = json.dumps([chunk([{"text": "a"}]), chunk([{"text": "b"}], finish="STOP")]).encode()
    assert decode_stream(data).text == "ab"
    with pytest.raises(ResponseDecodeError):
        decode_stream(b"[" + json.dumps(chunk([{"text": "a"}])).encode())
