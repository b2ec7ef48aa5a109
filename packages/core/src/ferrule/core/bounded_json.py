"""Bounded decoding of untrusted JSON: the one entry point every ferrule decoder uses.

Untrusted JSON (provider responses, stream events, tool arguments, MCP messages, persisted history
and paused state, CLI configuration) is first checked against a [`JsonLimits`][ferrule.core.bounded_json.JsonLimits]
profile by a preflight scan that builds no values: encoded size, nesting depth, decoded bytes of
every string (keys included), characters of every number and the member count of every object and
array. Only a document within every limit reaches `msgspec`, so an oversized or hostile document
is rejected with a stable [`JsonLimitError`][ferrule.core.bounded_json.JsonLimitError] before any
large allocation. A limit is inclusive: input exactly at a limit is accepted, one past it is not.

```python
from ferrule.core import bounded_json

args = bounded_json.decode(raw, type=WeatherArgs, limits=bounded_json.TOOL_ARGUMENTS)
```
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import types
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Final
from typing import Generic
from typing import TypeVar
from typing import overload

import msgspec

from ._json_scan import LimitExceeded
from ._json_scan import Malformed
from ._json_scan import check
from .errors import FerruleError
from .errors import ResponseDecodeError

__all__ = [
    "CLI_CONFIG",
    "HISTORY",
    "MAX_SUPPORTED_DEPTH",
    "MCP",
    "PAUSED_STATE",
    "PROFILES",
    "PROVIDER_RESPONSE",
    "SCHEMA",
    "STREAM_EVENT",
    "TOOL_ARGUMENTS",
    "FastPathDecoder",
    "JsonError",
    "JsonInput",
    "JsonLimitError",
    "JsonLimits",
    "JsonTypeError",
    "MalformedJsonError",
    "ProviderDecoder",
    "decode",
    "decode_provider_json",
    "decode_value",
    "is_valid",
    "validate",
]

T = TypeVar("T")

JsonInput = bytes | bytearray | memoryview | str
"""What the decoding functions accept: UTF-8 encoded bytes (any buffer) or an already decoded `str`."""

MAX_SUPPORTED_DEPTH: Final = 512
"""The largest `max_depth` a profile may set: msgspec recurses once per nesting level on the C stack."""

# Counts are compiled into regular expressions, whose repetition bounds are 32-bit.
_MAX_LIMIT: Final = 2**31 - 1
_KIB: Final = 1024
_MIB: Final = 1024 * 1024


class JsonLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Inclusive upper bounds that one untrusted JSON document must respect before it is decoded.

    Build a variant of a named profile with `msgspec.structs.replace(TOOL_ARGUMENTS, max_bytes=...)`.
    """

    max_bytes: int
    """Size of the whole encoded (UTF-8) document in bytes."""
    max_depth: int
    """Nesting depth of objects and arrays: `1` is depth 0, `[1]` depth 1, `[[1]]` depth 2."""
    max_string_bytes: int
    """UTF-8 bytes of any one string after unescaping, object keys included."""
    max_items: int
    """Members of any one object or elements of any one array (at least 1)."""
    max_number_chars: int
    """Characters of any one number token, sign and exponent included."""
    name: str = "custom"
    """The profile's name, used in error messages so a failure says which boundary rejected it."""

    def __post_init__(self) -> None:
        for field in ("max_bytes", "max_depth", "max_string_bytes", "max_items", "max_number_chars"):
            value = getattr(self, field)
            if type(value) is not int or not 0 <= value <= _MAX_LIMIT:
                raise ValueError(f"JsonLimits.{field} must be an int from 0 to 2**31 - 1, got {value!r}")
        if self.max_bytes < 1 or self.max_number_chars < 1 or self.max_items < 1:
            # Item counting works on separators, so it cannot tell an empty collection from one member.
            raise ValueError("JsonLimits.max_bytes, max_items and max_number_chars must be at least 1")
        if self.max_depth > MAX_SUPPORTED_DEPTH:
            raise ValueError(
                f"JsonLimits.max_depth={self.max_depth} is above the supported maximum "
                f"{MAX_SUPPORTED_DEPTH}: the decoder recurses once per level and would hit the "
                "interpreter's recursion limit; flatten the document instead"
            )


