"""The stream decoders' fast paths give exactly what their full paths give, on every recorded stream.

The Chat Completions decoder tries a chunk as a text-only delta first, the Responses decoder an
event as a text delta; anything that does not fit goes the full way. Each recorded stream (the
shared PydanticAI cassettes, read in place) is decoded with the fast path and without it, as
recorded and with fields changed from chunk to chunk: the events, the final response and any
error must be the same, and the fast path must have taken most text deltas. The batch path
(`feed_many`, a network read's events at once) gives what `feed` gives one by one, on the same
streams in batches of several sizes, errors included.
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any
from typing import cast
from urllib.parse import urlparse

import msgspec
import pytest

from ferrule.core.errors import ProviderError
from ferrule.core.messages import TextPart
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import ResponseCompleted
from ferrule.core.model import TextPartDelta
from ferrule.core.sse import SseEvent
from ferrule.providers.openai import chat_codec
from ferrule.providers.openai import responses_codec
from tests.support.cassettes import OPENAI_FOLDERS
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


def _api(it: Interaction) -> str | None:
    path = urlparse(it.uri).path
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


STREAMS = [it for it in iter_interactions(*OPENAI_FOLDERS) if it.is_stream and _api(it) is not None]


_FAST = {"chat": "_TEXT_CHUNK", "responses": "_FAST_EVENT"}


def _decode(
    api: str | None, body: bytes, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> tuple[list[ModelStreamEvent], tuple[type[ProviderError], str] | None, Counted]:
    module: Any = chat_codec if api == "chat" else responses_codec
    counted = Counted(getattr(module, _FAST[api or "chat"]) if fast else None)
    with monkeypatch.context() as patch:
        patch.setattr(module, _FAST[api or "chat"], counted)
        decoder = module.ChatStreamDecoder() if api == "chat" else module.ResponsesStreamDecoder()
        events, error = decode_all(decoder, body)
    return events, error, counted


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_fast_path_is_the_full_path(it: Interaction, monkeypatch: pytest.MonkeyPatch) -> None:
    started = datetime.now(UTC)
    fast_events, fast_error, _ = _decode(_api(it), it.response_bytes, monkeypatch, fast=True)
    full_events, full_error, never = _decode(_api(it), it.response_bytes, monkeypatch, fast=False)
    assert fast_error == full_error
    assert comparable(fast_events, started) == comparable(full_events, started)
    assert never.decoded == 0
    if _api(it) == "chat":
        # Tried from the second chunk on, given up after a few chunks that do not fit, tried once more.
        assert never.tried <= 2 * chat_codec._FAST_MISSES


def test_the_fast_paths_take_most_text_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    # Over all recordings: most text deltas of both APIs are decoded on the fast path.
    for api in ("chat", "responses"):
        decoded = deltas = 0
        for it in STREAMS:
            if _api(it) != api:
                continue
            events, _, counted = _decode(_api(it), it.response_bytes, monkeypatch, fast=True)
            decoded += counted.decoded
            done = [e.response for e in events if isinstance(e, ResponseCompleted)]
            parts = done[0].parts if done else []
            text_indexes = {i for i, part in enumerate(parts) if isinstance(part, TextPart)}
            deltas += sum(isinstance(e, PartDeltaEvent) and e.index in text_indexes for e in events)
        assert deltas > 200
        assert decoded > deltas // 2, (api, decoded, deltas)


_ROUTING = ("id", "created", "model", "service_tier", "provider")


def _mutated_chat(data: Any, n: int) -> Any:
    """Chunk `n` of a stream changed where the fast path must track state exactly as the full one:
    the response's ID, time, model, tier and upstream come only from text chunks after the first
    (the first set ID and time, the last the others), and some choices take odd values."""
    data = {key: value for key, value in data.items() if key not in _ROUTING}
    choices = data.get("choices")
    if n == 0 or not isinstance(choices, list):
        return data
    items = cast("list[Any]", choices)
    if len(items) != 1 or not isinstance(items[0], dict):
        return data
    first: dict[str, Any] = {**cast("dict[str, Any]", items[0])}
    delta = first.get("delta")
    text_only = isinstance(delta, dict) and set(cast("dict[str, Any]", delta)) <= {"content", "role"}
    if n % 5 == 3:
        first["index"] = 1
    elif n % 7 == 4:
        first["finish_reason"] = "length"
    elif n % 11 == 5:
        first["delta"] = {"content": ["not", "text"]}
    elif n % 13 == 6:
        first["delta"] = {**first.get("delta", {}), "role": "assistant", "refusal": None}
    elif text_only:
        data.update(id=f"id{n}", created=1_700_000_000 + n, model=f"m{n}", provider=f"up{n}")
        if n % 2:
            data["service_tier"] = f"tier{n}"
    data["choices"] = [first]
    return data


def _mutated_responses(data: Any, n: int) -> Any:
    if data.get("type") != "response.output_text.delta":
        return data
    data = {**data, "content_index": n % 2}
    if n % 5 == 1:
        data["item_id"] = ""
    if n % 7 == 2:
        data.pop("item_id", None)
    if n % 9 == 3:
        data["delta"] = ""
    if n % 11 == 4:
        data["content_index"] = True
    if n % 3 == 2:
        data.pop("content_index")
    return data


@pytest.mark.parametrize(
    "it", [it for it in STREAMS if it.status < 300 and it.response_text], ids=lambda it: it.id
)
def test_fast_path_is_the_full_path_as_fields_change(
    it: Interaction, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recording with fields that change from chunk to chunk, appear late or take odd values.
    body = rewritten(it.response_bytes, _mutated_chat if _api(it) == "chat" else _mutated_responses)
    started = datetime.now(UTC)
    fast_events, fast_error, _ = _decode(_api(it), body, monkeypatch, fast=True)
    full_events, full_error, _ = _decode(_api(it), body, monkeypatch, fast=False)
    assert fast_error == full_error
    assert comparable(fast_events, started) == comparable(full_events, started)


def test_text_deltas_of_two_contents_of_one_item_make_two_parts() -> None:
    # The fast path keeps the last delta's key: a delta of another content index of the same
    # output item starts (or continues) that content's own part.
    def delta(index: int, text: str) -> SseEvent:
        body = {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "content_index": index,
            "delta": text,
        }
        return SseEvent(event="response.output_text.delta", data=msgspec.json.encode(body).decode())

    decoder = responses_codec.ResponsesStreamDecoder()
    for event in (delta(0, "a"), delta(0, "b"), delta(1, "c"), delta(0, "d"), delta(1, "e")):
        decoder.feed(event)
    done: dict[str, Any] = {"type": "response.completed", "response": {"status": "completed", "output": []}}
    decoder.feed(SseEvent(event="response.completed", data=msgspec.json.encode(done).decode()))
    events = decoder.finish()
    assert isinstance(events[-1], ResponseCompleted)
    assert [p.content for p in events[-1].response.parts if isinstance(p, TextPart)] == ["abd", "ce"]


def _chat_body(deltas: list[dict[str, Any]], **extra: Any) -> bytes:
    chunks = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta}], **extra} for delta in deltas
    ]
    chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return (
        b"".join(b"data: " + msgspec.json.encode(chunk) + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    )


def test_the_chat_fast_path_is_tried_again_once_text_follows_reasoning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thinking = [{"reasoning_content": f"r{i} "} for i in range(20)]
    text = [{"content": f"t{i} "} for i in range(20)]
    body = _chat_body(thinking + text)
    started = datetime.now(UTC)
    events, error, counted = _decode("chat", body, monkeypatch, fast=True)
    assert error is None
    # 8 reasoning chunks tried; the first text chunk on the full path; the other 19, the last
    # chunk and `[DONE]` tried, all but `[DONE]` decoded.
    assert (counted.tried, counted.decoded) == (chat_codec._FAST_MISSES + 21, 20)
    assert comparable(events, started) == comparable(
        _decode("chat", body, monkeypatch, fast=False)[0], started
    )


def test_the_chat_fast_path_gives_up_on_chunks_that_never_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    # Usage on every chunk: tried 8 times, once more from a text chunk, then not again.
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    body = _chat_body([{"content": f"t{i} "} for i in range(100)], usage=usage)
    _, error, counted = _decode("chat", body, monkeypatch, fast=True)
    assert error is None
    assert (counted.tried, counted.decoded) == (2 * chat_codec._FAST_MISSES, 0)
    calls = [{"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}]}]
    calls += [{"tool_calls": [{"index": 0, "function": {"arguments": "x"}}]} for _ in range(100)]
    _, error, counted = _decode("chat", _chat_body(calls), monkeypatch, fast=True)
    assert error is None
    assert (counted.tried, counted.decoded) == (chat_codec._FAST_MISSES, 0)


def _decoder(api: str | None) -> chat_codec.ChatStreamDecoder | responses_codec.ResponsesStreamDecoder:
    return chat_codec.ChatStreamDecoder() if api == "chat" else responses_codec.ResponsesStreamDecoder()


def _same_batched(api: str | None, body: bytes) -> None:
    """`feed_many` in batches of every size gives what `feed` gives one by one (errors too)."""
    started = datetime.now(UTC)
    one_events, one_error = decode_all(_decoder(api), body)
    expected = comparable(one_events, started)
    for size in BATCH_SIZES:
        events, error = decode_batched(_decoder(api), body, size)
        assert error == one_error, size
        assert comparable(events, started) == expected, size


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_the_batch_path_is_feed_one_by_one(it: Interaction) -> None:
    _same_batched(_api(it), it.response_bytes)


@pytest.mark.parametrize(
    "it", [it for it in STREAMS if it.status < 300 and it.response_text], ids=lambda it: it.id
)
def test_the_batch_path_is_feed_one_by_one_as_fields_change(it: Interaction) -> None:
    body = rewritten(it.response_bytes, _mutated_chat if _api(it) == "chat" else _mutated_responses)
    _same_batched(_api(it), body)


def test_the_chat_batch_path_follows_the_fast_path_giving_up_and_trying_again() -> None:
    thinking = [{"reasoning_content": f"r{i} "} for i in range(20)]
    text = [{"content": f"t{i} "} for i in range(20)]
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    for body in (
        _chat_body(thinking + text),
        _chat_body(text + thinking + text + [{}] * 3 + text),
        _chat_body(text, usage=usage),
        _chat_body([{"content": ""}, *text, {"content": ""}, {"content": None}]),
    ):
        _same_batched("chat", body)
        done = decode_batched(chat_codec.ChatStreamDecoder(), body, None)[0][-1]
        assert isinstance(done, ResponseCompleted)
        assert done.response.text == "".join(d["content"] or "" for d in text) * body.count(b'"t0 "')


def _sse(data: Any) -> SseEvent:
    return SseEvent(data=data if isinstance(data, str) else msgspec.json.encode(data).decode())


def _chat_chunk(content: str) -> SseEvent:
    return _sse({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": content}}]})


def _responses_delta(text: str, item_id: str = "msg_1", index: int = 0) -> SseEvent:
    body = {"type": "response.output_text.delta", "item_id": item_id, "content_index": index, "delta": text}
    return _sse(body)


_FAILING = {
    "chat": (
        [_chat_chunk(f"t{i} ") for i in range(20)],
        _sse({"error": {"message": "overloaded", "type": "server_error"}}),
        _chat_chunk("after"),
    ),
    "responses": (
        [_responses_delta(f"t{i} ") for i in range(20)],
        _sse({"type": "error", "code": "server_error", "message": "overloaded"}),
        _responses_delta("after"),
    ),
}


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_failing_event_mid_batch_leaves_the_events_before_it(api: str) -> None:
    before, failing, after = _FAILING[api]
    out = batched_failure(lambda: _decoder(api), before, failing, after)
    assert len([e for e in out if isinstance(e, PartDeltaEvent)]) == 20


def test_the_batch_path_keeps_each_content_part_of_an_item_apart() -> None:
    keys = [("msg_1", 0), ("msg_1", 0), ("msg_1", 1), ("msg_1", 1), ("msg_1", 0), ("msg_2", 0), ("msg_1", 1)]
    keys = [(item, index) for item, index in keys for _ in range(3)]  # a read long enough to batch
    events = [_responses_delta(f"{n % 10}", item, index) for n, (item, index) in enumerate(keys)]
    done: dict[str, Any] = {"type": "response.completed", "response": {"status": "completed", "output": []}}
    events.append(_sse(done))
    expected: list[ModelStreamEvent] = []
    decoder = responses_codec.ResponsesStreamDecoder()
    for event in events:
        expected += decoder.feed(event)
    expected += decoder.finish()
    batched = responses_codec.ResponsesStreamDecoder()
    out: list[ModelStreamEvent] = []
    batched.feed_many(events, out)
    out += batched.finish()
    assert msgspec.to_builtins(out[:-1]) == msgspec.to_builtins(expected[:-1])
    final = out[-1]
    assert isinstance(final, ResponseCompleted)
    assert [p.content for p in final.response.parts if isinstance(p, TextPart)] == [
        "012345234",
        "678901890",
        "567",
    ]


def test_a_subclass_feed_sees_every_event_of_a_batch() -> None:
    seen: list[str] = []

    class Logged(chat_codec.ChatStreamDecoder):
        def feed(self, event: SseEvent) -> list[ModelStreamEvent]:
            seen.append(event.data)
            return super().feed(event)

    events = [_chat_chunk(f"t{i} ") for i in range(20)]
    out: list[ModelStreamEvent] = []
    Logged().feed_many(events, out)
    assert seen == [event.data for event in events]
    assert len(out) == 21  # the part's start, then a delta each


class _Batches:
    """A module's fast-path decoder, with the lengths of the lists it was given at once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.one = 0
        self.lists: list[int] = []

    def decode(self, data: str) -> Any:
        self.one += 1
        return self.inner.decode(data)

    def decode_each(self, datas: list[str]) -> list[Any]:
        self.lists.append(len(datas))
        return self.inner.decode_each(datas)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_read_of_text_deltas_is_decoded_at_once(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module: Any = chat_codec if api == "chat" else responses_codec
    name = _FAST[api]
    batches = _Batches(getattr(module, name))
    monkeypatch.setattr(module, name, batches)
    make = _chat_chunk if api == "chat" else _responses_delta
    events = [make(f"t{i} ") for i in range(40)]
    decoder = _decoder(api)
    out: list[ModelStreamEvent] = []
    decoder.feed_many(events[:3], out)  # a short read: one by one
    decoder.feed_many(events[3:], out)
    # The Chat decoder decodes the stream's first chunk the full way (it sets up the stream's IDs).
    assert (batches.one, batches.lists) == ((2, [37]) if api == "chat" else (3, [37]))
    assert [e.delta for e in out if isinstance(e, PartDeltaEvent)] == [
        TextPartDelta(f"t{i} ") for i in range(40)
    ]


def test_a_long_read_of_chat_text_is_decoded_in_growing_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 chunks are tried at once at first (what a stream that turns out not to fit can waste);
    # each window that fitted whole doubles the next, up to 1,024, and one that did not starts
    # again from 64.
    batches = _Batches(chat_codec._TEXT_CHUNK)
    monkeypatch.setattr(chat_codec, "_TEXT_CHUNK", batches)
    call = _sse(
        {
            "id": "c1",
            "model": "m",
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "k", "function": {"name": "f"}}]}}
            ],
        }
    )
    first = [_chat_chunk(f"t{i} ") for i in range(1 + 64 + 128 + 256 + 512 + 1024 + 1024 + 50)]
    first += [call, *[_chat_chunk(f"u{i} ") for i in range(100)]]
    second = [_chat_chunk(f"v{i} ") for i in range(100)]
    decoder = chat_codec.ChatStreamDecoder()
    out: list[ModelStreamEvent] = []
    decoder.feed_many(first, out)
    assert batches.lists == [64, 128, 256, 512, 1024, 1024, 151]
    decoder.feed_many(second, out)
    assert batches.lists[7:] == [64, 36]
    expected: list[ModelStreamEvent] = []
    one = chat_codec.ChatStreamDecoder()
    for event in [*first, *second]:
        expected += one.feed(event)
    assert out == expected


