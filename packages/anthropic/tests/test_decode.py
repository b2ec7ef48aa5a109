"""Decoding buffered Messages API responses: parts, finish reasons, usage, errors, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core.errors import AuthenticationError
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ProviderTimeoutError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.messages import CompactionPart
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.providers.anthropic import codec


def message(content: list[dict[str, Any]], **fields: Any) -> bytes:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    body.update(fields)
    return json.dumps(body).encode()


def test_text_thinking_and_tool_use() -> None:
    r = codec.decode_response(
        message(
            [
                {"type": "thinking", "thinking": "let me see", "signature": "sig=="},
                {"type": "text", "text": "Calling."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "f",
                    "input": {"x": 1},
                    "caller": {"type": "direct"},
                },
            ],
            stop_reason="tool_use",
        ),
        model_name="requested",
    )
    thinking, text, call = r.parts
    assert thinking == ThinkingPart(content="let me see", signature="sig==", provider_name="anthropic")
    assert text == TextPart(content="Calling.")
    assert call == ToolCallPart(tool_name="f", args={"x": 1}, tool_call_id="toolu_1")
    assert r.model_name == "claude-sonnet-4-5-20250929"
    assert r.provider_response_id == "msg_1"
    assert r.finish_reason == "tool_call"
    assert r.provider_details == {"finish_reason": "tool_use"}


def test_programmatic_callers_are_kept_for_replay() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srv_1"}
    r = codec.decode_response(
        message([{"type": "tool_use", "id": "t", "name": "f", "input": {}, "caller": caller}])
    )
    call = r.tool_calls[0]
    assert call.provider_details == {"caller": caller}
    assert call.provider_name == "anthropic"


def test_model_name_falls_back_to_the_requested_one() -> None:
    body = json.loads(message([]))
    del body["model"]
    assert codec.decode_response(json.dumps(body).encode(), model_name="claude-x").model_name == "claude-x"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_call"),
        ("refusal", "content_filter"),
        ("pause_turn", "other"),
        ("compaction", "stop"),
        ("something_new", "other"),
    ],
)
def test_stop_reasons_are_normalized_and_kept_raw(raw: str, expected: str) -> None:
    r = codec.decode_response(
        message(
            [{"type": "text", "text": "x"}],
            stop_reason=raw,
            stop_sequence="END" if raw == "stop_sequence" else None,
        )
    )
    assert r.finish_reason == expected
    assert r.raw_finish_reason == raw
    assert r.state == ("suspended" if raw == "pause_turn" else "complete")
    if raw == "stop_sequence":
        assert r.provider_details is not None
        assert r.provider_details["stop_sequence"] == "END"


def test_missing_stop_reason_has_no_finish_reason() -> None:
    r = codec.decode_response(message([], stop_reason=None))
    assert r.finish_reason is None
    assert r.provider_details is None


def test_usage_is_normalized_to_inclusive_totals() -> None:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 400,
        "cache_read_input_tokens": 1000,
        "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 100},
        "output_tokens": 50,
        "output_tokens_details": {"thinking_tokens": 20},
        "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 0},
        "iterations": [
            {"type": "compaction", "input_tokens": 7, "output_tokens": 2},
            {"type": "message", "input_tokens": 3, "output_tokens": 50},
        ],
        "service_tier": "standard",
    }
    r = codec.decode_response(message([], usage=usage))
    u = r.usage
    assert u.input_tokens == 3 + 400 + 1000 + 7
    assert (u.cache_write_tokens, u.cache_read_tokens, u.cache_write_1h_tokens) == (400, 1000, 100)
    assert u.output_tokens == 52
    assert u.reasoning_tokens == 20
    assert u.output_reasoning_tokens == 20
    assert u.details == {
        "reasoning_tokens": 20,
        "web_search_requests": 2,
        "compaction_input_tokens": 7,
        "compaction_output_tokens": 2,
    }
    assert u.cache_reported


def test_usage_without_cache_counters_is_marked_unknown() -> None:
    r = codec.decode_response(message([], usage={"input_tokens": 5, "output_tokens": 1}))
    assert (r.usage.input_tokens, r.usage.output_tokens) == (5, 1)
    assert r.usage.cache_reported is False
    body = json.loads(message([]))
    del body["usage"]
    assert codec.decode_response(json.dumps(body).encode()).usage.cache_reported is False


def test_server_tools_mcp_and_compaction_become_native_parts() -> None:
    r = codec.decode_response(
        message(
            [
                {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "s1",
                    "content": [{"type": "web_search_result", "url": "u"}],
                },
                {
                    "type": "server_tool_use",
                    "id": "s2",
                    "name": "tool_search_tool_regex",
                    "input": {"pattern": "x"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "s2",
                    "content": {"type": "tool_search_tool_result_error", "error_code": "unavailable"},
                },
                {"type": "mcp_tool_use", "id": "m1", "name": "ask", "server_name": "wiki", "input": {"q": 1}},
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": "m1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "no"}],
                },
                {"type": "compaction", "content": "summary", "encrypted_content": "enc"},
            ]
        )
    )
    search, search_result, tsearch, tsearch_result, mcp, mcp_result, compaction = r.parts
    assert isinstance(search, NativeToolCallPart)
    assert search.provider_details is None
    assert isinstance(search_result, NativeToolReturnPart)
    assert search_result.outcome == "success"
    assert isinstance(tsearch, NativeToolCallPart)
    assert tsearch.tool_name == "tool_search"
    assert tsearch.provider_details == {"anthropic_tool_name": "tool_search_tool_regex"}
    assert isinstance(tsearch_result, NativeToolReturnPart)
    assert tsearch_result.outcome == "failed"
    assert isinstance(mcp, NativeToolCallPart)
    assert mcp.tool_name == "mcp_server:wiki"
    assert isinstance(mcp_result, NativeToolReturnPart)
    assert mcp_result.tool_name == "mcp_server:wiki"
    assert mcp_result.outcome == "failed"
    assert mcp_result.content == {"content": [{"type": "text", "text": "no"}], "is_error": True}
    assert compaction == CompactionPart(
        content="summary", provider_name="anthropic", provider_details={"encrypted_content": "enc"}
    )


def test_unknown_blocks_are_ignored_and_noted() -> None:
    r = codec.decode_response(message([{"type": "hologram", "data": 1}, {"type": "text", "text": "hi"}]))
    assert r.parts == [TextPart(content="hi")]
    assert r.provider_details == {"finish_reason": "end_turn", "ignored_block_types": ["hologram"]}


def test_container_and_refusal_details_are_kept() -> None:
    r = codec.decode_response(
        message(
            [],
            stop_reason="refusal",
            container={"id": "container_1", "expires_at": "x"},
            stop_details={"type": "refusal", "category": "cyber"},
        )
    )
    assert r.finish_reason == "content_filter"
    assert r.provider_details == {
        "finish_reason": "refusal",
        "container_id": "container_1",
        "stop_details": {"type": "refusal", "category": "cyber"},
    }


@pytest.mark.parametrize(
    ("error_type", "cls"),
    [
        ("overloaded_error", ServerError),
        ("api_error", ServerError),
        ("rate_limit_error", RateLimitError),
        ("authentication_error", AuthenticationError),
        ("permission_error", AuthenticationError),
        ("invalid_request_error", BadRequestError),
        ("not_found_error", BadRequestError),
        ("request_too_large", BadRequestError),
        ("timeout_error", ProviderTimeoutError),
        ("mystery_error", ServerError),
    ],
)
def test_error_envelopes_raise_the_mapped_error(error_type: str, cls: type[ProviderError]) -> None:
    body = {"type": "error", "error": {"type": error_type, "message": "details here"}, "request_id": "req_1"}
    with pytest.raises(cls, match="details here") as info:
        codec.decode_response(json.dumps(body).encode())
    assert type(info.value) is cls
    assert info.value.code == error_type


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b'{"content": [',
        b"[]",
        b'"text"',
        b'{"type": "message"}',
        b'{"content": "text"}',
        b'{"content": [1]}',
        b'{"content": [{"text": "no type"}]}',
        b'{"content": [{"type": "text", "text": 5}]}',
        b'{"content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}',
        b'{"content": [{"type": "tool_use", "name": "f", "input": {}}]}',
        b'{"content": [{"type": "thinking", "thinking": "x", "signature": 1}]}',
        b'{"content": [{"type": "redacted_thinking"}]}',
        b'{"content": [{"type": "server_tool_use", "id": "s", "input": {}}]}',
        b'{"content": [{"type": "text", "text": "x", "citations": "bad"}]}',
        b'{"content": [], "stop_reason": 3}',
        b'{"content": [], "model": ["x"]}',
        b"\xff\xfe",
    ],
)
def test_malformed_bodies_raise_response_decode_error(body: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        codec.decode_response(body)


def test_deeply_nested_body_is_rejected_by_the_bounded_decoder() -> None:
    body = b'{"content": [' + b"[" * 200 + b"]" * 200 + b"]}"
    with pytest.raises(ResponseDecodeError, match="max_depth"):
        codec.decode_response(body)


def test_error_from_body_without_details_is_a_server_error() -> None:
    error = codec.error_from_body(None, status=529)
    assert isinstance(error, ServerError)
    assert error.status_code == 529