PROVIDER_RESPONSE: Final = JsonLimits(
    name="provider_response",
    max_bytes=32 * _MIB,
    max_depth=128,
    max_string_bytes=16 * _MIB,
    max_items=100_000,
    max_number_chars=1_024,
)
"""A complete (non-streamed) model response body.

32 MiB leaves room for long outputs and inline base64 media; a single string may hold up to 16 MiB
(a generated image or audio clip). Embedding responses for very large batches can exceed this:
their decoder should use its own profile.
"""

STREAM_EVENT: Final = JsonLimits(
    name="stream_event",
    max_bytes=8 * _MIB,
    max_depth=128,
    max_string_bytes=8 * _MIB,
    max_items=100_000,
    max_number_chars=1_024,
)
"""One server-sent event payload of a streamed response.

Most events are a few hundred bytes, but some providers repeat the whole response in a final
event or stream partial images as base64, so the bound is 8 MiB rather than a line-sized one.
"""

TOOL_ARGUMENTS: Final = JsonLimits(
    name="tool_arguments",
    max_bytes=1 * _MIB,
    max_depth=64,
    max_string_bytes=1 * _MIB,
    max_items=10_000,
    max_number_chars=1_024,
)
"""The arguments JSON of one tool call as produced by a model; checked before the tool runs."""

HISTORY: Final = JsonLimits(
    name="history",
    max_bytes=256 * _MIB,
    max_depth=128,
    max_string_bytes=64 * _MIB,
    max_items=1_000_000,
    max_number_chars=1_024,
)
"""A persisted message history: long conversations with inline media."""

PAUSED_STATE: Final = msgspec.structs.replace(HISTORY, name="paused_state")
"""The serialized state of a paused run; it embeds the run's history, so it matches `HISTORY`."""

MCP: Final = JsonLimits(
    name="mcp",
    max_bytes=32 * _MIB,
    max_depth=128,
    max_string_bytes=16 * _MIB,
    max_items=100_000,
    max_number_chars=1_024,
)
"""One MCP JSON-RPC message: tool lists, tool results and resources, which may carry media."""

SCHEMA: Final = JsonLimits(
    name="schema",
    max_bytes=256 * _KIB,
    max_depth=32,
    max_string_bytes=64 * _KIB,
    max_items=10_000,
    max_number_chars=256,
)
"""A JSON Schema (tool parameters, output types), hand-written or received from an MCP server."""

CLI_CONFIG: Final = JsonLimits(
    name="cli_config",
    max_bytes=4 * _MIB,
    max_depth=32,
    max_string_bytes=1 * _MIB,
    max_items=10_000,
    max_number_chars=256,
)
"""A configuration, agent specification or evaluation file read by the command-line tools."""

PROFILES: Final[Mapping[str, JsonLimits]] = types.MappingProxyType(
    {
        limits.name: limits
        for limits in (
            PROVIDER_RESPONSE,
            STREAM_EVENT,
            TOOL_ARGUMENTS,
            HISTORY,
            PAUSED_STATE,
            MCP,
            SCHEMA,
            CLI_CONFIG,
        )
    }
)
"""Every named profile by its `name`, read-only."""


class JsonError(FerruleError):
    """Untrusted JSON was rejected; subsystems map this to their own stable error."""


class MalformedJsonError(JsonError):
    """The input is not one well-formed JSON document (or not valid UTF-8)."""

    def __init__(self, reason: str, *, position: int | None = None) -> None:
        self.reason = reason
        """What is wrong, e.g. `"invalid character"` or `"unterminated string"`."""
        self.position = position
        """Byte offset of the problem in the UTF-8 document, when known."""
        where = f" at byte {position}" if position is not None else ""
        super().__init__(f"malformed JSON{where}: {reason}")


_LIMIT_DESCRIPTIONS: Final = {
    "max_bytes": "document of {actual} bytes",
    "max_depth": "nesting depth {actual}",
    "max_string_bytes": "string of {actual} decoded bytes",
    "max_items": "collection with {actual} members",
    "max_number_chars": "number of {actual} characters",
}


