"""An incremental, bounded parser for server-sent events (the WHATWG `text/event-stream` format).

[`SseParser`][ferrule.core.sse.SseParser] takes the decompressed body in chunks of any size and
returns complete events as they end. It works on bytes (line breaks are ASCII, so a split UTF-8
sequence is never mistaken for one), keeps at most one partial line, and raises
[`ResponseTooLargeError`][ferrule.core.errors.ResponseTooLargeError] before a line or an event
grows past its limit, so a hostile stream cannot make it buffer more than the limits allow.
"""

from __future__ import annotations

import itertools
import operator

import msgspec

from .errors import ResponseTooLargeError

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "DEFAULT_MAX_LINE_BYTES", "SseEvent", "SseParser"]

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
"""Default longest line (without its line break), in bytes: 4 MiB."""
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Default largest `data` of one event (lines joined by `\\n`), in bytes: 16 MiB."""

_BOM = b"\xef\xbb\xbf"

# The separators of the two common shapes of event, one `data: ` line (a Chat Completions stream)
# or an `event: ` line and a `data: ` line (a Responses or Messages stream), split on in C.
_DATA_SEPARATOR = "\n\ndata: "
_NAMED_SEPARATOR = "\n\nevent: "
_DATA_LINE = "\ndata: "
_separator = operator.itemgetter(1)


class SseEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched server-sent event."""

    event: str = "message"
    """The event type: the last `event:` field of the block, or `"message"`."""
    data: str
    """The `data:` lines of the block joined by `\\n` (invalid UTF-8 replaced by U+FFFD)."""
    id: str | None = None
    """The stream's last event ID when this event was dispatched (it persists across events, as in
    the WHATWG spec); `None` if no `id:` field has been seen yet."""


