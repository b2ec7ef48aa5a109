"""Fuzz the Chat Completions and Responses decoders, seeded with real recorded bodies.

Each example takes a recorded body (buffered JSON or the SSE text of a stream) and damages it:
byte-level edits (truncation, flipped, inserted and deleted bytes) or structural edits (a JSON
value anywhere in the document, or in one stream event, replaced by arbitrary JSON; events dropped
or duplicated). The decoder must either succeed or raise `ResponseDecodeError`; the only other
allowed outcome is the typed error of an `error` object the damaged document really contains.
Example counts are bounded and the runs are derandomized, so the suite stays fast and repeatable.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from ferrule.core.errors import ProviderError
from ferrule.core.errors import ResponseDecodeError
from ferrule.core.messages import ModelResponse
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai import responses_codec
from tests.support.cassettes import OPENAI_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.fuzz import JSON_VALUES
from tests.support.fuzz import byte_damage
from tests.support.fuzz import json_paths
from tests.support.fuzz import replace_at

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

DIRS = OPENAI_FOLDERS
MAX_SEED_BYTES = 64 * 1024  # keeps each example fast; large bodies add nothing the small ones lack


def _seeds(api: str, stream: bool) -> list[bytes]:
    seeds: list[bytes] = []
    if cassette_root() is None:
        return [b"{}"]
    for it in iter_interactions(*DIRS):
        path = urlparse(it.uri).path
        kind = (
            "chat"
            if path.endswith("/chat/completions")
            else "responses"
            if path.endswith("/responses")
            else None
        )
        if (
            kind == api
            and it.is_stream == stream
            and it.status == 200
            and len(it.response_bytes) <= MAX_SEED_BYTES
        ):
            seeds.append(it.response_bytes)
    return seeds


def _json_seeds(seeds: list[bytes]) -> list[bytes]:
    """The seeds that are JSON documents (a few recordings are deliberately not)."""
    valid: list[bytes] = []
    for seed in seeds:
        try:
            json.loads(seed)
        except ValueError:
            continue
        valid.append(seed)
    return valid or [b"{}"]


CHAT_BUFFERED = _seeds("chat", False)
CHAT_STREAM = _seeds("chat", True)
RESPONSES_BUFFERED = _seeds("responses", False)
RESPONSES_STREAM = _seeds("responses", True)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def json_damage(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    document = json.loads(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        paths = json_paths(document)
        document = replace_at(document, draw(st.sampled_from(paths)), draw(JSON_VALUES))
    return json.dumps(document).encode()


@st.composite
def stream_damage(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    text = draw(st.sampled_from(seeds)).decode()
    blocks = [b for b in text.split("\n\n") if b.strip()]
    op = draw(st.sampled_from(["event", "drop", "duplicate", "truncate"]))
    index = draw(st.integers(0, len(blocks) - 1))
    if op == "drop":
        del blocks[index]
    elif op == "duplicate":
        blocks.insert(index, blocks[index])
    elif op == "truncate":
        del blocks[index:]
    else:
        lines = blocks[index].split("\n")
        for position, line in enumerate(lines):
            if line.startswith("data:") and "[DONE]" not in line:
                document = json.loads(line[5:])
                paths = json_paths(document)
                document = replace_at(document, draw(st.sampled_from(paths)), draw(JSON_VALUES))
                lines[position] = "data: " + json.dumps(document)
        blocks[index] = "\n".join(lines)
    return ("\n\n".join(blocks) + "\n\n").encode()


def _must_succeed_or_fail_typed(decode: Any, data: bytes) -> None:
    try:
        result = decode(data)
    except ResponseDecodeError:
        return
    except ProviderError:
        # An in-band error is only legitimate when the damaged document still holds an error report.
        assert b"error" in data or b"failed" in data
        return
    assert isinstance(result, ModelResponse)


@FUZZ
@given(byte_damage(CHAT_BUFFERED))
def test_chat_buffered_bytes(data: bytes) -> None:
    _must_succeed_or_fail_typed(chat_codec.decode_response, data)


@FUZZ
@given(json_damage(_json_seeds(CHAT_BUFFERED)))
def test_chat_buffered_structure(data: bytes) -> None:
    _must_succeed_or_fail_typed(chat_codec.decode_response, data)


@FUZZ
@given(byte_damage(CHAT_STREAM))
def test_chat_stream_bytes(data: bytes) -> None:
    _must_succeed_or_fail_typed(chat_codec.decode_stream, data)


@FUZZ
@given(stream_damage(CHAT_STREAM))
def test_chat_stream_structure(data: bytes) -> None:
    _must_succeed_or_fail_typed(chat_codec.decode_stream, data)


@FUZZ
@given(byte_damage(RESPONSES_BUFFERED))
def test_responses_buffered_bytes(data: bytes) -> None:
    _must_succeed_or_fail_typed(responses_codec.decode_response, data)


@FUZZ
@given(json_damage(_json_seeds(RESPONSES_BUFFERED)))
def test_responses_buffered_structure(data: bytes) -> None:
    _must_succeed_or_fail_typed(responses_codec.decode_response, data)


@FUZZ
@given(byte_damage(RESPONSES_STREAM))
def test_responses_stream_bytes(data: bytes) -> None:
    _must_succeed_or_fail_typed(responses_codec.decode_stream, data)


@FUZZ
@given(stream_damage(RESPONSES_STREAM))
def test_responses_stream_structure(data: bytes) -> None:
    _must_succeed_or_fail_typed(responses_codec.decode_stream, data)


def test_seeds_are_real_recordings() -> None:
    for seeds in (CHAT_BUFFERED, CHAT_STREAM, RESPONSES_BUFFERED, RESPONSES_STREAM):
        assert len(seeds) >= 3