class JsonLimitError(JsonError):
    """The input exceeds one of the [`JsonLimits`][ferrule.core.bounded_json.JsonLimits] of its boundary."""

    def __init__(
        self,
        limit: str,
        *,
        maximum: int,
        actual: int,
        profile: str = "custom",
        position: int | None = None,
    ) -> None:
        self.limit = limit
        """The name of the exceeded `JsonLimits` field, e.g. `"max_depth"`."""
        self.maximum = maximum
        """The configured (inclusive) maximum."""
        self.actual = actual
        """The measured value; for a `str` document that is too long, its length in characters."""
        self.profile = profile
        """The `name` of the limits profile that rejected the input."""
        self.position = position
        """Byte offset where the offending value starts, when known."""
        what = _LIMIT_DESCRIPTIONS.get(limit, limit + " {actual}").format(actual=actual)
        where = f" at byte {position}" if position is not None else ""
        super().__init__(
            f"JSON {what}{where} exceeds {limit}={maximum} of the {profile!r} limits; if this input is "
            f"trusted, raise it with msgspec.structs.replace(limits, {limit}=...)"
        )


class JsonTypeError(JsonError):
    """The input is well-formed JSON but does not match the requested type (or a number is out of range)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        """Where the mismatch is, in msgspec's notation (`$.items[2].name`), when known."""
        super().__init__(message)


def _as_buffer(data: JsonInput, limits: JsonLimits) -> bytes | bytearray:
    """The UTF-8 bytes of `data`, after checking `max_bytes` before any copy or encoding."""
    if isinstance(data, str):
        # Every character takes at least one byte, so this rejects before encoding anything.
        if len(data) > limits.max_bytes:
            raise JsonLimitError("max_bytes", maximum=limits.max_bytes, actual=len(data), profile=limits.name)
        try:
            buf: bytes | bytearray = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MalformedJsonError("lone surrogate in str input", position=exc.start) from None
    elif isinstance(data, memoryview):
        if data.nbytes > limits.max_bytes:
            raise JsonLimitError(
                "max_bytes", maximum=limits.max_bytes, actual=data.nbytes, profile=limits.name
            )
        buf = data.tobytes()
    else:
        buf = data
    if len(buf) > limits.max_bytes:
        raise JsonLimitError("max_bytes", maximum=limits.max_bytes, actual=len(buf), profile=limits.name)
    return buf


def _preflight(buf: bytes | bytearray, limits: JsonLimits) -> None:
    """Run the limit scan on `buf`, skipping every check the document cannot fail."""
    try:
        check(
            buf,
            max_depth=limits.max_depth,
            max_string_bytes=limits.max_string_bytes,
            max_items=limits.max_items,
            max_number_chars=limits.max_number_chars,
        )
    except LimitExceeded as exc:
        raise JsonLimitError(
            exc.limit,
            maximum=getattr(limits, exc.limit),
            actual=exc.actual,
            profile=limits.name,
            position=exc.position,
        ) from None
    except Malformed as exc:
        raise MalformedJsonError(exc.reason, position=exc.position) from None


_BYTE_POSITION: Final = re.compile(r"^(?:JSON is malformed: )?(.*?)(?: \(byte (\d+)\))?$", re.S)
_TYPE_PATH: Final = re.compile(r" - at `(\$[^`]*)`$")


def _malformed(exc: msgspec.DecodeError, size: int) -> MalformedJsonError:
    text = str(exc)
    if text == "Input data was truncated":
        return MalformedJsonError("truncated document", position=size)
    found = _BYTE_POSITION.match(text)
    if found is None:  # pragma: no cover - the pattern matches any text
        return MalformedJsonError(text)
    position = found.group(2)
    return MalformedJsonError(found.group(1), position=int(position) if position is not None else None)


def _type_error(exc: msgspec.ValidationError) -> JsonTypeError:
    text = str(exc)
    found = _TYPE_PATH.search(text)
    return JsonTypeError(text, path=found.group(1) if found else None)


