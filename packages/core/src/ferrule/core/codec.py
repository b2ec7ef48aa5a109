"""The codec contract every provider package implements, and the model client built on it.

A codec is a provider's wire format and nothing else: pure, no sockets, no credentials, so it can be
tested on recorded traffic (`ferrule.core.conformance`) and used by `tools/decode.py`. It has three
operations:

* [`encode`][ferrule.core.codec.Codec.encode]: a [`ModelCall`][ferrule.core.model.ModelCall] → a
  [`WireRequest`][ferrule.core.codec.WireRequest], the request body and the headers the format
  needs (a beta flag, a correlation ID);
* [`decode`][ferrule.core.codec.Codec.decode]: a buffered response body →
  [`ModelResponse`][ferrule.core.messages.ModelResponse];
* [`stream_decoder`][ferrule.core.codec.Codec.stream_decoder]: a fresh
  [`StreamDecoder`][ferrule.core.codec.StreamDecoder] for one streamed response. Feed it every
  server-sent event with `feed`, then call `finish` once at the end of the body.

What every codec guarantees (and `ferrule.core.conformance` checks):

* `finish` returns the remaining events, the last of them exactly one
  [`ResponseCompleted`][ferrule.core.model.ResponseCompleted]; a stream that ended before its
  protocol's closing event raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]
  instead, never an empty success;
* malformed input raises `ResponseDecodeError`; an error the provider reports in a body or a
  stream event raises its mapped [`ProviderError`][ferrule.core.errors.ProviderError] subclass;
* a stream decodes to the same response as the buffered body of the same answer.

[`CodecModel`][ferrule.core.codec.CodecModel] is the model client every HTTP provider builds on: a
codec for the wire format, a [`Provider`][ferrule.core.provider.Provider] for the connection.
"""

from __future__ import annotations

import abc
import functools
import itertools
import operator
from array import array
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Final
from typing import Generic
from typing import Protocol
from typing import TypeVar
from typing import cast

import msgspec

from .errors import ResponseDecodeError
from .model import Model
from .model import ModelCall
from .model import ModelStreamEvent
from .model import ResponseCompleted
from .settings import ModelSettings
from .settings import validate_request_headers
from .sse import SseEvent
from .sse import SseParser

if TYPE_CHECKING:
    from .bounded_json import FastPathDecoder
    from .messages import ModelResponse
    from .provider import Provider
    from .provider import QueryParams
    from .provider import RequestOptions
    from .redaction import Redactor

__all__ = [
    "BatchStreamDecoder",
    "Codec",
    "CodecModel",
    "HistoryProof",
    "StreamDecoder",
    "WireCache",
    "WireRequest",
    "MIN_BATCH",
    "completed_response",
    "decode_stream",
    "fast_runs",
]


class WireRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request as a codec encoded it: the body, and the headers its wire format needs."""

    body: bytes
    """The request body (JSON for every first-party codec)."""
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    """Headers the format adds to this request (lower-case names); the provider adds its own."""


class StreamDecoder(Protocol):
    """Turns the server-sent events of one streamed response into ferrule stream events."""

    def feed(self, event: SseEvent, /) -> Iterable[ModelStreamEvent]:
        """Decode one server-sent event; returns the stream events it produces (possibly none)."""
        ...

    def finish(self) -> Sequence[ModelStreamEvent]:
        """End of the body: the remaining events, the last one the `ResponseCompleted`.

        Raises `ResponseDecodeError` when the stream ended before it was complete.
        """
        ...


class BatchStreamDecoder(StreamDecoder, Protocol):
    """A [`StreamDecoder`][ferrule.core.codec.StreamDecoder] that also decodes a network read's
    events in one call: what `CodecModel` streams through when a decoder has it.

    `feed_many(events, out)` must equal calling `feed` for each event in order and adding what
    it returns to `out`: the same events, in the same order, and the same state after. When an
    event raises, `out` holds what the events before it produced (and nothing of the failing
    one or those after), and the error is the one `feed` would raise for it. A decoder with only
    `feed` is streamed one event at a time, as before.
    """

    def feed_many(self, events: Sequence[SseEvent], out: list[ModelStreamEvent], /) -> None:
        """Decode `events` in order, adding the stream events they produce to `out`."""
        ...


class Codec(Protocol):
    """A provider's wire format: requests out, responses and stream events in (see the module docs)."""

    def encode(self, call: ModelCall, /, *, stream: bool = False) -> WireRequest:
        """The request for `call`; `stream` asks for a streamed response."""
        ...

    def decode(self, body: bytes, /) -> ModelResponse:
        """Decode a buffered response body."""
        ...

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...


