"""Conformance helpers for provider codecs: replay recorded traffic and check the stream invariants.

For the tests of any provider package, first-party or not; nothing here imports a test framework.
A failed check raises [`ConformanceError`][ferrule.core.conformance.ConformanceError], an
`AssertionError`, so test runners report it as a failed assertion.

```python
from ferrule.core.conformance import load_cassette, replay

for interaction in load_cassette(Path("cassettes/test_foo.yaml")):
    response = replay(FooCodec(model_name="foo-1"), interaction)  # buffered or streamed, checked
    assert response.text == "..."
```

* [`load_cassette`][ferrule.core.conformance.load_cassette] reads a vcrpy cassette (YAML; needs
  PyYAML, the `[conformance]` extra of ferrule-core) into
  [`Interaction`][ferrule.core.conformance.Interaction]s.
* [`replay`][ferrule.core.conformance.replay] decodes a recorded response through a
  [`Codec`][ferrule.core.codec.Codec]; a streamed one is fed whole and again split at awkward
  boundaries, and both runs must obey [`check_stream`][ferrule.core.conformance.check_stream] and
  give the same response.
* [`feed_sse`][ferrule.core.conformance.feed_sse] runs one SSE body through a stream decoder, in
  chunks of the sizes given, and returns every event.
* [`assert_same_response`][ferrule.core.conformance.assert_same_response] compares two decodes,
  ignoring what legitimately differs between them (timestamps, and generated IDs if asked).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import cast

import msgspec

from .codec import Codec
from .codec import StreamDecoder
from .codec import completed_response
from .install import install_hint
from .messages import ModelResponse
from .model import ModelStreamEvent
from .model import PartDeltaEvent
from .model import PartEndEvent
from .model import PartStartEvent
from .model import ResponseCompleted
from .sse import SseEvent
from .sse import SseParser

__all__ = [
    "AWKWARD_CHUNK_SIZES",
    "ConformanceError",
    "Interaction",
    "assert_same_response",
    "check_stream",
    "feed_sse",
    "iter_cassettes",
    "load_cassette",
    "replay",
]

AWKWARD_CHUNK_SIZES: tuple[int, ...] = (1, 3, 17, 64, 5)
"""Chunk sizes that split lines, events and UTF-8 sequences anywhere."""


class ConformanceError(AssertionError):
    """A codec broke the contract of [`ferrule.core.codec`][ferrule.core.codec]."""


def _fail(message: str) -> ConformanceError:
    return ConformanceError(message)


# --- recorded traffic ------------------------------------------------------------------------------


class Interaction(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded request/response pair of a cassette."""

    cassette: Path
    """The file it came from."""
    index: int
    """Its position in the cassette."""
    method: str
    """HTTP method of the request."""
    uri: str
    """Request URI."""
    request_json: Any
    """The parsed JSON request body, or `None`."""
    request_text: str | None
    """The raw request body when it was not JSON."""
    status: int
    """Response status code."""
    response_headers: dict[str, str]
    """Response headers (lower-case names, first value)."""
    response_json: Any
    """The parsed JSON response body, or `None` for streamed and other raw bodies."""
    response_text: str | None
    """The raw response body (the SSE text of a streamed response)."""

    @property
    def is_stream(self) -> bool:
        """Whether the response is a server-sent event stream."""
        ctype = self.response_headers.get("content-type", "")
        return "event-stream" in ctype or (
            self.response_text is not None and self.response_text.lstrip().startswith(("data:", "event:"))
        )

    @property
    def response_bytes(self) -> bytes:
        """The response body as bytes (JSON re-encoded when it was stored parsed)."""
        if self.response_text is not None:
            return self.response_text.encode()
        return json.dumps(self.response_json).encode()

    @property
    def id(self) -> str:
        """A readable ID: `<folder>/<cassette>#<index>`."""
        return f"{self.cassette.parent.name}/{self.cassette.stem}#{self.index}"