def validate(data: JsonInput, limits: JsonLimits) -> None:
    """Check that `data` is one well-formed JSON document within `limits`, building no values.

    Runs the limit scan, then msgspec's skipping parser for full syntax and, for non-ASCII input,
    a UTF-8 check. Raises [`JsonLimitError`][ferrule.core.bounded_json.JsonLimitError] or
    [`MalformedJsonError`][ferrule.core.bounded_json.MalformedJsonError].
    """
    buf = _bounded(data, limits)
    try:
        msgspec.json.decode(buf, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        raise _malformed(exc, len(buf)) from None
    if not buf.isascii():
        try:
            str(buf, "utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedJsonError("invalid UTF-8", position=exc.start) from None


def is_valid(data: JsonInput, limits: JsonLimits) -> bool:
    """Whether [`validate`][ferrule.core.bounded_json.validate] accepts `data`."""
    try:
        validate(data, limits)
    except JsonError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _decoder(tp: Any, dec_hook: Callable[[type, Any], Any] | None, strict: bool) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp, dec_hook=dec_hook, strict=strict)


def _get_decoder(
    tp: Any, dec_hook: Callable[[type, Any], Any] | None, strict: bool
) -> msgspec.json.Decoder[Any]:
    try:
        return _decoder(tp, dec_hook, strict)
    except TypeError:
        # An unhashable type expression (e.g. Annotated with unhashable metadata): build one uncached.
        return msgspec.json.Decoder(tp, dec_hook=dec_hook, strict=strict)


_UNTYPED_STRICT: Final = msgspec.json.Decoder()
_UNTYPED_LAX: Final = msgspec.json.Decoder(strict=False)


@overload
def decode(
    data: JsonInput,
    *,
    type: type[T],
    limits: JsonLimits,
    dec_hook: Callable[[type, Any], Any] | None = None,
    strict: bool = True,
) -> T: ...
@overload
def decode(
    data: JsonInput,
    *,
    type: Any = ...,
    limits: JsonLimits,
    dec_hook: Callable[[type, Any], Any] | None = None,
    strict: bool = True,
) -> Any: ...
def decode(
    data: JsonInput,
    *,
    type: Any = Any,
    limits: JsonLimits,
    dec_hook: Callable[[type, Any], Any] | None = None,
    strict: bool = True,
) -> Any:
    """Check `data` against `limits`, then decode it into `type` with msgspec.

    Decoders are cached per `(type, dec_hook, strict)`. Raises
    [`JsonLimitError`][ferrule.core.bounded_json.JsonLimitError] before decoding anything,
    [`MalformedJsonError`][ferrule.core.bounded_json.MalformedJsonError] for invalid JSON and
    [`JsonTypeError`][ferrule.core.bounded_json.JsonTypeError] when the document does not fit `type`.
    """
    buf = _bounded(data, limits)
    if type is Any and dec_hook is None:
        decoder = _UNTYPED_STRICT if strict else _UNTYPED_LAX
    else:
        decoder = _get_decoder(type, dec_hook, strict)
    return _decode_bounded(decoder, buf, limits)


def _bounded(data: JsonInput, limits: JsonLimits) -> bytes | bytearray:
    """The bytes of `data` once they are known to be within `limits` (else the limit's error)."""
    buf = _as_buffer(data, limits)
    n = len(buf)
    # The bounds `check` tests first, inline and conservatively: a small document (a stream
    # event, a tool call's arguments) provably within every limit skips the call into the scan.
    if (
        n > limits.max_number_chars
        or n > 2 * limits.max_items
        or n - 2 > limits.max_string_bytes
        or (n > limits.max_depth and buf.count(b"[") + buf.count(b"{") > limits.max_depth)
    ):
        _preflight(buf, limits)
    return buf


def _decode_bounded(decoder: msgspec.json.Decoder[Any], buf: bytes | bytearray, limits: JsonLimits) -> Any:
    """`buf` (within `limits`) decoded, msgspec's errors mapped to ours."""
    try:
        return decoder.decode(buf)
    except msgspec.ValidationError as exc:
        raise _type_error(exc) from None
    except msgspec.DecodeError as exc:
        raise _malformed(exc, len(buf)) from None
    except RecursionError:
        raise JsonError(
            f"JSON nesting within max_depth={limits.max_depth} still exhausted the interpreter's "
            "recursion limit at this call depth; lower max_depth or decode nearer the top of the stack"
        ) from None


def decode_value(data: JsonInput, limits: JsonLimits) -> Any:
    """Check `data` against `limits` and decode it into plain JSON values (dict, list, str, ...)."""
    return decode(data, limits=limits)


def decode_provider_json(
    data: JsonInput,
    type: type[T],
    limits: JsonLimits,
    what: str,
    *,
    provider_name: str | None = None,
    model_name: str | None = None,
) -> T:
    """Decode JSON a provider sent within `limits` into `type`, leniently (`strict=False`).

    Every failure, limits included, raises [`ResponseDecodeError`][ferrule.core.errors.ResponseDecodeError]
    saying that `what` (e.g. `"the model listing"`) is not valid.
    """
    try:
        return decode(data, type=type, limits=limits, strict=False)
    except JsonError as exc:
        raise _provider_error(exc, what, provider_name, model_name) from None


def _provider_error(
    exc: JsonError, what: str, provider_name: str | None, model_name: str | None
) -> ResponseDecodeError:
    return ResponseDecodeError(
        f"{what} is not valid: {exc}", provider_name=provider_name, model_name=model_name
    )


class FastPathDecoder(Generic[T]):
    """Decodes a small document into a narrow type when it fits it, for a fast path beside a full
    decoder (a [`ProviderDecoder`][ferrule.core.bounded_json.ProviderDecoder] of the same limits).

    A stream decoder gives it each event first: [`decode`][ferrule.core.bounded_json.FastPathDecoder.decode]
    returns the document as `type` only when the document is provably within `limits` by its size
    (what `decode` would check without a scan) and matches `type` (strictly, unless `strict=False`);
    otherwise it returns `None`, and the full decoder decodes the document, checking its limits and
    reporting what is wrong. `type` should be a `msgspec.Struct` type: a document that decodes to
    `None` is not told apart from one that does not fit.
    """

    __slots__ = ("_decoder", "_depth", "_shallow", "_sized", "limits")

    def __init__(self, type: type[T], limits: JsonLimits, *, strict: bool = True) -> None:
        self._decoder: msgspec.json.Decoder[T] = _get_decoder(type, None, strict)
        self.limits = limits
        """The limits a document must provably respect to be decoded here."""
        # At most this many bytes, a document is within every limit but `max_depth`: each bound
        # `_bounded` tests by size alone (`check` would find nothing more).
        self._sized = min(
            limits.max_bytes, limits.max_number_chars, 2 * limits.max_items, limits.max_string_bytes + 2
        )
        # At most this many characters, a well-formed document is within `max_depth` too (it
        # nests at most half its characters deep); past them, when it has no more opening
        # brackets than `max_depth` (those in strings counted too), as `_bounded` counts them.
        self._shallow = 2 * limits.max_depth
        self._depth = limits.max_depth

    def decode(self, data: JsonInput) -> T | None:
        """`data` as the narrow type, or `None` (decode it with the full decoder); never raises."""
        if type(data) is str:
            # A `str` of n characters has at most 4n UTF-8 bytes (exactly n in ASCII).
            n = len(data)
            if n > self._sized or (n * 4 > self._sized and not data.isascii()):
                return None
            if n > self._shallow and data.count("{") + data.count("[") > self._depth:
                return None
        elif type(data) is bytes:
            n = len(data)
            if n > self._sized or (n > self._shallow and data.count(b"{") + data.count(b"[") > self._depth):
                return None
        else:
            return None  # another buffer: the full decoder copies it first
        try:
            return self._decoder.decode(data)
        except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
            return None  # msgspec.ValidationError is a DecodeError; a lone surrogate

    def decode_each(self, datas: Sequence[str]) -> list[T | None]:
        """Each document of `datas` as `decode` gives it (the narrow type, or `None`); never raises.

        For a batch of stream events (those of one network read): the size proof is made once
        for the whole list when every document is short enough, and the documents are decoded
        with no Python call between them.
        """
        if not datas:
            return []
        return self._decode_each(datas, list(map(len, datas)))

    def _decode_each(self, datas: Sequence[str], lengths: list[int]) -> list[T | None]:
        """`decode_each` of `datas`, whose `lengths` are known (measured once for a whole read)."""
        longest = max(lengths)
        if longest > self._sized:
            # A few documents too long to prove by their size (a Responses stream's first and last
            # events repeat the whole response): each of those alone, the others still together.
            return self._around_long(datas, lengths)
        if not (
            (longest * 4 <= self._sized or "".join(datas).isascii())
            and (longest <= self._shallow or self._few_openers(datas, lengths))
        ):
            return list(map(self.decode, datas))
        # Each document is within every limit by its size alone (and within `max_depth` by its
        # opening brackets), as `decode` proves it one by one.
        decoded: list[T | None] = []
        items = map(self._decoder.decode, datas)
        while True:
            try:
                # `extend` keeps what it appended before a document failed; `items` goes on
                # after that one.
                decoded.extend(items)
            except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):
                decoded.append(None)
            else:
                return decoded

    def _around_long(self, datas: Sequence[str], lengths: list[int]) -> list[T | None]:
        """`decode_each` of a read with documents over `_sized`: those by `decode`, the runs between
        them together (the long ones found in C, from the lengths already measured)."""
        decoded: list[T | None] = []
        start = 0
        for index in itertools.compress(
            itertools.count(), map(operator.lt, itertools.repeat(self._sized), lengths)
        ):
            if start < index:
                decoded += self._decode_each(datas[start:index], lengths[start:index])
            decoded.append(self.decode(datas[index]))
            start = index + 1
        if start < len(datas):
            decoded += self._decode_each(datas[start:], lengths[start:])
        return decoded

    def _few_openers(self, datas: Sequence[str], lengths: list[int]) -> bool:
        # Only the documents longer than `_shallow` can be deeper than `max_depth` (a read's
        # deltas are short; its last event, with the usage, often is not): counting every
        # document's brackets cost more than decoding them. The most `{` of any of those plus the
        # most `[` of any is at least any one's count of both, which is at least its depth: one
        # pass of each count in C, where `decode` counts each document in a call of its own.
        long = list(itertools.compress(datas, map(operator.lt, itertools.repeat(self._shallow), lengths)))
        braces = max(map(str.count, long, itertools.repeat("{")), default=0)
        return braces + max(map(str.count, long, itertools.repeat("[")), default=0) <= self._depth


