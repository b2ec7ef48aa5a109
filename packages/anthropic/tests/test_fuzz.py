"""Fuzz the decoders: recorded bodies mutated byte-wise, and well-formed JSON of the wrong shape.

Whatever the input, the buffered decoder, `decode_stream` and the incremental `StreamDecoder` either
succeed or raise `ResponseDecodeError`; no other exception escapes and nothing hangs. Seeds are the
recorded cassette bodies; runs are bounded (a few seconds) and derandomized.
"""

from __future__ import annotations

import json
from typing import Any
from typing import cast

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core.codec import completed_response
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelResponse
from ferrule.core.sse import SseEvent
from ferrule.providers.anthropic import codec
from tests.support.cassettes import ANTHROPIC_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

FOLDERS = ANTHROPIC_FOLDERS


def _seeds(stream: bool) -> list[bytes]:
    found = [
        it.response_bytes
        for it in iter_interactions(*FOLDERS)
        if it.status == 200 and it.is_stream == stream and it.uri.split("?")[0].endswith("/v1/messages")
    ]
    # Small bodies first: mutations of a short body reach more of its structure per example.
    return sorted(found, key=len)[:24]


BUFFERED = _seeds(stream=False) if cassette_root() else []
STREAMED = _seeds(stream=True) if cassette_root() else []
SNIPPETS = [
    b"null",
    b"[]",
    b"{}",
    b"1",
    b"-1",
    b'"x"',
    b"true",
    b"1e999",
    b'{"type": 3}',
    b"[[[[",
    b"\xff",
    b"\\u0000",
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["truncate", "flip", "delete", "insert", "splice"]))
        if action == "truncate":
            del data[at:]
        elif action == "flip":
            data[at] = draw(st.integers(0, 255))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            # Replace a JSON value-ish run (up to the next comma or brace) with another value.
            end = at
            while end < len(data) and data[end] not in b",}]":
                end += 1
            data[at:end] = draw(st.sampled_from(SNIPPETS))
    return bytes(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
BLOCK_TYPES = [
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "mcp_tool_use",
    "mcp_tool_result",
    "web_search_tool_result",
    "compaction",
    "mystery",
]
DELTA_TYPES = [
    "text_delta",
    "thinking_delta",
    "signature_delta",
    "input_json_delta",
    "citations_delta",
    "compaction_delta",
    "mystery_delta",
]


@st.composite
def shaped_blocks(draw: st.DrawFn) -> dict[str, Any]:
    block: dict[str, Any] = {"type": draw(st.sampled_from(BLOCK_TYPES))}
    for key in draw(
        st.lists(
            st.sampled_from(
                [
                    "text",
                    "thinking",
                    "signature",
                    "data",
                    "id",
                    "name",
                    "input",
                    "server_name",
                    "tool_use_id",
                    "content",
                    "citations",
                    "caller",
                    "is_error",
                    "encrypted_content",
                ]
            ),
            max_size=6,
        )
    ):
        block[key] = draw(json_values)
    return block


@st.composite
def shaped_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "m", "model": "claude-x", "content": [], "usage": draw(json_values)},
        }
    ]
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(
            st.sampled_from(
                [
                    "content_block_start",
                    "content_block_delta",
                    "content_block_stop",
                    "message_delta",
                    "ping",
                    "mystery",
                ]
            )
        )
        event: dict[str, Any] = {"type": kind, "index": draw(st.integers(0, 3) | json_values)}
        if kind == "content_block_start":
            event["content_block"] = draw(shaped_blocks() | json_values)
        elif kind == "content_block_delta":
            delta: dict[str, Any] = {"type": draw(st.sampled_from(DELTA_TYPES))}
            delta.update(
                draw(
                    st.dictionaries(
                        st.sampled_from(
                            ["text", "thinking", "signature", "partial_json", "citation", "content"]
                        ),
                        json_values,
                        max_size=2,
                    )
                )
            )
            event["delta"] = delta if draw(st.booleans()) else draw(json_values)
        elif kind == "message_delta":
            event["delta"] = draw(json_values)
            event["usage"] = draw(json_values)
        events.append(event)
    if draw(st.booleans()):
        events.append({"type": "message_stop"})
    return events


FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=cast("list[HealthCheck]", list(HealthCheck)),
)
# Generating nested JSON costs more than decoding it; fewer examples keep these to a few seconds.
FUZZ_SHAPED = settings(FUZZ, max_examples=80)


def _ok_or_decode_error(decode: Any, data: bytes) -> None:
    try:
        result = decode(data)
    except ResponseDecodeError:
        return
    assert isinstance(result, ModelResponse)


@FUZZ
@given(data=st.data())
def test_buffered_decoder_on_mutated_cassette_bodies(data: st.DataObject) -> None:
    _ok_or_decode_error(codec.decode_response, data.draw(mutated(BUFFERED)))


@FUZZ
@given(data=st.data())
def test_stream_decoder_on_mutated_cassette_streams(data: st.DataObject) -> None:
    _ok_or_decode_error(codec.decode_stream, data.draw(mutated(STREAMED)))


@FUZZ_SHAPED
@given(
    content=st.lists(shaped_blocks() | json_values, max_size=5),
    extra=st.dictionaries(
        st.sampled_from(["stop_reason", "usage", "model", "id", "container", "stop_details"]), json_values
    ),
)
def test_buffered_decoder_on_wrongly_shaped_json(content: list[Any], extra: dict[str, Any]) -> None:
    body = json.dumps({"type": "message", "content": content, **extra}).encode()
    _ok_or_decode_error(codec.decode_response, body)


@FUZZ_SHAPED
@given(events=shaped_events())
def test_incremental_decoder_on_wrongly_shaped_events(events: list[dict[str, Any]]) -> None:
    decoder = codec.StreamDecoder()
    try:
        for event in events:
            decoder.feed(SseEvent(event=event["type"], data=json.dumps(event)))
        response = completed_response(decoder.finish())
    except ResponseDecodeError:
        return
    assert isinstance(response, ModelResponse)