class _FullDecodes:
    """`responses_codec._EVENT` counting the events it decodes (those the full path takes)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kinds: list[str] = []

    def decode(self, data: str, **names: Any) -> Any:
        decoded = self.inner.decode(data, **names)
        self.kinds.append(decoded.type)
        return decoded


def _inert(kind: str) -> dict[str, Any]:
    """An event of `kind` carrying every field some event kind is read for."""
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "x"}],
    }
    return {
        "type": kind,
        "sequence_number": 1,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "summary_index": 0,
        "delta": "x",
        "text": "x",
        "arguments": "{}",
        "item": item,
        "part": {"type": "output_text", "text": "x"},
        "annotation": {"type": "url_citation", "url": "https://example.com"},
        "response": {"id": "resp_1", "status": "in_progress", "output": [item]},
    }


@pytest.mark.parametrize("kind", responses_codec._INERT_KINDS)
def test_the_kinds_the_fast_path_drops_are_those_the_full_path_ignores(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Dropped unread on the fast path, so the full path must make nothing of them either: no
    # event, and nothing the rest of the stream depends on (a final output item that was not
    # announced is left out once any item was).
    other = {"type": "message", "id": "msg_2", "content": [{"type": "output_text", "text": "y"}]}
    done = {"type": "response.completed", "response": {"status": "completed", "output": [other]}}
    body = b"".join(f"data: {msgspec.json.encode(e).decode()}\n\n".encode() for e in (_inert(kind), done))
    started = datetime.now(UTC)
    fast_events, fast_error, _ = _decode("responses", body, monkeypatch, fast=True)
    full_events, full_error, _ = _decode("responses", body, monkeypatch, fast=False)
    assert (fast_error, full_error) == (None, None)
    assert comparable(fast_events, started) == comparable(full_events, started)
    decoder = responses_codec.ResponsesStreamDecoder()
    assert decoder._full(msgspec.json.encode(_inert(kind)).decode()) == []


def test_a_read_s_inert_events_are_dropped_without_the_full_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    full = _FullDecodes(responses_codec._EVENT)
    monkeypatch.setattr(responses_codec, "_EVENT", full)
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "message", "id": "msg_1"},
    }
    done: dict[str, Any] = {"type": "response.completed", "response": {"status": "completed", "output": []}}
    events = [
        _sse(_inert("response.created")),
        _sse(_inert("response.in_progress")),
        _sse(added),
        _sse(_inert("response.content_part.added")),
        *[_responses_delta(f"t{i} ") for i in range(20)],
        _sse(_inert("response.output_text.done")),
        _sse(_inert("response.content_part.done")),
        _sse(done),
    ]
    started = datetime.now(UTC)
    one = responses_codec.ResponsesStreamDecoder()
    expected: list[ModelStreamEvent] = []
    for event in events:
        expected += one.feed(event)
    expected += one.finish()
    assert full.kinds == ["response.output_item.added", "response.completed"]
    batched = responses_codec.ResponsesStreamDecoder()
    out: list[ModelStreamEvent] = []
    batched.feed_many(events, out)
    out += batched.finish()
    assert full.kinds[2:] == ["response.output_item.added", "response.completed"]
    assert comparable(out, started) == comparable(expected, started)
    # And what the full path gives for every one of them.
    monkeypatch.setattr(responses_codec, "_FAST_EVENT", Counted(None))
    slow = responses_codec.ResponsesStreamDecoder()
    unfast: list[ModelStreamEvent] = []
    for event in events:
        unfast += slow.feed(event)
    unfast += slow.finish()
    assert comparable(unfast, started) == comparable(expected, started)


def _nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "response",
    [5, "resp_1", [1], {"output": _nested(200)}],
    ids=["a number", "a string", "a list", "nested past max_depth"],
)
def test_an_inert_event_the_full_path_refuses_is_refused_as_there(
    response: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = _sse({"type": "response.created", "response": response})
    with pytest.raises(ProviderError) as fast:
        responses_codec.ResponsesStreamDecoder().feed(event)
    with pytest.raises(ProviderError) as batched:
        responses_codec.ResponsesStreamDecoder().feed_many([event, *[_responses_delta("t")] * 20], [])
    monkeypatch.setattr(responses_codec, "_FAST_EVENT", Counted(None))
    with pytest.raises(ProviderError) as full:
        responses_codec.ResponsesStreamDecoder().feed(event)
    assert (type(fast.value), str(fast.value)) == (type(full.value), str(full.value))
    assert (type(batched.value), str(batched.value)) == (type(full.value), str(full.value))
