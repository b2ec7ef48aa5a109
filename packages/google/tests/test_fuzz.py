"""Fuzzing the decoders with recorded Gemini bodies as seeds (bounded, deterministic).

Whatever the bytes, the decoders either return a complete response (with a finish reason) or raise
`ResponseDecodeError` — or, when the mutated body still says so, the typed error it carries
(`ContentFilterError` for a filter verdict, the mapped `ProviderError` for an `error` object). No
other exception, no hang, no empty success.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core.conformance import check_stream
from ferrule.core.conformance import feed_sse
from ferrule.core.errors import ContentFilterError
from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.providers.google.codec import StreamDecoder
from ferrule.providers.google.codec import decode_response
from ferrule.providers.google.codec import decode_stream
from tests.support.cassettes import GOOGLE_FOLDERS
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.fuzz import JSON_VALUES
from tests.support.fuzz import byte_damage
from tests.support.fuzz import json_paths
from tests.support.fuzz import parent_of

MAX_SEED_BYTES = 48 * 1024
FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _seeds() -> tuple[list[bytes], list[bytes]]:
    buffered: list[bytes] = []
    streamed: list[bytes] = []
    for it in iter_interactions(*GOOGLE_FOLDERS):
        if "enerateContent" not in it.uri:
            continue
        data = it.response_bytes
        if len(data) > MAX_SEED_BYTES:
            continue
        (streamed if it.is_stream else buffered).append(data)
    # Hand-written seeds cover the rare shapes even without the shared recordings.
    buffered += [
        b'{"promptFeedback": {"blockReason": "SAFETY"}}',
        b'{"candidates": [{"content": {"parts": [{"text": "a", "thought": true}, {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "U0lH"}]}, "finishReason": "STOP"}]}',
        b'{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}',
    ]
    streamed += [
        b'data: {"candidates": [{"content": {"parts": [{"text": "He"}]}}]}\r\n\r\n'
        b'data: {"candidates": [{"content": {"parts": [{"text": "llo", "thoughtSignature": "U0lH"}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1}}\r\n\r\n'
    ]
    return buffered, streamed


BUFFERED, STREAMED = _seeds()
RECORDED = cassette_root() is not None


def _acceptable(exc: ProviderError, data: bytes) -> bool:
    if isinstance(exc, ResponseDecodeError):
        return True
    if isinstance(exc, ContentFilterError):
        return b"blockReason" in data or b"finishReason" in data
    return b"error" in data


def _outcome(decode: Any, data: bytes) -> Any:
    """The decoded response, or the `ProviderError` raised (any other exception propagates)."""
    try:
        return decode(data)
    except ProviderError as exc:
        return exc


def _check(decode: Any, data: bytes) -> None:
    outcome = _outcome(decode, data)
    if isinstance(outcome, ProviderError):
        assert _acceptable(outcome, data), repr(outcome)
    else:
        assert outcome.finish_reason is not None
        assert outcome.raw_finish_reason is not None


WIRE_KEYS = st.sampled_from(
    [
        "candidates",
        "content",
        "parts",
        "text",
        "thought",
        "thoughtSignature",
        "functionCall",
        "args",
        "name",
        "id",
        "inlineData",
        "data",
        "mimeType",
        "executableCode",
        "codeExecutionResult",
        "toolCall",
        "toolResponse",
        "finishReason",
        "usageMetadata",
        "promptTokenCount",
        "groundingMetadata",
        "promptFeedback",
        "blockReason",
        "error",
        "index",
    ]
)


@st.composite
def json_mutations(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    document = json.loads(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        paths = json_paths(document)
        path = draw(st.sampled_from(paths[:500]))
        replacement = draw(JSON_VALUES)
        if not path:
            document = replacement
            continue
        parent = parent_of(document, path)
        if isinstance(parent, dict) and draw(st.booleans()):
            parent[draw(WIRE_KEYS)] = replacement
        else:
            parent[path[-1]] = replacement
    return json.dumps(document).encode()


@FUZZ
@given(byte_damage(BUFFERED))
def test_buffered_bytes(data: bytes) -> None:
    _check(decode_response, data)


@FUZZ
@given(json_mutations(BUFFERED))
def test_buffered_structure(data: bytes) -> None:
    _check(decode_response, data)


@FUZZ
@given(byte_damage(STREAMED))
def test_streamed_bytes(data: bytes) -> None:
    _check(decode_stream, data)


@FUZZ
@given(st.sampled_from(STREAMED), st.lists(st.integers(1, 200), min_size=1, max_size=40), st.integers(0, 3))
def test_streamed_incrementally(data: bytes, sizes: list[int], cut: int) -> None:
    """The incremental path (SSE parser + StreamDecoder) with any chunking, possibly cut short; a
    stream that decodes keeps the stream invariants."""
    if cut:
        data = data[: len(data) * cut // 4]

    def run(data: bytes) -> Any:
        return check_stream(feed_sse(StreamDecoder(), data, chunk_sizes=sizes))

    _check(run, data)


@pytest.mark.skipif(not RECORDED, reason="seeds from the shared recordings are absent")
def test_seed_corpus_is_real() -> None:
    assert len(BUFFERED) >= 50
    assert len(STREAMED) >= 5
