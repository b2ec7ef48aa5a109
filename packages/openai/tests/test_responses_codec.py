"""The Responses API codec as pure functions: encoding, buffered decoding and the stream decoder."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.errors import UserError
from ferrule.core.messages import AudioUrl
from ferrule.core.messages import BinaryContent
from ferrule.core.messages import CompactionPart
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
from ferrule.core.model import JsonObjectFormat
from ferrule.core.model import JsonSchemaFormat
from ferrule.core.model import ModelCall
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import NativeTool
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.settings import ModelSettings
from ferrule.core.settings import ProviderExtraBody
from ferrule.core.sse import SseEvent
from ferrule.providers.openai import responses_codec
from ferrule.providers.openai.profiles import ResponsesDialect
from ferrule.providers.openai.profiles import openai_responses_profile
from tests.support.provtests import object_tool

GPT5 = openai_responses_profile("gpt-5-mini")
GPT4O = openai_responses_profile("gpt-4o")
WEATHER = object_tool("get_weather", {"city": {"type": "string"}})


def body(call: ModelCall, resolved: Any = GPT5, model: str = "gpt-5-mini", **kwargs: Any) -> dict[str, Any]:
    return json.loads(
        responses_codec.encode_request(
            call, model_name=model, dialect=resolved.dialect, profile=resolved.profile, **kwargs
        )
    )


def ask(*parts: Any, **kwargs: Any) -> ModelCall:
    return ModelCall(messages=[ModelRequest(parts=list(parts) or [UserPromptPart(content="hi")])], **kwargs)


def response_body(output: list[dict[str, Any]], status: str = "completed", **extra: Any) -> bytes:
    return json.dumps(
        {
            "id": "resp_1",
            "object": "response",
            "model": "gpt-5-mini",
            "created_at": 1700000000,
            "status": status,
            "output": output,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 6,
                "input_tokens_details": {"cached_tokens": 2},
                "output_tokens_details": {"reasoning_tokens": 3},
            },
            **extra,
        }
    ).encode()


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "first"}, {"type": "summary_text", "text": "second"}],
    "encrypted_content": "ENC",
}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "phase": "final_answer",
    "content": [
        {
            "type": "output_text",
            "text": "Hello",
            "annotations": [{"type": "url_citation", "url": "https://x.test"}],
        }
    ],
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
    "status": "completed",
}


# --- encoding ------------------------------------------------------------------------------------------


def test_stateless_request_with_instructions_and_encrypted_reasoning() -> None:
    sent = body(ModelCall(instructions="Be brief.", messages=ask().messages))
    assert sent["instructions"] == "Be brief."
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["input"] == [{"role": "user", "content": "hi"}]
    plain = body(ask(), GPT4O, model="gpt-4o")
    assert "include" not in plain  # a model that does not reason
    stored = body(ask(), type(GPT5)(profile=GPT5.profile, dialect=ResponsesDialect(store=True)))
    assert stored["store"] is True
    assert "include" not in stored


def test_history_items() -> None:
    answer = responses_codec.decode_response(response_body([REASONING, MESSAGE, CALL]))
    call = ModelCall(
        messages=[
            ModelRequest(parts=[SystemPromptPart(content="sys"), UserPromptPart(content="q")]),
            answer,
            ModelRequest(
                parts=[
                    ToolReturnPart(tool_name="get_weather", content=21, tool_call_id="call_1"),
                    RetryPromptPart(content="again"),
                ]
            ),
        ],
        tools=[WEATHER],
    )
    items = body(call)["input"]
    assert items[0] == {"role": "system", "content": "sys"}
    assert items[2] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "first"}, {"type": "summary_text", "text": "second"}],
        "encrypted_content": "ENC",
    }
    assert items[3] == {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
        "phase": "final_answer",
    }
    assert items[4] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
        "id": "fc_1",
    }
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "21"}
    assert items[6]["role"] == "user"
    assert items[6]["content"].startswith("again")


def test_foreign_history_is_replayed_portably() -> None:
    answer = responses_codec.decode_response(response_body([REASONING, MESSAGE, CALL]))
    answer.provider_name = "azure"
    items = body(ModelCall(messages=[ModelRequest.user_text_prompt("q"), answer]))["input"]
    assert items[1:] == [
        {"role": "assistant", "content": "Hello"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
    ]


def test_reasoning_without_encrypted_content_is_not_replayed() -> None:
    answer = ModelResponse(
        parts=[ThinkingPart(content="x", id="rs_9", provider_name="openai"), TextPart(content="y")],
        provider_name="openai",
        model_name="gpt-5-mini",
    )
    items = body(ModelCall(messages=[ModelRequest.user_text_prompt("q"), answer]))["input"]
    assert [i.get("type") for i in items] == [None, None]


def test_native_tool_items_are_replayed_to_the_same_model_only() -> None:
    search = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    answer = responses_codec.decode_response(response_body([search, MESSAGE]))
    same = body(ModelCall(messages=[ModelRequest.user_text_prompt("q"), answer]))["input"]
    assert same[1] == search
    answer.model_name = "gpt-5"
    other = body(ModelCall(messages=[ModelRequest.user_text_prompt("q"), answer]))["input"]
    assert all(item.get("type") != "web_search_call" for item in other)


def test_compaction_is_replayed() -> None:
    answer = responses_codec.decode_response(
        response_body([{"type": "compaction", "id": "cmp_1", "encrypted_content": "C"}])
    )
    assert isinstance(answer.parts[0], CompactionPart)
    items = body(ModelCall(messages=[answer, ModelRequest.user_text_prompt("q")]))["input"]
    assert items[0] == {"type": "compaction", "encrypted_content": "C", "id": "cmp_1"}


def test_tools_choice_and_native_tools() -> None:
    sent = body(
        ask(
            tools=[WEATHER],
            native_tools=[
                NativeTool(kind="web_search", options={"search_context_size": "low"}),
                NativeTool(kind="code_execution"),
            ],
            settings=ModelSettings(parallel_tool_calls=True),
        )
    )
    assert sent["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "parameters": {**WEATHER.parameters_json_schema, "additionalProperties": False},
        "strict": True,
    }
    assert sent["tools"][1] == {"type": "web_search", "search_context_size": "low"}
    assert sent["tools"][2] == {"type": "code_interpreter", "container": {"type": "auto"}}
    assert sent["tool_choice"] == "auto"
    assert sent["parallel_tool_calls"] is True
    assert body(ask(tools=[WEATHER], allow_text_output=False))["tool_choice"] == "required"
    assert body(ask(tools=[WEATHER], settings=ModelSettings(tool_choice=["get_weather"])))["tool_choice"] == {
        "type": "function",
        "name": "get_weather",
    }
    with pytest.raises(UserError, match="vector_store_ids"):
        body(ask(native_tools=[NativeTool(kind="file_search")]))
    with pytest.raises(UserError, match="url_context"):
        body(ask(native_tools=[NativeTool(kind="url_context")]))


def test_output_formats_reasoning_and_settings() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    sent = body(
        ask(
            output=JsonSchemaFormat(name="out", schema=schema),
            settings=ModelSettings(
                reasoning_effort="high",
                reasoning_summary="auto",
                max_tokens=50,
                service_tier="flex",
                truncation="auto",
            ),
            cache_key="ck",
        )
    )
    assert sent["text"] == {
        "format": {
            "type": "json_schema",
            "name": "out",
            "schema": {**schema, "additionalProperties": False},
            "strict": True,
        }
    }
    assert sent["reasoning"] == {"effort": "high", "summary": "auto"}
    assert (
        sent["max_output_tokens"],
        sent["service_tier"],
        sent["truncation"],
        sent["prompt_cache_key"],
    ) == (50, "flex", "auto", "ck")
    assert body(ask(output=JsonObjectFormat()))["text"] == {"format": {"type": "json_object"}}
    assert body(ask(settings=ModelSettings(thinking=False)))["reasoning"] == {"effort": "none"}
    logprobs = body(ask(settings=ModelSettings(top_logprobs=2, temperature=0.1)), GPT4O, model="gpt-4o")
    assert logprobs["include"] == ["message.output_text.logprobs"]
    assert logprobs["top_logprobs"] == 2
    for setting in (
        ModelSettings(seed=1),
        ModelSettings(stop_sequences=["x"]),
        ModelSettings(frequency_penalty=0.1),
    ):
        with pytest.raises(UserError, match="Responses API has no"):
            body(ask(settings=setting))
    clash = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"store": True})])
    with pytest.raises(UserError, match="store"):
        body(ask(settings=clash))
    extra = ModelSettings(extra_body=[ProviderExtraBody(provider="openai", body={"safety_identifier": "u"})])
    assert body(ask(settings=extra))["safety_identifier"] == "u"


def test_user_content() -> None:
    png = BinaryContent(data=b"\x89PNG", media_type="image/png")
    pdf = BinaryContent(data=b"%PDF", media_type="application/pdf")
    part = UserPromptPart(
        content=[
            "t",
            png,
            pdf,
            ImageUrl(url="https://x.test/i.png", vendor_metadata={"detail": "high"}),
            DocumentUrl(url="https://x.test/d.pdf"),
            UploadedFile(file_id="file-1", provider_name="openai", media_type="image/png"),
        ]
    )
    content = body(ask(part))["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "t"}
    assert content[1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,iVBORw==",
        "detail": "auto",
    }
    assert content[2] == {
        "type": "input_file",
        "file_data": "data:application/pdf;base64,JVBERg==",
        "filename": "filename.pdf",
    }
    assert content[3] == {"type": "input_image", "image_url": "https://x.test/i.png", "detail": "high"}
    assert content[4] == {"type": "input_file", "file_url": "https://x.test/d.pdf"}
    assert content[5] == {"type": "input_image", "file_id": "file-1", "detail": "auto"}
    with pytest.raises(UserError, match="audio"):
        body(ask(UserPromptPart(content=[AudioUrl(url="https://x.test/a.mp3")])))


# --- buffered decoding -------------------------------------------------------------------------------------


def test_decode_items_and_usage() -> None:
    response = responses_codec.decode_response(response_body([REASONING, MESSAGE, CALL]))
    thinking, text, call = response.parts
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.content, thinking.id, thinking.signature) == ("first\n\nsecond", "rs_1", "ENC")
    assert isinstance(text, TextPart)
    assert text.citations == [{"type": "url_citation", "url": "https://x.test"}]
    assert text.provider_details == {"phase": "final_answer"}
    assert isinstance(call, ToolCallPart)
    assert (call.tool_call_id, call.id) == ("call_1", "fc_1")
    assert response.finish_reason == "tool_call"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (
        10,
        6,
        2,
        3,
    )


def test_native_items() -> None:
    image = base64.b64encode(b"\x89PNG-bytes").decode()
    items = [
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "q", "sources": [{"url": "https://x"}]},
        },
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "status": "completed",
            "code": "print(1)",
            "container_id": "c",
            "outputs": [{"type": "logs", "logs": "1"}],
        },
        {
            "type": "image_generation_call",
            "id": "ig_1",
            "status": "completed",
            "result": image,
            "output_format": "png",
        },
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "wiki",
            "name": "ask",
            "arguments": "{}",
            "output": "answer",
        },
        {"type": "some_future_item", "id": "x_1"},
    ]
    parts = responses_codec.decode_response(response_body(items)).parts
    kinds = [(type(p).__name__, getattr(p, "tool_name", None)) for p in parts]
    assert kinds == [
        ("NativeToolCallPart", "web_search"),
        ("NativeToolReturnPart", "web_search"),
        ("NativeToolCallPart", "code_execution"),
        ("NativeToolReturnPart", "code_execution"),
        ("NativeToolCallPart", "image_generation"),
        ("NativeToolReturnPart", "image_generation"),
        ("FilePart", None),
        ("NativeToolCallPart", "mcp_server:wiki"),
        ("NativeToolReturnPart", "mcp_server:wiki"),
    ]
    search_return = parts[1]
    assert isinstance(search_return, NativeToolReturnPart)
    assert search_return.content["sources"] == [{"url": "https://x"}]
    file = parts[6]
    assert isinstance(file, FilePart)
    assert file.content.data == b"\x89PNG-bytes"
    generated = parts[4]
    assert isinstance(generated, NativeToolCallPart)
    assert generated.provider_details is not None
    assert "result" not in generated.provider_details["item"]


@pytest.mark.parametrize(
    ("status", "details", "finish", "raw"),
    [
        ("completed", None, "stop", "completed"),
        ("incomplete", {"reason": "max_output_tokens"}, "length", "max_output_tokens"),
        ("incomplete", {"reason": "content_filter"}, "content_filter", "content_filter"),
        ("cancelled", None, "error", "cancelled"),
    ],
)
def test_statuses(status: str, details: Any, finish: str, raw: str) -> None:
    response = responses_codec.decode_response(
        response_body([MESSAGE], status=status, incomplete_details=details)
    )
    assert response.finish_reason == finish
    assert response.raw_finish_reason == raw


def test_failed_and_unfinished_responses_raise() -> None:
    with pytest.raises(ServerError, match="boom"):
        responses_codec.decode_response(
            response_body([], status="failed", error={"code": "server_error", "message": "boom"})
        )
    with pytest.raises(RateLimitError):
        responses_codec.decode_response(
            response_body([], status="failed", error={"code": "rate_limit_exceeded", "message": "x"})
        )
    with pytest.raises(ResponseDecodeError, match="queued"):
        responses_codec.decode_response(response_body([], status="queued"))
    with pytest.raises(BadRequestError):
        responses_codec.decode_response(b'{"error": {"message": "bad", "type": "invalid_request_error"}}')


def test_refusal_is_a_content_filter_finish() -> None:
    refusal = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't."}],
    }
    response = responses_codec.decode_response(response_body([refusal]))
    assert response.finish_reason == "content_filter"
    assert response.provider_details is not None
    assert response.provider_details["refusal"] == "I can't."
    assert ContentFilterError.category.value == "content_filter"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b"{}",
        b'{"output": {}}',
        b"{oops",
        b'{"output": [{"type": "function_call", "call_id": "c"}]}',
        b'{"output": [{"type": "message", "content": [{"type": "output_text"}]}]}',
        b'{"output": [{"type": "image_generation_call", "result": "!!notbase64"}]}',
    ],
)
def test_malformed_bodies(data: bytes) -> None:
    with pytest.raises(ResponseDecodeError):
        responses_codec.decode_response(data)


# --- streaming -------------------------------------------------------------------------------------------


def stream_events() -> list[dict[str, Any]]:
    return [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []},
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "fir",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 0,
            "delta": "st",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "summary_index": 1,
            "delta": "second",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
        {"type": "response.output_item.added", "output_index": 1, "item": {**MESSAGE, "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": "Hel"},
        {"type": "response.brand_new_event_kind", "item_id": "msg_1", "whatever": [1, 2]},
        {"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": "lo"},
        {"type": "response.output_item.done", "output_index": 1, "item": MESSAGE},
        {"type": "response.output_item.added", "output_index": 2, "item": {**CALL, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"city":'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"Paris"}'},
        {"type": "response.output_item.done", "output_index": 2, "item": CALL},
        {"type": "response.completed", "response": json.loads(response_body([REASONING, MESSAGE, CALL]))},
    ]


def test_stream_matches_buffered() -> None:
    decoder = responses_codec.ResponsesStreamDecoder()
    events: list[ModelStreamEvent] = []
    for event in stream_events():
        events.extend(decoder.feed(SseEvent(data=json.dumps(event))))
    events.extend(decoder.finish())
    final = events[-1]
    assert isinstance(final, ResponseCompleted)
    buffered = responses_codec.decode_response(response_body([REASONING, MESSAGE, CALL]))
    assert final.response.parts == buffered.parts
    assert final.response.usage == buffered.usage
    assert sum(isinstance(e, PartStartEvent) for e in events) == 3


def test_stream_items_only_in_the_final_event() -> None:
    final = {"type": "response.completed", "response": json.loads(response_body([MESSAGE, CALL]))}
    response = responses_codec.decode_stream(sse(final))
    assert response.text == "Hello"
    assert response.tool_calls[0].args == '{"city":"Paris"}'


def test_stream_text_only_in_done_item() -> None:
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {**MESSAGE, "content": []}},
        {"type": "response.output_item.done", "output_index": 0, "item": MESSAGE},
        {"type": "response.completed", "response": json.loads(response_body([MESSAGE]))},
    ]
    assert responses_codec.decode_stream(sse(*events)).text == "Hello"


@pytest.mark.parametrize(
    "events",
    [
        [],
        [{"type": "response.created", "response": {"id": "r", "status": "in_progress"}}],
        [{"type": "response.output_text.delta", "item_id": "m", "delta": "partial"}],
    ],
)
def test_truncated_streams_raise(events: list[dict[str, Any]]) -> None:
    with pytest.raises(ResponseDecodeError, match="ended before"):
        responses_codec.decode_stream(sse(*events))


def test_stream_failure_events() -> None:
    with pytest.raises(RateLimitError):
        responses_codec.decode_stream(sse({"type": "error", "code": "rate_limit_exceeded", "message": "x"}))
    with pytest.raises(ServerError):
        responses_codec.decode_stream(
            sse({"type": "error", "error": {"type": "server_error", "message": "x"}})
        )
    with pytest.raises(ServerError):
        responses_codec.decode_stream(
            sse({"type": "response.failed", "response": {"status": "failed", "error": {"message": "x"}}})
        )
    completed = {"type": "response.completed", "response": json.loads(response_body([MESSAGE]))}
    with pytest.raises(ResponseDecodeError, match="twice"):
        responses_codec.decode_stream(sse(completed, completed))


def test_incomplete_stream_terminal() -> None:
    terminal = {
        "type": "response.incomplete",
        "response": json.loads(
            response_body([MESSAGE], status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        ),
    }
    response = responses_codec.decode_stream(sse(terminal))
    assert response.finish_reason == "length"
    assert response.state == "incomplete"