def completed_response(events: Sequence[ModelStreamEvent]) -> ModelResponse:
    """The response of the `ResponseCompleted` that ends `events` (what `StreamDecoder.finish` returned)."""
    last = events[-1] if events else None
    if not isinstance(last, ResponseCompleted):
        raise ResponseDecodeError("the stream decoder finished without a completed response")
    return last.response


MIN_BATCH: Final = 16
"""The fewest events of a read that the first-party `feed_many` decode as a batch: setting one up
costs about a microsecond, and each event saves about a third of one, so shorter reads (a slow
stream's) are fed one by one."""

_FastT = TypeVar("_FastT")
_data = operator.attrgetter("data")
_fits = functools.partial(operator.is_not, None)


def fast_runs(
    fast: FastPathDecoder[_FastT], events: Sequence[SseEvent]
) -> Iterator[tuple[list[_FastT], SseEvent | None]]:
    """A read's events through a fast-path decoder, in runs: each run of consecutive events that
    fit (decoded as `fast.decode` decodes each), with the event after it that did not (`None` after
    the last run). The events of a `feed_many`'s fast path, decoded with no Python call between them.
    """
    results = iter(fast.decode_each(list(map(_data, events))))
    start, count = 0, len(events)
    while start < count:
        run = cast("list[_FastT]", list(itertools.takewhile(_fits, results)))  # up to the first misfit
        start += len(run)
        if start == count:
            yield run, None
            return
        yield run, events[start]
        start += 1


def decode_stream(decoder: StreamDecoder, data: bytes) -> ModelResponse:
    """Decode the whole SSE body of a streamed response through `decoder` (a fresh one)."""
    parser = SseParser()
    for event in parser.feed(data):
        decoder.feed(event)
    for event in parser.close():
        decoder.feed(event)
    return completed_response(decoder.finish())


_fingerprint = msgspec.msgpack.Encoder().encode
_FeedMany = Callable[[Sequence[SseEvent], list[ModelStreamEvent]], None]
_MessageT = TypeVar("_MessageT")
_FINGERPRINT_ERRORS = (TypeError, ValueError, OverflowError, msgspec.EncodeError)


def _array_header(length: int) -> int:
    """The size of msgpack's array header for `length` items (fixarray, array 16, array 32)."""
    return 1 if length < 16 else 3 if length < 65536 else 5


def _first_other(messages: Sequence[Any], same: Sequence[Any]) -> int:
    """How many leading `messages` are the objects of `same` (in C: `map` stops at the shorter)."""
    return next(itertools.compress(itertools.count(), map(operator.is_not, messages, same)), -1)


def _first_unequal(items: list[Any], same: list[Any]) -> int:
    """How many leading `items` equal those of `same`, or fewer (in C: an object equals itself at once)."""
    count = min(len(items), len(same))
    try:
        if count and items[count - 1] != same[count - 1]:
            count -= 1  # the usual case: the newest message is a new one
        if (items if len(items) == count else items[:count]) == (
            same if len(same) == count else same[:count]
        ):
            return count
    except (TypeError, ValueError):  # content whose `==` refuses: compare the objects instead
        pass
    return _first_other(items, same)