def _mapping(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _first(value: Any) -> str:
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return str(items[0]) if items else ""
    return str(value)


def _body_text(body: Any) -> str | None:
    if isinstance(body, dict):
        body = _mapping(body).get("string")
    if body is None:
        return None
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return str(body)


def _status(value: Any) -> int:
    return int(_mapping(value).get("code", 200)) if isinstance(value, dict) else int(value or 200)


def _interaction(path: Path, index: int, item: Any) -> Interaction:
    request = _mapping(_mapping(item).get("request"))
    response = _mapping(_mapping(item).get("response"))
    headers = {str(k).lower(): _first(v) for k, v in _mapping(response.get("headers")).items()}
    # PydanticAI's recorder stores JSON bodies parsed (`parsed_body`); plain vcrpy keeps them as text.
    response_json = response.get("parsed_body")
    response_text = None if response_json is not None else _body_text(response.get("body"))
    if response_text is not None and "json" in headers.get("content-type", ""):
        with contextlib.suppress(ValueError):
            response_json, response_text = json.loads(response_text), None
    request_json = request.get("parsed_body")
    return Interaction(
        cassette=path,
        index=index,
        method=str(request.get("method", "")),
        uri=str(request.get("uri", "")),
        request_json=request_json,
        request_text=None if request_json is not None else _body_text(request.get("body")),
        status=_status(response.get("status", {})),
        response_headers=headers,
        response_json=response_json,
        response_text=response_text,
    )


@functools.cache
def load_cassette(path: Path) -> tuple[Interaction, ...]:
    """Every interaction of one vcrpy cassette (YAML), in order; read once per path."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - the test environments have it
        raise ImportError(
            "reading cassettes needs PyYAML: " + install_hint("ferrule-core[conformance]")
        ) from None
    with path.open("rb") as f:
        data = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    items: Any = _mapping(data).get("interactions")
    listed = cast("list[Any]", items) if isinstance(items, list) else []
    return tuple(_interaction(path, i, item) for i, item in enumerate(listed))


def iter_cassettes(root: Path, *folders: str) -> Iterator[Interaction]:
    """Every interaction of the cassettes in `folders` under `root` (recursively), in path order."""
    for folder in folders:
        base = root / folder
        if base.exists():
            for path in sorted(base.rglob("*.yaml")):
                yield from load_cassette(path)


# --- the checks ----------------------------------------------------------------------------------


def check_stream(events: Sequence[ModelStreamEvent]) -> ModelResponse:
    """Check the stream invariants of `events` (a whole stream) and return its completed response.

    Exactly one `ResponseCompleted`, the last event; part indices start at 0 and grow by one; every
    delta and end names a part that started and has not ended; every part ends; the completed
    response has one part per started part, equal to the part its end event carried.
    """
    completed = [i for i, event in enumerate(events) if isinstance(event, ResponseCompleted)]
    if completed != [len(events) - 1]:
        raise _fail(
            f"a stream must end with exactly one ResponseCompleted; found {len(completed)} "
            f"at positions {completed} of {len(events)} events"
        )
    started = 0
    ended: dict[int, Any] = {}
    for position, event in enumerate(events[:-1]):
        match event:
            case PartStartEvent(index=index):
                if index != started:
                    raise _fail(f"event {position}: part {index} started, but the next index is {started}")
                started += 1
            case PartDeltaEvent(index=index) | PartEndEvent(index=index):
                if not 0 <= index < started:
                    raise _fail(f"event {position}: {type(event).__name__} for part {index}, never started")
                if index in ended:
                    raise _fail(f"event {position}: {type(event).__name__} for part {index} after its end")
                if isinstance(event, PartEndEvent):
                    ended[index] = event.part
            case ResponseCompleted():  # only the last event, checked above
                pass
    response = completed_response(events)
    missing = sorted(set(range(started)) - set(ended))
    if missing:
        raise _fail(f"parts {missing} started but never ended")
    if len(response.parts) != started:
        raise _fail(f"{started} parts were streamed, but the completed response has {len(response.parts)}")
    for index, part in enumerate(response.parts):
        if part != ended[index]:
            raise _fail(f"part {index} of the completed response differs from its end event")
    return response


def feed_sse(
    decoder: StreamDecoder, data: bytes, *, chunk_sizes: Sequence[int] | None = None, batched: bool = False
) -> list[ModelStreamEvent]:
    """Run the SSE body `data` through `decoder` and `finish` it; returns every event it produced.

    The body reaches the SSE parser whole, or with `chunk_sizes` in chunks whose sizes cycle
    through them (a stream arriving in awkward network reads). With `batched`, the events each
    chunk completes go to the decoder's `feed_many` in one call when it has one (a
    [`BatchStreamDecoder`][ferrule.core.codec.BatchStreamDecoder]), as `CodecModel` streams them;
    otherwise each goes to `feed`.
    """
    if chunk_sizes is not None and (not chunk_sizes or min(chunk_sizes) < 1):
        raise ValueError(f"chunk sizes must be positive, not {list(chunk_sizes)}")
    feed_many: Callable[[Sequence[SseEvent], list[ModelStreamEvent]], None] | None = (
        getattr(decoder, "feed_many", None) if batched else None
    )
    parser = SseParser()
    events: list[ModelStreamEvent] = []

    def feed(batch: list[SseEvent]) -> None:
        if feed_many is not None:
            if batch:  # as `CodecModel`: a read that completes no event gives none
                feed_many(batch, events)
            return
        for event in batch:
            events.extend(decoder.feed(event))

    sizes = itertools.cycle(chunk_sizes or (max(len(data), 1),))
    position = 0
    while position < len(data):
        size = next(sizes)
        feed(parser.feed(data[position : position + size]))
        position += size
    feed(parser.close())
    events.extend(decoder.finish())
    return events


def _comparable(value: Any, ignore: Collection[str]) -> Any:
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {k: _comparable(v, ignore) for k, v in items if k not in ignore}
    if isinstance(value, list):
        return [_comparable(v, ignore) for v in cast("list[Any]", value)]
    return value


def assert_same_response(
    actual: ModelResponse, expected: ModelResponse, *, ignore: Collection[str] = ("timestamp",)
) -> None:
    """Fail unless the two responses are equal, fields named in `ignore` left out at every level.

    Pass `ignore=("timestamp", "tool_call_id")` for a codec that generates IDs for calls the
    provider sent without one.
    """
    mine, theirs = (_comparable(msgspec.to_builtins(r), ignore) for r in (actual, expected))
    if mine != theirs:
        raise _fail(f"the responses differ:\n  {mine!r}\n  {theirs!r}")


def replay(
    codec: Codec,
    interaction: Interaction,
    *,
    chunk_sizes: Sequence[int] = AWKWARD_CHUNK_SIZES,
    ignore: Collection[str] = ("timestamp",),
) -> ModelResponse:
    """Decode the recorded response of `interaction` through `codec` and return it.

    A buffered body goes through `codec.decode`. A streamed one goes through a fresh stream decoder
    twice, whole and in chunks of `chunk_sizes`; both runs must obey
    [`check_stream`][ferrule.core.conformance.check_stream] and give the same response (compared
    as by [`assert_same_response`][ferrule.core.conformance.assert_same_response] with `ignore`).
    A decoder with `feed_many` is run twice more through it, each read's events at once: it must
    give the same events as `feed` one by one (`ignore`d fields left out).
    Errors the codec raises (a recorded error body, a truncated stream) propagate unchanged.
    """
    body = interaction.response_bytes
    if not interaction.is_stream:
        return codec.decode(body)
    events = feed_sse(codec.stream_decoder(), body)
    whole = check_stream(events)
    split = check_stream(feed_sse(codec.stream_decoder(), body, chunk_sizes=chunk_sizes))
    assert_same_response(split, whole, ignore=ignore)
    if hasattr(codec.stream_decoder(), "feed_many"):
        for sizes in (None, chunk_sizes):
            batched = feed_sse(codec.stream_decoder(), body, chunk_sizes=sizes, batched=True)
            if _comparable(msgspec.to_builtins(batched), ignore) != _comparable(
                msgspec.to_builtins(events), ignore
            ):
                raise _fail("the stream decoder's feed_many gave other events than feed one by one")
    return whole
