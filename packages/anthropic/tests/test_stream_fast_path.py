"""The stream decoder's text-delta fast path gives exactly what its full path gives.

Every recorded Messages stream (the shared PydanticAI cassettes, read in place) is decoded with the
fast path and without it, as recorded and with its text deltas changed to point at other blocks or
to carry odd values: the events, the final response and any error must be the same, and the fast
path must have taken the recorded text deltas.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import msgspec
import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.model import ModelStreamEvent, PartDeltaEvent, TextPartDelta
from ferrule.core.sse import SseEvent, SseParser
from ferrule.providers.anthropic import _decode
from ferrule.providers.anthropic.codec import StreamDecoder
from tests.support.cassettes import (
    ANTHROPIC_FOLDERS,
    SKIP_REASON,
    Interaction,
    cassette_root,
    iter_interactions,
)

pytestmark = pytest.mark.skipif(cassette_root() is None, reason=SKIP_REASON)

STREAMS = [
    it
    for it in iter_interactions(*ANTHROPIC_FOLDERS)
    if it.is_stream and it.status < 300 and it.uri.split("?")[0].endswith("/messages")
]


class _Counted:
    """The fast-path decoder, counting what it decoded; or, without one, a decoder that never decodes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.decoded = 0

    def decode(self, data: str) -> Any:
        found = None if self.inner is None else self.inner.decode(data)
        self.decoded += found is not None
        return found


def _decode_all(
    body: bytes, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> tuple[list[ModelStreamEvent], tuple[type[ProviderError], str] | None, int]:
    counted = _Counted(_decode._TEXT_DELTA if fast else None)
    with monkeypatch.context() as patch:
        patch.setattr(_decode, "_TEXT_DELTA", counted)
        decoder = StreamDecoder()
        events: list[ModelStreamEvent] = []
        parser = SseParser()
        try:
            for event in parser.feed(body) + parser.close():
                events.extend(decoder.feed(event))
            events.extend(decoder.finish())
        except ProviderError as exc:
            return events, (type(exc), str(exc)), counted.decoded
    return events, None, counted.decoded


def _stamped(node: Any, started: datetime) -> Any:
    """`node` with each `timestamp` taken when the stream was decoded (not sent) made `"now"`."""
    if isinstance(node, dict):
        items = cast("dict[str, Any]", node)
        return {
            key: "now"
            if key == "timestamp" and isinstance(value, str) and datetime.fromisoformat(value) >= started
            else _stamped(value, started)
            for key, value in items.items()
        }
    if isinstance(node, list):
        return [_stamped(value, started) for value in cast("list[Any]", node)]
    return node


def _mutated(data: dict[str, Any], n: int) -> dict[str, Any]:
    if data.get("type") != "content_block_delta":
        return data
    index = data.get("index")
    odd: list[Any] = [index, index, index, 1, 7, -1, True, "0"]
    data = {**data, "index": odd[n % len(odd)]}
    if n % 9 == 4:
        data["delta"] = {"type": "text_delta", "text": 3}
    return data


def _body(it: Interaction, mutate: bool) -> bytes:
    if not mutate:
        return it.response_bytes
    parser = SseParser()
    out: list[bytes] = []
    for n, event in enumerate(parser.feed(it.response_bytes) + parser.close()):
        data: Any
        try:
            data = msgspec.json.decode(event.data)
        except msgspec.DecodeError:
            data = None
        changed: SseEvent = event
        if isinstance(data, dict):
            text = msgspec.json.encode(_mutated(cast("dict[str, Any]", data), n)).decode()
            changed = msgspec.structs.replace(event, data=text)
        out.append(f"event: {changed.event}\ndata: {changed.data}\n\n".encode())
    return b"".join(out)


@pytest.mark.parametrize("mutate", [False, True], ids=["recorded", "changed"])
@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_fast_path_is_the_full_path(it: Interaction, mutate: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    body = _body(it, mutate)
    started = datetime.now(UTC)
    fast_events, fast_error, decoded = _decode_all(body, monkeypatch, fast=True)
    full_events, full_error, never = _decode_all(body, monkeypatch, fast=False)
    assert fast_error == full_error
    assert _stamped(msgspec.to_builtins(fast_events), started) == _stamped(
        msgspec.to_builtins(full_events), started
    )
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