class _Fingerprinted:
    """Messages as once seen (held, so no ID is reused), their msgpack fingerprint, and where each
    message's bytes end in it (`ends`, absolute; the first message's bytes start at `base`).

    The ends (and an entry's wire ends) are arrays of machine integers, not lists: a long history's
    are copied and freed on every request, one block of memory rather than an object per message."""

    __slots__ = ("base", "ends", "fingerprint", "messages")

    def __init__(self, messages: list[Any], fingerprint: bytes, base: int, ends: array[int]) -> None:
        self.messages = messages
        self.fingerprint = fingerprint
        self.base = base
        self.ends = ends

    def unchanged(
        self, messages: Sequence[Any], fingerprint: bytes, base: int, *, equal: bool = False
    ) -> int:
        """How many leading `messages` are these objects (or, with `equal`, equal to them: a list of
        them) and still encode to the same bytes."""
        if equal:
            assert isinstance(messages, list)
            count = _first_unequal(messages, self.messages)
        else:
            count = _first_other(messages, self.messages)
        if count < 0:
            count = min(len(messages), len(self.messages))
        if count == 0:
            return 0
        ends = self.ends
        old = memoryview(self.fingerprint)
        start = self.base
        if fingerprint.startswith(old[start : ends[count - 1]], base):
            return count
        # Something changed in place: the longest prefix whose bytes are equal (msgpack items are
        # self-delimiting, so equal bytes up to a message's end mean equal messages up to it).
        low, high = 0, count - 1
        while low < high:
            mid = (low + high + 1) // 2
            if fingerprint.startswith(old[start : ends[mid - 1]], base):
                low = mid
            else:
                high = mid - 1
        return low


class _Encoded(_Fingerprinted):
    """One history as last encoded: its fingerprint and the joined wire fragments, with where each
    message ends in both; `proof` is the history proof it was encoded under (from `start` on), if any."""

    __slots__ = ("offset", "proof", "start", "wire", "wire_ends")

    def __init__(
        self,
        messages: list[Any],
        fingerprint: bytes,
        base: int,
        ends: array[int],
        wire: bytes,
        wire_ends: array[int],
        proof: HistoryProof | None,
        start: int,
        offset: int,
    ) -> None:
        super().__init__(messages, fingerprint, base, ends)
        self.wire = wire
        self.wire_ends = wire_ends
        self.proof = proof
        self.start = start
        self.offset = offset  # where the fragments start in `wire` (after what framed them)

    @property
    def size(self) -> int:
        return len(self.fingerprint) + len(self.wire)


class HistoryProof(_Fingerprinted):
    """One request's history, fingerprinted once: how many of its leading messages are unchanged
    (the same objects, encoding to the same bytes) since the cache last proved it, and how far each
    check of the history had got then.

    A model takes one with [`WireCache.prove`][ferrule.core.codec.WireCache.prove] and relies on it
    only while nothing can have changed the history: one synchronous stretch, from the proof through
    the checks it spares to the encode it arms (see `CodecModel._prepare_now`).
    """

    __slots__ = ("_checked", "previous", "source", "unchanged_count")

    def __init__(
        self,
        source: Sequence[Any],
        messages: list[Any],
        fingerprint: bytes,
        base: int,
        ends: array[int],
        unchanged_count: int,
        checked: dict[Hashable, int],
        previous: HistoryProof | None,
    ) -> None:
        super().__init__(messages, fingerprint, base, ends)
        self.source: Sequence[Any] | None = source
        """The history object proved; cleared when the stretch ends."""
        self.unchanged_count = unchanged_count
        """How many leading messages are unchanged since the history was last proved."""
        self.previous = previous
        """The proof this one was compared with (wire bytes encoded under it may be reused)."""
        self._checked = checked

    def checked(self, check: Hashable) -> int:
        """How many leading messages passed `check` (a key naming the check and what it depends on)."""
        return self._checked.get(check, 0)

    def unchecked(self, check: Hashable) -> list[Any]:
        """The messages after those that passed `check`: what it still has to look at."""
        return self.messages[self._checked.get(check, 0) :]

    def passed(self, check: Hashable) -> None:
        """Record that every message of the history passed `check`."""
        self._checked[check] = len(self.messages)

    def carried(self, kept: int) -> dict[Hashable, int]:
        """How far each check got, over the first `kept` messages only (those still unchanged)."""
        return {check: min(count, kept) for check, count in self._checked.items()}