class SseParser:
    """Turns chunks of a `text/event-stream` body into `SseEvent`s, incrementally and within limits.

    Handles CRLF, CR and LF line breaks (also when split across chunks), a leading byte-order mark,
    comments, and the `event`, `data`, `id` and `retry` fields; unknown fields are ignored.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_last_id",
        "_max_event",
        "_max_line",
        "_named",
        "_partial",
        "_skip_lf",
        "_started",
        "retry",
    )

    def __init__(
        self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    ) -> None:
        if max_line_bytes < 1 or max_event_bytes < 1:
            raise ValueError("SseParser limits must be positive")
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self._partial = bytearray()
        self._skip_lf = False
        self._started = False
        self._data: list[bytes] = []
        self._data_size = 0
        self._event: bytes | None = None
        self._last_id: str | None = None
        # The `event: name\ndata: ` that began the last named one-line event, and its name.
        self._named: tuple[str, str] | None = None
        self.retry: int | None = None
        """The reconnection time in milliseconds from the last valid `retry:` field, if any."""

    @property
    def last_event_id(self) -> str | None:
        """The last event ID seen so far (`None` if none)."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse the next chunk of the body and return the events it completes (often none)."""
        if not chunk:
            return []
        if not self._started:
            if self._partial or (len(chunk) < len(_BOM) and _BOM.startswith(chunk)):
                return self._feed_lines(chunk)  # perhaps a byte-order mark split across chunks
            # The stream's start: without its byte-order mark, the first chunk (often most of a
            # short stream) takes the block path like every other.
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
                if not chunk:
                    return []
        if self._skip_lf or b"\r" in chunk:
            return self._feed_lines(chunk)
        events: list[SseEvent] = []
        if self._partial:
            # Network reads rarely end at an event boundary: finish the line the last one began
            # (and the event, if its blank line follows), so the rest can take the block path.
            lf = chunk.find(b"\n")
            if lf < 0:
                return self._feed_lines(chunk)
            if len(self._partial) + lf > self._max_line:
                raise self._line_too_large(len(self._partial) + lf)
            self._partial += chunk[:lf]
            line = bytes(self._partial)
            self._partial.clear()
            self._line(line, events)
            chunk = chunk[lf + 1 :]
            if chunk[:1] == b"\n":
                self._dispatch(events)
                chunk = chunk[1:]
            if not chunk:
                return events
        if self._data or self._event is not None:
            # An event the last read left open: its lines up to the blank line that ends it go
            # through the line parser, and the rest of the chunk starts at an event boundary.
            if chunk[:1] == b"\n":
                self._dispatch(events)
                chunk = chunk[1:]
            else:
                end = chunk.find(b"\n\n")
                if end < 0:
                    events.extend(self._feed_lines(chunk))
                    return events
                events.extend(self._feed_lines(chunk[: end + 2]))
                chunk = chunk[end + 2 :]
            if not chunk:
                return events
        events.extend(self._feed_blocks(chunk))
        return events

    def _feed_blocks(self, chunk: bytes) -> list[SseEvent]:
        """`feed` for a chunk that starts at an event boundary and has only LF line breaks.

        A chunk within the limits whose complete events all have one shape, one `data: ` line or
        an `event: ` line and a `data: ` line (nearly every read of a model stream), is parsed in
        one pass in C. Otherwise it decodes the chunk once and splits it on blank lines once; an
        event of either shape is dispatched without walking its lines. Anything else goes
        through the line parser, which also enforces the limits on anything that could exceed them.
        """
        small = min(self._max_line, self._max_event)
        if len(chunk) <= small:
            # Every line and event of the chunk is within the limits.
            end = chunk.rfind(b"\n\n") + 2
            if end > 2:
                whole = self._whole_events(chunk[:end])
                if whole is not None:
                    if end < len(chunk):
                        whole.extend(self._feed_lines(chunk[end:]))
                    return whole
        events: list[SseEvent] = []
        raws: list[bytes] | None = None
        if chunk.isascii():
            blocks = chunk.decode("ascii").split("\n\n")
            # After the last blank line: the start of an unfinished event, if any.
            rest = chunk[len(chunk) - len(blocks.pop()) :]
        else:
            # Each block decoded alone (as its lines would be); a character is at most 4 bytes.
            raws = chunk.split(b"\n\n")
            rest = raws.pop()
            blocks = [raw.decode("utf-8", "replace") for raw in raws]
            small //= 4
        for index, block in enumerate(blocks):
            if len(block) <= small:
                if block.startswith("data:"):
                    if "\n" not in block:
                        value = block[6:] if block.startswith(" ", 5) else block[5:]
                        events.append(SseEvent(data=value, id=self._last_id))
                        continue
                elif block.startswith("event:"):
                    # `event:` then one `data:` line (every event of a Responses or Messages stream).
                    named = self._named
                    if (
                        named is not None
                        and block.startswith(named[0])
                        and block.find("\n", len(named[0])) < 0
                    ):
                        # The same `event: ...\ndata: ` as the last such event: most of a stream.
                        events.append(SseEvent(event=named[1], data=block[len(named[0]) :], id=self._last_id))
                        continue
                    lf = block.find("\n")
                    if block.startswith("data:", lf + 1) and block.find("\n", lf + 1) < 0:
                        name = (block[7:lf] if block.startswith(" ", 6) else block[6:lf]) or "message"
                        if block.startswith(" ", lf + 6):
                            start = lf + 7
                            self._named = (block[:start], name)
                        else:
                            start = lf + 6
                        events.append(SseEvent(event=name, data=block[start:], id=self._last_id))
                        continue
            for line in (block.encode() if raws is None else raws[index]).split(b"\n"):
                self._line(line, events)
            self._line(b"", events)
        if rest:
            events.extend(self._feed_lines(rest))
        return events

    def _whole_events(self, head: bytes) -> list[SseEvent] | None:
        """The events of `head`, complete events within the limits, when they are all of one of
        the two common shapes and `head` is valid UTF-8 (decoded at once, in C); else `None`."""
        if not head.startswith((b"data: ", b"event: ")):
            return None
        try:
            text = head.decode("ascii") if head.isascii() else head.decode("utf-8")
        except UnicodeDecodeError:
            return None  # replaced character by character, block by block, as lines are
        last_id = self._last_id
        # `text` starts with a field and ends with a blank line. Split on the separator of its
        # shape, it is a run of events of that shape exactly when its line breaks add up: the
        # separators and the final blank line hold two each, and a named event one more, between
        # its two lines. Any other line break (a second data line, an extra blank line) makes the
        # count too high. A few passes in C, where a regular expression took two (match, then find).
        if text.startswith("d"):
            values = text[6:-2].split(_DATA_SEPARATOR)
            if text.count("\n") != 2 * len(values):
                return None
            return [SseEvent(data=value, id=last_id) for value in values]
        blocks = text[7:-2].split(_NAMED_SEPARATOR)
        if text.count("\n") != 3 * len(blocks):
            return None
        named = list(map(str.partition, blocks, itertools.repeat(_DATA_LINE)))
        if not all(map(_separator, named)):
            return None  # a block without its `data: ` line, whose line break another block holds
        return [SseEvent(event=name or "message", data=value, id=last_id) for name, _, value in named]

    def _feed_lines(self, chunk: bytes) -> list[SseEvent]:
        if self._skip_lf:
            # The previous chunk ended in CR: a LF starting this chunk completes that CRLF.
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        lf = chunk.find(b"\n")
        cr = chunk.find(b"\r")
        if lf < 0 and cr < 0:
            # Common for long lines arriving in pieces: extend the partial line without re-scanning it.
            if len(self._partial) + len(chunk) > self._max_line:
                raise self._line_too_large(len(self._partial) + len(chunk))
            self._partial += chunk
            return []
        events: list[SseEvent] = []
        if self._partial:
            first_end = min(i for i in (lf, cr) if i >= 0)
            if len(self._partial) + first_end > self._max_line:
                raise self._line_too_large(len(self._partial) + first_end)
            self._partial += chunk
            chunk = bytes(self._partial)
            self._partial.clear()
        lines = chunk.splitlines(keepends=True)
        last = lines[-1]
        if last[-1:] not in (b"\n", b"\r"):
            lines.pop()
            if len(last) > self._max_line:
                raise self._line_too_large(len(last))
            self._partial += last
        elif last[-1:] == b"\r":
            self._skip_lf = True
        for line in lines:
            self._line(line.rstrip(b"\r\n"), events)
        return events

    def close(self) -> list[SseEvent]:
        """End of the body: treat a final unterminated line as complete and dispatch a pending event.

        The WHATWG spec discards an event without its closing blank line; ferrule dispatches it
        because the transport has already verified that the body ended cleanly, and some servers
        omit the last blank line. Codecs still detect streams that end before their final event.
        """
        events: list[SseEvent] = []
        if self._partial:
            line = bytes(self._partial)
            self._partial.clear()
            self._line(line, events)
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[SseEvent]) -> None:
        if not self._started:
            self._started = True
            if line.startswith(_BOM):
                line = line[len(_BOM) :]
        if len(line) > self._max_line:
            raise self._line_too_large(len(line))
        if not line:
            self._dispatch(events)
            return
        if line[0] == 0x3A:  # ":" starts a comment (servers use them as keep-alives)
            return
        field, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            size = self._data_size + len(value) + (1 if self._data else 0)
            if size > self._max_event:
                raise ResponseTooLargeError(
                    f"a server-sent event's data exceeds the limit of {self._max_event} bytes; "
                    "raise HttpLimits.max_stream_event_bytes if this provider legitimately sends larger events",
                    details={"limit": self._max_event, "kind": "sse_event"},
                )
            self._data.append(value)
            self._data_size = size
        elif field == b"event":
            self._event = value
        elif field == b"id":
            if b"\x00" not in value:
                self._last_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            self.retry = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        if not self._data:
            self._event = None
            return
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        events.append(SseEvent(event=event, data=data.decode("utf-8", "replace"), id=self._last_id))
        self._data = []
        self._data_size = 0
        self._event = None

    def _line_too_large(self, size: int) -> ResponseTooLargeError:
        return ResponseTooLargeError(
            f"a server-sent event line of at least {size} bytes exceeds the limit of {self._max_line} bytes; "
            "raise HttpLimits.max_stream_line_bytes if this provider legitimately sends longer lines",
            details={"limit": self._max_line, "kind": "stream_line"},
        )
