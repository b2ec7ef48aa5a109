"""The incremental stream decoder: every event kind, error events, truncation and equivalence.

The equivalence test turns every recorded buffered response into the SSE stream the API would have
sent for it and checks that the stream decoder builds the same parts as the buffered decoder.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ferrule.core.conformance import assert_same_response
from ferrule.core.conformance import check_stream
from ferrule.core.conformance import feed_sse
from ferrule.core.errors import BadRequestError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import RateLimitError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.errors import ServerError
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import NativeToolCallPart
from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ThinkingPartDelta
from ferrule.core.model import ToolCallPartDelta
from ferrule.core.sse import SseEvent
from ferrule.providers.anthropic import codec
from tests.support.cassettes import ANTHROPIC_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.provtests import two_parts

START: dict[str, Any] = {
    "type": "message_start",
    "message": {
        "id": "msg_s",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "usage": {
            "input_tokens": 12,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 4,
        },
    },
}
STOP = {"type": "message_stop"}


def delta_event(stop: str = "end_turn", output: int = 9) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def run(*events: dict[str, Any]) -> tuple[list[ModelStreamEvent], ModelResponse]:
    """Every event the decoder yields for `events` (the stream invariants checked), and the response."""
    decoder = codec.StreamDecoder(model_name="requested")
    out: list[ModelStreamEvent] = []
    for e in events:
        out.extend(decoder.feed(SseEvent(event=e["type"], data=json.dumps(e))))
    out.extend(decoder.finish())
    return out, check_stream(out)


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def json_delta(index: int, partial_json: str) -> dict[str, Any]:
    return block_delta(index, {"type": "input_json_delta", "partial_json": partial_json})


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def text_block(index: int, *chunks: str) -> list[dict[str, Any]]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(block_delta(index, {"type": "text_delta", "text": c}) for c in chunks),
        block_stop(index),
    ]


def test_text_stream_events_and_response() -> None:
    events, response = run(START, {"type": "ping"}, *text_block(0, "Hel", "lo"), delta_event(), STOP)
    assert events == [
        PartStartEvent(0, TextPart(content="")),
        PartDeltaEvent(0, TextPartDelta("Hel")),
        PartDeltaEvent(0, TextPartDelta("lo")),
        PartEndEvent(0, TextPart(content="Hello")),
        ResponseCompleted(response),
    ]
    assert response.parts == [TextPart(content="Hello")]
    assert response.finish_reason == "stop"
    assert response.provider_response_id == "msg_s"
    assert response.model_name == "claude-sonnet-4-5-20250929"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (
        16,
        9,
        4,
    )


def test_thinking_signature_and_tool_call_stream() -> None:
    events, response = run(
        START,
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
        block_delta(0, {"type": "signature_delta", "signature": "SIG"}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "t1", "name": "f", "input": {}}),
        json_delta(1, ""),
        json_delta(1, '{"a": '),
        json_delta(1, "1}"),
        block_stop(1),
        delta_event("tool_use"),
        STOP,
    )
    assert events[:3] == [
        PartStartEvent(0, ThinkingPart(content="", provider_name="anthropic")),
        PartDeltaEvent(0, ThinkingPartDelta(content_delta="hmm")),
        PartDeltaEvent(0, ThinkingPartDelta(signature_delta="SIG")),
    ]
    assert PartDeltaEvent(1, ToolCallPartDelta(args_delta='{"a": ')) in events
    assert response.parts == [
        ThinkingPart(content="hmm", signature="SIG", provider_name="anthropic"),
        ToolCallPart(tool_name="f", args={"a": 1}, tool_call_id="t1"),
    ]
    ends = [e.part for e in events if isinstance(e, PartEndEvent)]
    assert ends == response.parts
    assert response.finish_reason == "tool_call"


def test_tool_call_without_input_gets_empty_args_and_invalid_json_is_kept_raw() -> None:
    _, response = run(
        START,
        block_start(0, {"type": "tool_use", "id": "a", "name": "f", "input": {}}),
        block_stop(0),
        block_start(1, {"type": "tool_use", "id": "b", "name": "f", "input": {}}),
        json_delta(1, '{"a": '),
        block_stop(1),
        delta_event("max_tokens"),
        STOP,
    )
    assert [c.args for c in response.tool_calls] == [{}, '{"a": ']
    assert response.finish_reason == "length"


def test_server_tool_input_and_results_arrive_as_whole_parts() -> None:
    _, response = run(
        START,
        block_start(0, {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}),
        json_delta(0, '{"query": "x"}'),
        block_stop(0),
        block_start(1, {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}),
        block_stop(1),
        delta_event(),
        STOP,
    )
    call, result = two_parts(response, NativeToolCallPart, NativeToolReturnPart)
    assert call.args == {"query": "x"}
    assert result.tool_call_id == "s1"


def test_citations_deltas_attach_to_their_text_part() -> None:
    citation = {"type": "web_search_result_location", "url": "https://example.com", "cited_text": "c"}
    _, response = run(
        START,
        block_start(0, {"type": "text", "text": "", "citations": []}),
        block_delta(0, {"type": "citations_delta", "citation": citation}),
        block_delta(0, {"type": "text_delta", "text": "fact"}),
        block_stop(0),
        delta_event(),
        STOP,
    )
    assert response.parts == [TextPart(content="fact", citations=[citation])]


def test_unknown_events_deltas_and_blocks_are_ignored() -> None:
    _, response = run(
        {"type": "future_event", "stuff": 1},
        START,
        {"type": "future_event", "stuff": 2},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "hologram"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta", "x": 1}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "ok"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "brand_new_delta"}},
        {"type": "content_block_stop", "index": 1},
        delta_event(),
        STOP,
        {"type": "content_block_start", "index": 9, "content_block": {"type": "text", "text": "late"}},
    )
    assert response.parts == [TextPart(content="ok")]
    assert response.provider_details == {"finish_reason": "end_turn", "ignored_block_types": ["hologram"]}


@pytest.mark.parametrize(
    ("error_type", "cls"),
    [
        ("overloaded_error", ServerError),
        ("api_error", ServerError),
        ("rate_limit_error", RateLimitError),
        ("invalid_request_error", BadRequestError),
        ("unheard_of_error", ServerError),
    ],
)
def test_error_event_mid_stream_raises_the_mapped_error(error_type: str, cls: type[ProviderError]) -> None:
    error = {"type": "error", "error": {"type": error_type, "message": "Overloaded"}}
    with pytest.raises(cls, match="Overloaded") as info:
        run(START, *text_block(0, "partial"), error)
    assert type(info.value) is cls
    assert info.value.code == error_type


VIOLATIONS: list[tuple[list[dict[str, Any]], str]] = [
    ([], "before message_start"),
    ([START], "before message_stop"),
    ([START, *text_block(0, "cut")], "before message_stop"),
    ([START, *text_block(0, "x"), delta_event()], "before message_stop"),
    ([*text_block(0, "x")], "before message_start"),
    ([START, START], "message_start twice"),
    (
        [
            START,
            {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}},
        ],
        "never started",
    ),
    ([START, {"type": "content_block_stop", "index": 3}], "without starting"),
    (
        [
            START,
            {"type": "content_block_start", "index": -1, "content_block": {"type": "text", "text": ""}},
        ],
        "index",
    ),
    (
        [
            START,
            *text_block(0),
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ],
        "twice",
    ),
    ([START, {"type": "content_block_start", "index": 0, "content_block": "text"}], "not a JSON object"),
    ([{"type": "message_start", "message": []}], "not a JSON object"),
]


@pytest.mark.parametrize(("events", "message"), VIOLATIONS)
def test_protocol_violations_and_truncation_raise(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ResponseDecodeError, match=message):
        run(*events)


def test_malformed_event_data_raises() -> None:
    decoder = codec.StreamDecoder()
    with pytest.raises(ResponseDecodeError, match="not valid JSON"):
        decoder.feed(SseEvent(event="message_start", data='{"type": "message_start", "message": {'))
    with pytest.raises(ResponseDecodeError, match="not a JSON object"):
        codec.StreamDecoder().feed(SseEvent(event="ping", data="[1, 2]"))


def test_decode_stream_of_a_truncated_body_raises() -> None:
    body = sse(START, *text_block(0, "Hello"), delta_event(), STOP)
    assert codec.decode_stream(body).text == "Hello"
    for cut in (0, 10, len(body) // 2, len(body) - 30):
        with pytest.raises(ResponseDecodeError):
            codec.decode_stream(body[:cut])


@pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)
@pytest.mark.parametrize("size", [1, 2, 7, 64, 1000])
def test_awkward_chunk_boundaries_give_the_same_response(size: int) -> None:
    streamed = [
        it for it in iter_interactions("models/cassettes/test_anthropic") if it.is_stream and it.status == 200
    ][:6]
    assert streamed
    for it in streamed:
        data = it.response_bytes
        response = check_stream(feed_sse(codec.StreamDecoder(), data, chunk_sizes=(size,)))
        assert_same_response(response, codec.decode_stream(data))


def _as_stream(body: dict[str, Any]) -> bytes:
    """The SSE stream the Messages API sends for a buffered response `body` (deltas split up)."""
    start: dict[str, Any] = {**body, "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "text":
            events.append(block_start(index, {"type": "text", "text": ""}))
            citations: list[Any] = block.get("citations") or []
            for citation in citations:
                events.append(block_delta(index, {"type": "citations_delta", "citation": citation}))
            text = block["text"]
            for i in range(0, len(text), 7):
                events.append(block_delta(index, {"type": "text_delta", "text": text[i : i + 7]}))
        elif kind == "thinking":
            events.append(block_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
            text = block["thinking"]
            for i in range(0, len(text), 11):
                events.append(block_delta(index, {"type": "thinking_delta", "thinking": text[i : i + 11]}))
            events.append(block_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            events.append(block_start(index, {**block, "input": {}}))
            raw = json.dumps(block["input"])
            for i in range(0, len(raw), 5):
                events.append(json_delta(index, raw[i : i + 5]))
        else:
            events.append(block_start(index, block))
        events.append(block_stop(index))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")},
            "usage": body.get("usage") or {},
        }
    )
    events.append({"type": "message_stop"})
    return sse(*events)


@pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)
def test_every_buffered_cassette_streams_to_the_same_parts() -> None:
    checked = 0
    for it in iter_interactions(*ANTHROPIC_FOLDERS):
        if it.is_stream or it.status != 200 or not it.uri.split("?")[0].endswith("/v1/messages"):
            continue
        buffered = codec.decode_response(it.response_bytes)
        streamed = check_stream(feed_sse(codec.StreamDecoder(), _as_stream(it.response_json)))
        assert_same_response(streamed, buffered)
        checked += 1
    assert checked >= 140