class WireCache:
    """The wire form of history messages, encoded once and reused by later requests of one model.

    A codec hands [`encode`][ferrule.core.codec.WireCache.encode] the history of a request; the
    cache finds the history it encoded last that starts with the same message object (under the
    same `view`: what else the encoding depends on, such as the codec's dialect, provider and
    model) and reuses its wire bytes for the longest prefix of messages that are the same objects
    AND still encode to the same canonical bytes: the whole history is fingerprinted with msgpack
    on every request (one C call), so a message changed in place, anywhere in it, is encoded
    again. The messages after that prefix are encoded with the codec's function. The cache holds
    the messages it answers for, so an object ID is never reused for another message while its
    entry lives; it keeps at most `max_histories` histories and `max_bytes` of fingerprints and
    wire bytes, forgetting the least recently used first. The canonical history is only read.

    A model may fingerprint a request's history once with
    [`prove`][ferrule.core.codec.WireCache.prove]: the proof tells the model's own checks which
    leading messages passed them before, and an encode of that same history object while the proof
    is [`armed`][ferrule.core.codec.WireCache.arm] uses its fingerprint instead of taking another.

    One limit of the fingerprint: msgpack writes a naive datetime, a date, a time, a UUID or a
    Decimal as the string of its text, so a field of a held message changed in place from one of
    those to that same text as a `str` (or back) is not seen as a change.
    """

    __slots__ = ("_armed", "_histories", "_proof_bytes", "_proofs", "_size", "max_bytes", "max_histories")

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024, max_histories: int = 64) -> None:
        self.max_bytes = max_bytes
        """The most bytes of fingerprints and wire fragments kept."""
        self.max_histories = max_histories
        """The most histories kept (one per conversation the model is serving)."""
        self._armed: HistoryProof | None = None
        self._histories: dict[tuple[int, object], _Encoded] = {}
        self._proofs: dict[int, HistoryProof] = {}
        self._proof_bytes = 0
        self._size = 0

    def __len__(self) -> int:
        """How many messages are held, over every history kept."""
        return sum(len(h.messages) for h in self._histories.values())

    def clear(self) -> None:
        """Forget every history."""
        self._histories = {}
        self._proofs = {}
        self._proof_bytes = 0
        self._size = 0

    def prove(self, messages: Sequence[Any], /) -> HistoryProof | None:
        """Fingerprint `messages` once and find how many leading ones are unchanged since last proved.

        `None` for an empty history or one that cannot be fingerprinted (then nothing is proved).
        """
        if not messages:
            return None
        # One copy, held by the proof (the caller's list may grow), that msgpack and the prefix
        # comparison read at list speed (the agent's history view is a slower sequence).
        items = list(messages)
        try:
            fingerprint = _fingerprint(items)
        except _FINGERPRINT_ERRORS:
            return None
        base = _array_header(len(items))
        key = id(items[0])
        proofs = self._proofs
        previous = proofs.pop(key, None)
        if previous is not None:
            self._proof_bytes -= len(previous.fingerprint)
        # Equal messages, not only the same objects: the bytes decide, and an equal copy (a new
        # run's copy of its history) passed every check the original passed.
        kept = 0 if previous is None else previous.unchanged(items, fingerprint, base, equal=True)
        if previous is not None and kept:
            ends = previous.ends[:kept]
            checked = previous.carried(kept)
            previous.previous = None  # one step back is all a wire entry is compared with
        else:
            ends, checked, previous = array("q"), {}, None
        position = ends[-1] if ends else base
        for message in items[kept:]:
            position += len(_fingerprint(message))
            ends.append(position)
        if position != len(fingerprint):
            return None
        proof = HistoryProof(messages, items, fingerprint, base, ends, kept, checked, previous)
        size = len(fingerprint)
        if size <= self.max_bytes:
            # The proofs have the same bounds as the wire entries, counted on their own (an entry
            # encoded under a proof shares its fingerprint).
            while proofs and (len(proofs) >= self.max_histories or self._proof_bytes + size > self.max_bytes):
                self._proof_bytes -= len(proofs.pop(next(iter(proofs))).fingerprint)
            proofs[key] = proof
            self._proof_bytes += size
        return proof

    def arm(self, proof: HistoryProof | None, /) -> None:
        """Let encodes of `proof`'s history object use its fingerprint; `None` ends the stretch.

        The caller guarantees that nothing changed the history since `proof` was taken, until it
        calls `arm(None)`.
        """
        armed = self._armed
        if armed is not None:
            armed.source = None
        self._armed = proof

    def encode(
        self,
        messages: Sequence[_MessageT],
        view: Hashable,
        encode: Callable[[_MessageT], bytes],
        /,
        *,
        start: int = 0,
        before: bytes = b"",
        lead: bytes = b"",
        after: bytes | Callable[[], bytes] = b"",
    ) -> bytes:
        """The wire fragments of `messages[start:]` joined with commas (the empty ones left out).

        `encode(message)` gives one message's fragment: JSON items without the enclosing brackets,
        possibly none (`b""`). A history that cannot be fingerprinted (content msgpack cannot
        encode) is encoded in full, every time.

        A codec may have the whole body built around the history, so that the history's bytes are
        copied once: the answer is then `before`, then `lead` (items of its own, ahead of the
        history's) and the fragments joined with commas, then `after` (or what it returns, when it
        is a function: called once the fragments are encoded, so that their errors come first).
        """
        if start >= len(messages):
            return _framed(before, lead, [], after)[0] if before or lead or after else b""
        proof = self._armed
        if proof is not None and proof.source is not messages:
            proof = None
        if proof is None:
            if start or not isinstance(messages, list | tuple):
                messages, start = messages[start:], 0  # msgpack takes lists and tuples
            try:
                fingerprint = _fingerprint(messages)
            except _FINGERPRINT_ERRORS:
                fragments = [f for f in map(encode, messages) if f]
                return (
                    _framed(before, lead, fragments, after)[0]
                    if before or lead or after
                    else b",".join(fragments)
                )
            base = _array_header(len(messages))
        else:
            fingerprint = proof.fingerprint
            base = proof.ends[start - 1] if start else proof.base
        key = (id(messages[start]), view)
        previous = self._histories.pop(key, None)
        kept = 0
        if previous is not None:
            self._size -= previous.size
            kept = _kept(previous, messages, start, fingerprint, base, proof)
        pieces: list[bytes | memoryview] = []
        if previous is not None and kept:
            wire_ends = previous.wire_ends
            # `previous` is out of the cache and dropped: all of its list grows on, a prefix is copied.
            if kept < len(wire_ends):
                wire_ends = wire_ends[:kept]
            end = wire_ends[-1]
            if end:  # a view, not a slice: the kept prefix is copied once, by the join below
                offset = previous.offset
                pieces.append(memoryview(previous.wire)[offset : offset + end])
        else:
            wire_ends, end = array("q"), 0
        if proof is not None:
            ends = proof.ends[start:] if start else proof.ends  # never changed in place: shared
        elif previous is not None and kept:
            ends = previous.ends[:kept]
            if previous.base != base:  # the array header grew
                ends = array("q", [e - previous.base + base for e in ends])
        else:
            ends = array("q")
        position = ends[-1] if ends else base
        for message in (messages if proof is None else proof.messages)[start + kept :]:
            if proof is None:
                position += len(_fingerprint(message))
                ends.append(position)
            fragment = encode(message)
            if fragment:
                end += len(fragment) + (1 if pieces else 0)
                pieces.append(fragment)
            wire_ends.append(end)
        if before or lead or after:
            wire, offset = _framed(before, lead, pieces, after)
        else:
            wire, offset = b",".join(pieces), 0
        if proof is not None or position == len(fingerprint):
            held = list(messages) if proof is None else proof.messages[start:] if start else proof.messages
            self._keep(key, _Encoded(held, fingerprint, base, ends, wire, wire_ends, proof, start, offset))
        return wire

    def _keep(self, key: tuple[int, object], encoded: _Encoded) -> None:
        size = encoded.size
        if size > self.max_bytes:
            return
        histories = self._histories
        while histories and (self._size + size > self.max_bytes or len(histories) >= self.max_histories):
            oldest = next(iter(histories))
            self._size -= histories.pop(oldest).size
        histories[key] = encoded
        self._size += size