class ProviderDecoder(Generic[T]):
    """[`decode_provider_json`][ferrule.core.bounded_json.decode_provider_json] for one type, limits
    and description, built once: for documents decoded many times a response (stream events).

    The same checks, leniency (`strict=False`) and errors, without choosing the msgspec decoder
    again for every document.
    """

    __slots__ = ("_decoder", "_small", "limits", "what")

    def __init__(self, type: type[T], limits: JsonLimits, what: str) -> None:
        self._decoder = _get_decoder(type, None, False)
        self.limits = limits
        """The limits every document is checked against."""
        self.what = what
        """What a document is, for the error message (`"a Chat Completions stream chunk"`)."""
        self._small = FastPathDecoder(type, limits, strict=False)

    def decode(
        self, data: JsonInput, *, provider_name: str | None = None, model_name: str | None = None
    ) -> T:
        """Decode one document; any failure, limits included, raises `ResponseDecodeError`."""
        # Most stream events: no size check, encoding or scan before the decode. A document
        # msgspec refuses (or one that decodes to `None`) takes the path below, which raises what
        # the checks find first, as for any document.
        found = self._small.decode(data)
        if found is not None:
            return found
        try:
            limits = self.limits
            return _decode_bounded(self._decoder, _bounded(data, limits), limits)
        except JsonError as exc:
            raise _provider_error(exc, self.what, provider_name, model_name) from None
