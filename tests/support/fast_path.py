"""Helpers for the tests that decode a recorded stream with a decoder's fast path and without it.

`Counted` stands in for a module's `FastPathDecoder` (counting what it decoded, or decoding
nothing), `decode_all` runs a body through a stream decoder (`decode_batched` through its batch
path, a few events at a time), `comparable` makes two runs' events comparable, and `rewritten`
gives a body with each JSON event changed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from typing import cast

import msgspec
import pytest

from ferrule.core.codec import BatchStreamDecoder
from ferrule.core.codec import StreamDecoder
from ferrule.core.errors import ProviderError
from ferrule.core.model import ModelStreamEvent
from ferrule.core.sse import SseEvent
from ferrule.core.sse import SseParser

__all__ = ["BATCH_SIZES", "Counted", "comparable", "decode_all", "decode_batched", "rewritten"]

BATCH_SIZES = (1, 2, 7, 16, 17, 40, None)
"""Batch sizes `decode_batched` is run with in the equivalence tests (`None`: the whole body)."""


class Counted:
    """A fast-path decoder that counts what it tried and decoded; without `inner`, one that never decodes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.tried = 0
        self.decoded = 0

    def decode(self, data: str) -> Any:
        self.tried += 1
        found = None if self.inner is None else self.inner.decode(data)
        self.decoded += found is not None
        return found


def decode_all(
    decoder: StreamDecoder, body: bytes
) -> tuple[list[ModelStreamEvent], tuple[type[ProviderError], str] | None]:
    """Every event `decoder` gives for the SSE `body`, and the error it ended with, if any."""
    events: list[ModelStreamEvent] = []
    parser = SseParser()
    try:
        for event in parser.feed(body) + parser.close():
            events.extend(decoder.feed(event))
        events.extend(decoder.finish())
    except ProviderError as exc:
        return events, (type(exc), str(exc))
    return events, None


def decode_batched(
    decoder: BatchStreamDecoder, body: bytes, size: int | None
) -> tuple[list[ModelStreamEvent], tuple[type[ProviderError], str] | None]:
    """`decode_all` through `decoder.feed_many`, `size` events at a time (`None`: all at once).

    The events are those `feed_many` left in its list when it raised, so they compare with
    `decode_all`'s one by one.
    """
    events: list[ModelStreamEvent] = []
    parser = SseParser()
    try:
        parsed = parser.feed(body) + parser.close()
        step = size or max(len(parsed), 1)
        for start in range(0, len(parsed), step):
            decoder.feed_many(parsed[start : start + step], events)
        events.extend(decoder.finish())
    except ProviderError as exc:
        return events, (type(exc), str(exc))
    return events, None


def _stamped(node: Any, started: datetime) -> Any:
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


def comparable(events: list[ModelStreamEvent], started: datetime) -> Any:
    """`events` as builtins, each `timestamp` taken when decoding (at or after `started`) made `"now"`."""
    return _stamped(msgspec.to_builtins(events), started)


def rewritten(body: bytes, mutate: Callable[[dict[str, Any], int], dict[str, Any]]) -> bytes:
    """`body` with the JSON object of its `n`-th event replaced by `mutate(object, n)`."""
    parser = SseParser()
    out: list[bytes] = []
    for n, event in enumerate(parser.feed(body) + parser.close()):
        data: Any
        try:
            data = msgspec.json.decode(event.data)
        except msgspec.DecodeError:
            data = None
        changed: SseEvent = event
        if isinstance(data, dict):
            text = msgspec.json.encode(mutate(cast("dict[str, Any]", data), n)).decode()
            changed = msgspec.structs.replace(event, data=text)
        named = f"event: {changed.event}\n" if changed.event != "message" else ""
        out.append(f"{named}data: {changed.data}\n\n".encode())
    return b"".join(out)


def batched_failure(
    new: Callable[[], BatchStreamDecoder], before: list[SseEvent], failing: SseEvent, after: SseEvent
) -> list[ModelStreamEvent]:
    """What `feed_many` kept of a read that fails at `failing`, after checking that it raised the
    error `feed` raises for that event and kept exactly what `feed` gave for the events before it."""
    expected: list[ModelStreamEvent] = []
    decoder = new()
    for event in before:
        expected += decoder.feed(event)
    with pytest.raises(ProviderError) as one:
        decoder.feed(failing)
    out: list[ModelStreamEvent] = []
    with pytest.raises(ProviderError) as batched:
        new().feed_many([*before, failing, after], out)
    assert (type(batched.value), str(batched.value)) == (type(one.value), str(one.value))
    assert out == expected
    return out
