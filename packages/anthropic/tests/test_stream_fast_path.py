"""The stream decoder's text-delta fast path gives exactly what its full path gives.

Every recorded Messages stream (the shared PydanticAI cassettes, read in place) is decoded with the
fast path and without it, as recorded and with its text deltas changed to point at other blocks or
to carry odd values: the events, the final response and any error must be the same, and the fast
path must have taken the recorded text deltas. The batch path (`feed_many`, a network read's
events at once) gives what `feed` gives one by one, on the same streams in batches of several
sizes, errors included.
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any

import msgspec
import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.sse import SseEvent
from ferrule.providers.anthropic import _decode
from ferrule.providers.anthropic.codec import StreamDecoder
from tests.support.cassettes import ANTHROPIC_FOLDERS
from tests.support.cassettes import SKIP_REASON
from tests.support.cassettes import Interaction
from tests.support.cassettes import cassette_root
from tests.support.cassettes import iter_interactions
from tests.support.fast_path import BATCH_SIZES
from tests.support.fast_path import Counted
from tests.support.fast_path import batched_failure
from tests.support.fast_path import comparable
from tests.support.fast_path import decode_all
from tests.support.fast_path import decode_batched
from tests.support.fast_path import rewritten

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

STREAMS = [
    it
    for it in iter_interactions(*ANTHROPIC_FOLDERS)
    if it.is_stream and it.status < 300 and it.uri.split("?")[0].endswith("/messages")
]


def _decode_all(
    body: bytes, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> tuple[list[ModelStreamEvent], tuple[type[ProviderError], str] | None, int]:
    counted = Counted(_decode._TEXT_DELTA if fast else None)
    with monkeypatch.context() as patch:
        patch.setattr(_decode, "_TEXT_DELTA", counted)
        events, error = decode_all(StreamDecoder(), body)
    return events, error, counted.decoded


def _mutated(data: dict[str, Any], n: int) -> dict[str, Any]:
    if data.get("type") != "content_block_delta":
        return data
    index = data.get("index")
    odd: list[Any] = [index, index, index, 1, 7, -1, True, "0"]
    data = {**data, "index": odd[n % len(odd)]}
    if n % 9 == 4:
        data["delta"] = {"type": "text_delta", "text": 3}
    return data


@pytest.mark.parametrize("mutate", [False, True], ids=["recorded", "changed"])
@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_fast_path_is_the_full_path(it: Interaction, mutate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    body = rewritten(it.response_bytes, _mutated) if mutate else it.response_bytes
    started = datetime.now(UTC)
    fast_events, fast_error, decoded = _decode_all(body, monkeypatch, fast=True)
    full_events, full_error, never = _decode_all(body, monkeypatch, fast=False)
    assert fast_error == full_error
    assert comparable(fast_events, started) == comparable(full_events, started)
    assert never == 0
    if not mutate and fast_error is None:
        # Every recorded text delta after the block's start took the fast path.
        deltas = sum(
            isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta) for e in fast_events
        )
        assert decoded <= deltas


def test_the_fast_path_takes_the_recorded_text_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = deltas = 0
    for it in STREAMS:
        events, _, count = _decode_all(it.response_bytes, monkeypatch, fast=True)
        decoded += count
        deltas += sum(isinstance(e, PartDeltaEvent) and isinstance(e.delta, TextPartDelta) for e in events)
    assert deltas > 50
    assert decoded > deltas // 2


def _sse(event: str, data: dict[str, Any]) -> SseEvent:
    return SseEvent(event=event, data=msgspec.json.encode({"type": event, **data}).decode())


def _text(index: int, text: str) -> SseEvent:
    return _sse("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": text}})


def _body(events: list[SseEvent]) -> bytes:
    return b"".join(f"event: {e.event}\ndata: {e.data}\n\n".encode() for e in events)


_START = [
    _sse("message_start", {"message": {"id": "msg_1", "model": "m", "role": "assistant", "content": []}}),
    _sse("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
]
_END = [
    _sse("content_block_stop", {"index": 0}),
    _sse("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    _sse("message_stop", {}),
]


def _same_batched(body: bytes) -> None:
    started = datetime.now(UTC)
    one_events, one_error = decode_all(StreamDecoder(), body)
    for size in BATCH_SIZES:
        events, error = decode_batched(StreamDecoder(), body, size)
        assert error == one_error, size
        assert comparable(events, started) == comparable(one_events, started), size


@pytest.mark.parametrize("mutate", [False, True], ids=["recorded", "changed"])
@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_the_batch_path_is_feed_one_by_one(it: Interaction, mutate: bool) -> None:
    _same_batched(rewritten(it.response_bytes, _mutated) if mutate else it.response_bytes)


def test_the_batch_path_is_feed_one_by_one_across_blocks() -> None:
    thinking = _sse(
        "content_block_start", {"index": 1, "content_block": {"type": "thinking", "thinking": ""}}
    )
    second = _sse("content_block_start", {"index": 2, "content_block": {"type": "text", "text": ""}})
    middle = [_text(0, f"a{i}") for i in range(9)] + [thinking, _text(1, "odd"), second]
    middle += [_text(2 - i % 2 * 2, f"b{i}") for i in range(9)]  # two open text blocks in turn
    middle += [_text(0, ""), _sse("ping", {}), _text(2, "c")]
    stops = [_sse("content_block_stop", {"index": 1}), _sse("content_block_stop", {"index": 2})]
    body = _body(_START + middle + stops + _END + [_text(0, "after the stop")])
    _same_batched(body)
    events, error = decode_batched(StreamDecoder(), body, None)
    assert error is None
    done = events[-1]
    assert isinstance(done, ResponseCompleted)
    assert (done.response.text or "").startswith("a0a1")
    # A delta of a block never started fails the same way, what preceded it kept.
    _same_batched(_body(_START + [_text(0, f"a{i}") for i in range(20)] + [_text(5, "x"), _text(0, "y")]))


def test_a_failing_event_mid_batch_leaves_the_events_before_it() -> None:
    failing = _sse("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})
    before = _START + [_text(0, f"t{i}") for i in range(20)]
    out = batched_failure(StreamDecoder, before, failing, _text(0, "late"))
    assert len(out) == 21  # the part's start and its twenty deltas
