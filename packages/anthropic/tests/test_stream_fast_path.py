"""The stream decoder's text-delta fast path gives exactly what its full path gives.

Every recorded Messages stream (the shared PydanticAI cassettes, read in place) is decoded with the
fast path and without it, as recorded and with its text deltas changed to point at other blocks or
to carry odd values: the events, the final response and any error must be the same, and the fast
path must have taken the recorded text deltas.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.model import ModelStreamEvent, PartDeltaEvent, TextPartDelta
from ferrule.providers.anthropic import _decode
from ferrule.providers.anthropic.codec import StreamDecoder
from tests.support.cassettes import (
    ANTHROPIC_FOLDERS,
    SKIP_REASON,
    Interaction,
    cassette_root,
    iter_interactions,
)
from tests.support.fast_path import Counted, comparable, decode_all, rewritten

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