def _framed(
    before: bytes, lead: bytes, pieces: Sequence[bytes | memoryview], after: bytes | Callable[[], bytes]
) -> tuple[bytes, int]:
    """`before`, `lead` and `pieces` joined with commas (`lead` left out when empty), then `after`
    (or what it returns), in one join; and where the first piece starts."""
    tail = after if isinstance(after, bytes) else after()
    items: list[bytes | memoryview] = [before, lead]
    if pieces:
        if lead:
            items.append(b",")
        offset = len(before) + len(lead) + (1 if lead else 0)
        # Usually the kept prefix (a view) and a few new fragments: only those are joined twice.
        items.append(pieces[0])
        if len(pieces) > 1:
            items += (b",", b",".join(pieces[1:]))
    else:
        offset = len(before) + len(lead)
    items.append(tail)
    return b"".join(items), offset


def _kept(
    previous: _Encoded,
    messages: Sequence[Any],
    start: int,
    fingerprint: bytes,
    base: int,
    proof: HistoryProof | None,
) -> int:
    """How many leading messages of `messages[start:]` may reuse `previous`'s wire bytes."""
    if proof is not None and previous.start == start:
        # Encoded under this proof, or under the one it was compared with: what that proved
        # unchanged (the same objects, the same bytes) is unchanged since that encode too.
        if previous.proof is proof:
            return len(previous.messages)
        if previous.proof is not None and previous.proof is proof.previous:
            return max(0, min(proof.unchanged_count - start, len(previous.messages)))
    return previous.unchanged(messages[start:] if start else messages, fingerprint, base)


@functools.cache
def _encodes_first(cls: type) -> bool:
    """Whether `cls._request` reaches `CodecModel._request` before any await (see `request`)."""
    for klass in cls.__mro__:
        own = vars(klass)
        if "_request" in own:
            return klass is CodecModel or own.get("_request_encodes_first") is True
    return False


def _overrides(cls: type, name: str, base: type) -> bool:
    """Whether `cls` has its own `name`, not `base`'s."""
    return getattr(cls, name) is not getattr(base, name)


_ProviderT = TypeVar("_ProviderT", bound="Provider")


class CodecModel(Model, Generic[_ProviderT]):
    """A model client made of a [`Codec`][ferrule.core.codec.Codec] and a provider.

    A subclass gives `profile`, [`codec`][ferrule.core.codec.CodecModel.codec] and `_endpoint`; this
    class sends the encoded request through the provider (buffered or as server-sent events) with
    the call's deadline, timeout, error-body capture and headers, and decodes the answer. Hooks:
    `_prepare` (rewrite the call before encoding, e.g. download URL content), `_headers`,
    `_check_response` (refuse a decoded answer) and `_stream_done` (stop reading a stream early).
    Errors leaving `request` and `stream` are scrubbed with the provider's redactor.
    """

    _request_encodes_first: ClassVar[bool] = False
    """Set (in its own class body) by a subclass whose `_request` override reaches
    `CodecModel._request` before any await, so that the proof of the history taken for the check
    of `request` may be handed to the encode."""

    _stream_done_per_read: ClassVar[bool] = False
    """Set by a subclass whose `_stream_done` may be asked once after each network read's events
    rather than after each event: its decoder ignores what follows the point where it holds (as
    the Messages decoder after `message_stop`), so a
    [`BatchStreamDecoder`][ferrule.core.codec.BatchStreamDecoder] still gets a read at once."""

    def __init__(
        self, model_name: str, *, provider: _ProviderT, settings: ModelSettings | None = None
    ) -> None:
        self._model_name = model_name
        self._provider = provider
        self.settings = settings
        self._wire_cache: WireCache | None = None
        # The proof of the history being checked now, and the one `request` hands to `_encoded`.
        self._proving: HistoryProof | None = None
        self._proved: tuple[Sequence[Any], HistoryProof | None] | None = None

    @property
    def wire_cache(self) -> WireCache:
        """The encoded history messages this model's codecs reuse across requests (see `WireCache`)."""
        cache = self._wire_cache
        if cache is None:
            cache = self._wire_cache = WireCache()
        return cache

    @property
    def model_name(self) -> str:
        """The model name sent to the provider."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """The provider's name, e.g. `"openai"`."""
        return self._provider.name

    @property
    def provider(self) -> _ProviderT:
        """The provider this model sends its requests through."""
        return self._provider

    @property
    def redactor(self) -> Redactor:
        """The provider's redactor: every error leaving `request` and `stream` is scrubbed with it."""
        return self._provider.redactor

    @abc.abstractmethod
    def codec(self) -> Codec:
        """The codec of this model's next request (built from its current settings)."""

    def check(self, call: ModelCall) -> None:
        """Raise `UnsupportedFeatureError` if `call` asks for something the profile lacks.

        In a buffered request, the history's content is checked only from where the proof of it
        says it last passed (the same check, the same accepted kinds).
        """
        proof = self._proving
        if proof is None or proof.source is not call.messages:
            super().check(call)
        else:
            self.profile.check(call, model=self.system, proof=proof)

    def _check_request(self, call: ModelCall) -> None:
        """The check of a buffered request, with the history fingerprinted once, before it.

        The check, the `_prepare_now` checks and the encode all run before any await (`_request`
        starts right after this), so the one proof serves them all; it is handed to `_encoded`.
        """
        self._proved = None
        cache = self._wire_cache
        if cache is None or not _encodes_first(type(self)):
            self.check(call)
            return
        proof = cache.prove(call.messages)
        self._proving = proof
        try:
            self.check(call)
        finally:
            self._proving = None
        self._proved = (call.messages, proof)  # taken by `_encoded` before any await

    @abc.abstractmethod
    def _endpoint(self, *, stream: bool) -> tuple[str, QueryParams | None]:
        """The path (relative to the provider's root) and query parameters of a buffered or streamed request."""

    async def _prepare(self, call: ModelCall) -> ModelCall:
        """The call as it is encoded; by default `call` itself."""
        return call

    def _headers(self, call: ModelCall, wire: WireRequest) -> dict[str, str]:
        """The headers of one request: the call's `extra_headers` (checked), then the codec's."""
        headers = validate_request_headers(call.settings.extra_headers or {})
        headers.update(wire.headers)
        return headers

    def _check_response(self, response: ModelResponse) -> None:
        """Raise for a decoded answer the client refuses to return; by default nothing is refused."""

    def _stream_done(self, decoder: StreamDecoder) -> bool:
        """Whether to stop reading the stream after the last event; by default it is read to its end.

        Asked after each event, or after each read's events with `_stream_done_per_read`. Reading
        to the end lets the connection go back to the pool.
        """
        del decoder
        return False

    def _options(self, call: ModelCall, wire: WireRequest, *, stream: bool) -> tuple[str, RequestOptions]:
        path, params = self._endpoint(stream=stream)
        options = self._provider.call_options(call, self._model_name)
        options["headers"] = self._headers(call, wire)
        options["params"] = params
        return path, options

    async def _send(self, call: ModelCall, codec: Codec, wire: WireRequest) -> ModelResponse:
        """The buffered exchange of one encoded request."""
        path, options = self._options(call, wire, stream=False)
        response = await self._provider.request("POST", path, content=wire.body, **options)
        decoded = codec.decode(response.content)
        self._check_response(decoded)
        return decoded

    def _prepare_now(self, call: ModelCall, proof: HistoryProof) -> ModelCall | None:
        """The call as encoded when preparing it needs no waiting, else `None` (then `_prepare` runs).

        It runs in one synchronous stretch with the proof of `call.messages` and the encode, so a
        check it makes over the history may skip the leading messages `proof` says passed it before
        (and record, with `proof.passed`, that the whole history did). By default `call` itself
        when `_prepare` is not overridden; a subclass that overrides `_prepare` overrides this too,
        or its `_prepare` runs as it is.
        """
        del proof
        return None if _overrides(type(self), "_prepare", CodecModel) else call

    async def _encoded(self, call: ModelCall, *, stream: bool) -> tuple[ModelCall, Codec, WireRequest]:
        """The call as encoded, its codec and its request; the history fingerprinted once.

        The proof, the checks `_prepare_now` makes and the encode run with no await between them,
        so no other task can change the history in place in between.
        """
        cache = self._wire_cache  # set once a codec of this model used it
        handed, self._proved = self._proved, None
        if handed is not None and handed[0] is call.messages:
            proof = handed[1]  # `None`: it cannot be proved (not tried twice)
        else:
            proof = None if cache is None else cache.prove(call.messages)
        prepared = None if proof is None else self._prepare_now(call, proof)
        if prepared is None:
            prepared = await self._prepare(call)
            codec = self.codec()
            return prepared, codec, codec.encode(prepared, stream=stream)
        assert cache is not None
        codec = self.codec()
        cache.arm(proof)
        try:
            wire = codec.encode(prepared, stream=stream)
        finally:
            cache.arm(None)
        return prepared, codec, wire

    async def _request(self, call: ModelCall) -> ModelResponse:
        call, codec, wire = await self._encoded(call, stream=False)
        return await self._send(call, codec, wire)

    async def _stream(self, call: ModelCall) -> AsyncIterator[ModelStreamEvent]:
        async for batch in self._decoded(call):
            for event in batch:
                yield event

    def _stream_batches(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]] | None:
        # A subclass with a `_stream` of its own is streamed through it, event by event.
        return self._decoded(call) if type(self)._stream is CodecModel[Any]._stream else None

    async def _decoded(self, call: ModelCall) -> AsyncIterator[list[ModelStreamEvent]]:
        """The stream's events, those each network read completes in one list (never empty).

        A decoder that fails on an event still delivers what the events before it gave, first.
        """
        call, codec, wire = await self._encoded(call, stream=True)
        path, options = self._options(call, wire, stream=True)
        decoder = codec.stream_decoder()
        feed = decoder.feed
        # Most clients read to the end: no call per event to ask whether to stop, and a decoder
        # that can is given each read's events at once.
        stop = None if type(self)._stream_done is CodecModel[Any]._stream_done else self._stream_done
        # (Looked up by name: a check against the protocol costs microseconds a stream.)
        feed_many: _FeedMany | None = (
            getattr(decoder, "feed_many", None) if stop is None or self._stream_done_per_read else None
        )
        from .provider import sse_batches  # loaded with every provider; not at this module's import

        async with self._provider.stream_sse("POST", path, content=wire.body, **options) as events:
            batches = sse_batches(events)
            while batch := await batches():
                out: list[ModelStreamEvent] = []
                failure: Exception | None = None
                done = False
                try:
                    if feed_many is not None:
                        feed_many(batch, out)
                        done = stop is not None and stop(decoder)
                    else:
                        for event in batch:
                            out += feed(event)
                            if stop is not None and stop(decoder):
                                done = True
                                break
                except Exception as exc:
                    failure = exc
                if out:
                    yield out
                if failure is not None:
                    raise failure
                if done:
                    break
        out = []
        for event in decoder.finish():
            if isinstance(event, ResponseCompleted):
                if out:
                    yield out  # delivered before the answer is checked, as one by one
                    out = []
                self._check_response(event.response)
            out.append(event)
        if out:
            yield out
