"""SseParser: the WHATWG event-stream rules, arbitrary chunking, and the line and event limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrule.core.errors import ErrorCategory
from ferrule.core.errors import ResponseTooLargeError
from ferrule.core.sse import SseEvent
from ferrule.core.sse import SseParser


def parse(*chunks: bytes, parser: SseParser | None = None) -> list[SseEvent]:
    parser = parser or SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def test_single_event() -> None:
    assert parse(b"data: hello\n\n") == [SseEvent(data="hello")]


def test_event_type_multiline_data_and_id() -> None:
    stream = b"event: delta\ndata: line one\ndata: line two\nid: 7\n\n"
    assert parse(stream) == [SseEvent(event="delta", data="line one\nline two", id="7")]


def test_last_event_id_persists_and_can_be_reset() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"
    assert [(e.data, e.id) for e in parse(stream)] == [("a", "1"), ("b", "1"), ("c", "")]


def test_id_with_nul_is_ignored() -> None:
    assert parse(b"id: 5\n\nid: x\x00y\ndata: d\n\n") == [SseEvent(data="d", id="5")]


def test_event_type_resets_after_dispatch() -> None:
    events = parse(b"event: a\ndata: 1\n\ndata: 2\n\n")
    assert [e.event for e in events] == ["a", "message"]


def test_block_without_data_is_not_dispatched_and_resets_event_type() -> None:
    events = parse(b"event: ping\n\ndata: x\n\n")
    assert events == [SseEvent(data="x")]


def test_comments_unknown_fields_and_colon_rules() -> None:
    stream = (
        b": keep-alive comment\n"
        b"unknown: field\n"
        b"data:no-space\n"
        b"data:  two spaces\n"  # only one leading space is removed
        b"data\n"  # a field without a colon has an empty value
        b"data: a: colon inside\n"
        b"\n"
    )
    assert parse(stream) == [SseEvent(data="no-space\n two spaces\n\na: colon inside")]


def test_empty_data_line_gives_empty_event() -> None:
    assert parse(b"data\n\n") == [SseEvent(data="")]
    assert parse(b"data:\n\n") == [SseEvent(data="")]


def test_retry_field() -> None:
    parser = SseParser()
    assert parser.feed(b"retry: 1500\n\nretry: soon\n\n") == []
    assert parser.retry == 1500
    parser.feed(b"retry: 20\n")
    assert parser.retry == 20


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_all_line_break_styles(newline: bytes) -> None:
    stream = newline.join([b"event: e", b"data: 1", b"data: 2", b"", b"data: 3", b"", b""])
    assert parse(stream) == [SseEvent(event="e", data="1\n2"), SseEvent(data="3")]


def test_crlf_split_across_chunks_is_one_line_break() -> None:
    # A CR ending one chunk and the LF starting the next must not make an extra blank line.
    assert parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SseEvent(data="a\nb")]


def test_lone_lf_chunk_after_cr() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\r\n") == [SseEvent(data="a")]


def test_bom_is_stripped_once_even_when_split() -> None:
    assert parse(b"\xef\xbb\xbfdata: x\n\n") == [SseEvent(data="x")]
    assert parse(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [SseEvent(data="x")]
    # A BOM later in the stream is data, not stripped.
    assert parse(b"data: a\n\n\xef\xbb\xbfdata: b\n\n")[1:] == []


def test_utf8_split_across_chunks_and_invalid_bytes() -> None:
    text = "données ✓ 😀".encode()
    stream = b"data: " + text + b"\n\n"
    chunks = [stream[i : i + 1] for i in range(len(stream))]
    assert parse(*chunks) == [SseEvent(data="données ✓ 😀")]
    assert parse(b"data: \xff\xfe\n\n") == [SseEvent(data="\ufffd\ufffd")]


def test_close_flushes_an_unterminated_event() -> None:
    parser = SseParser()
    assert parser.feed(b'data: {"done": true}') == []
    assert parser.close() == [SseEvent(data='{"done": true}')]


def test_close_with_nothing_pending() -> None:
    parser = SseParser()
    parser.feed(b"data: a\n\n")
    assert parser.close() == []


STREAM = (
    b"\xef\xbb\xbf: hi\r\n"
    b'event: response.created\r\nid: 1\r\ndata: {"a":1}\r\n\r\n'
    b"data: x\rdata: y\r\r"
    b"data: \xc3\xa9t\xc3\xa9\n\n"
    b"retry: 10\nevent: end\ndata: [DONE]\n\n"
)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert parse(*chunks) == parse(STREAM)
    assert parse(STREAM) == [
        SseEvent(event="response.created", data='{"a":1}', id="1"),
        SseEvent(data="x\ny", id="1"),
        SseEvent(data="été", id="1"),
        SseEvent(event="end", data="[DONE]", id="1"),
    ]


# A model stream: LF only, mostly one-line `data:` events (the parser's block fast path), with
# the shapes that must leave it: comments, multi-line data, event and id fields, extra blank
# lines, a field without a space, an empty data line, and an event left open at the end.
LF_STREAM = (
    b": keep-alive\n\n"
    b'data: {"d":"a"}\n\n'
    b"data:b\n\n"
    b"event: delta\nid: 9\ndata: c\n\n"
    b"data: d1\ndata: d2\n\n\n\n"
    b"data:\n\n"
    b": note\ndata: e\n\n"
    b"retry: 5\n\n"
    b"data: f\n\n"
    b"data: open"
)
LF_EVENTS = [
    SseEvent(data='{"d":"a"}'),
    SseEvent(data="b"),
    SseEvent(event="delta", data="c", id="9"),
    SseEvent(data="d1\nd2", id="9"),
    SseEvent(data="", id="9"),
    SseEvent(data="e", id="9"),
    SseEvent(data="f", id="9"),
    SseEvent(data="open", id="9"),
]


@given(st.lists(st.integers(min_value=0, max_value=len(LF_STREAM)), max_size=12))
def test_lf_stream_in_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [LF_STREAM[a:b] for a, b in zip([0, *points], [*points, len(LF_STREAM)], strict=True)]
    assert parse(*chunks) == LF_EVENTS
    assert parse(*(LF_STREAM[i : i + 1] for i in range(len(LF_STREAM)))) == LF_EVENTS


@given(st.lists(st.integers(min_value=0, max_value=len(LF_STREAM) + 3), max_size=12))
def test_lf_stream_with_a_byte_order_mark_in_any_chunking(cuts: list[int]) -> None:
    # The first chunk takes the block path too once its byte-order mark is off; a mark split
    # across chunks (or a first line left unfinished) goes through the line parser first.
    stream = b"\xef\xbb\xbf" + LF_STREAM
    points = sorted(set(cuts))
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert parse(*chunks) == LF_EVENTS


def test_a_first_chunk_of_many_events_at_the_limits() -> None:
    # The stream's first chunk: one-line events at the line limit pass, one past it fails.
    ok = b"data: " + b"x" * 94  # 100 bytes
    assert (
        parse(b"\xef\xbb\xbf" + (ok + b"\n\n") * 3, parser=SseParser(max_line_bytes=100))
        == [SseEvent(data="x" * 94)] * 3
    )
    with pytest.raises(ResponseTooLargeError, match="max_stream_line_bytes"):
        parse(ok + b"\n\n" + ok + b"x\n\n", parser=SseParser(max_line_bytes=100))


# A Responses / Messages stream: `event:` then one `data:` line (the block path), and the shapes
# that leave it: no space after a colon, an empty name, two data lines, an id line, no data.
NAMED_STREAM = (
    b'event: response.output_text.delta\ndata: {"delta":"a"}\n\n'
    b"event:b\ndata:2\n\n"
    b"event:\ndata: 3\n\n"
    b"event: c\ndata: 4\ndata: 5\n\n"
    b"event: d\n\n"
    b"event: e\nid: 7\ndata: 6\n\n"
    b"event: f\ndata: \xc3\xa9\n\n"
    b"event: g\ndata:\n\n"
    b"event: h\ndata: open"
)
NAMED_EVENTS = [
    SseEvent(event="response.output_text.delta", data='{"delta":"a"}'),
    SseEvent(event="b", data="2"),
    SseEvent(data="3"),
    SseEvent(event="c", data="4\n5"),
    SseEvent(event="e", data="6", id="7"),
    SseEvent(event="f", data="é", id="7"),
    SseEvent(event="g", data="", id="7"),
    SseEvent(event="h", data="open", id="7"),
]


@given(st.lists(st.integers(min_value=0, max_value=len(NAMED_STREAM)), max_size=12))
def test_named_events_in_any_chunking(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [NAMED_STREAM[a:b] for a, b in zip([0, *points], [*points, len(NAMED_STREAM)], strict=True)]
    assert parse(*chunks) == NAMED_EVENTS


def test_named_events_at_the_limits() -> None:
    event = b"event: delta\ndata: " + b"x" * 80  # 100 bytes: the data line is 86
    assert parse(event + b"\n\n", parser=SseParser(max_line_bytes=86)) == [
        SseEvent(event="delta", data="x" * 80)
    ]
    with pytest.raises(ResponseTooLargeError, match="max_stream_line_bytes"):
        parse(event + b"\n\n", parser=SseParser(max_line_bytes=85))
    assert parse(event + b"\n\n", parser=SseParser(max_event_bytes=80)) == [
        SseEvent(event="delta", data="x" * 80)
    ]
    with pytest.raises(ResponseTooLargeError, match="max_stream_event_bytes"):
        parse(event + b"\n\n", parser=SseParser(max_event_bytes=79))


def test_retry_and_pending_event_across_whole_event_chunks() -> None:
    parser = SseParser()
    assert parser.feed(b": start\n") == []
    assert parser.feed(b"retry: 7\n\ndata: a\n\ndata: b\n") == [SseEvent(data="a")]
    assert parser.retry == 7
    assert parser.feed(b"data: c\n\n") == [SseEvent(data="b\nc")]


# -- limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_line_at_exactly_the_limit_is_accepted(newline: bytes) -> None:
    line = b"data: " + b"x" * 94  # 100 bytes
    assert parse(line + newline + newline, parser=SseParser(max_line_bytes=100)) == [SseEvent(data="x" * 94)]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r", b""])
def test_line_one_past_the_limit_is_rejected(newline: bytes) -> None:
    line = b"data: " + b"x" * 95  # 101 bytes
    with pytest.raises(ResponseTooLargeError) as info:
        parse(line + newline + newline, parser=SseParser(max_line_bytes=100))
    assert info.value.category is ErrorCategory.RESPONSE_TOO_LARGE
    assert "max_stream_line_bytes" in str(info.value)


def test_partial_line_limit_is_enforced_before_buffering_more() -> None:
    parser = SseParser(max_line_bytes=100)
    parser.feed(b"data: ")
    for _ in range(47):
        parser.feed(b"xx")  # 6 + 94 = 100 bytes buffered, still within the limit
    with pytest.raises(ResponseTooLargeError):
        parser.feed(b"x")


def test_partial_line_limit_when_the_line_ends_in_a_later_chunk() -> None:
    parser = SseParser(max_line_bytes=10)
    parser.feed(b"data: 1234")  # 10 bytes, at the limit
    with pytest.raises(ResponseTooLargeError):
        parser.feed(b"5\n\n")


def test_long_line_made_of_many_chunks_at_the_limit() -> None:
    parser = SseParser(max_line_bytes=10)
    assert parser.feed(b"data: 12") == []
    assert parser.feed(b"34\n\n") == [SseEvent(data="1234")]


def test_event_data_at_exactly_the_limit_is_accepted() -> None:
    # Two data lines of 4 bytes joined by "\n": 9 bytes.
    assert parse(b"data: abcd\ndata: efgh\n\n", parser=SseParser(max_event_bytes=9)) == [
        SseEvent(data="abcd\nefgh")
    ]


def test_event_data_one_past_the_limit_is_rejected() -> None:
    with pytest.raises(ResponseTooLargeError, match="max_stream_event_bytes"):
        parse(b"data: abcd\ndata: efghi\n\n", parser=SseParser(max_event_bytes=9))


@pytest.mark.parametrize("limit", ["line", "event"])
def test_limits_hold_for_one_line_events_after_the_first_line(limit: str) -> None:
    # After its first line the parser takes whole LF-only events in one pass; the limits still hold.
    kwargs = {"max_line_bytes": 10} if limit == "line" else {"max_event_bytes": 4}
    parser = SseParser(**kwargs)
    assert parser.feed(b": started\n\n") == []
    assert parser.feed(b"data: abcd\n\n") == [SseEvent(data="abcd")]
    with pytest.raises(ResponseTooLargeError, match=f"max_stream_{limit}"):
        parser.feed(b"data: 12345\n\n")


def test_event_limit_counts_per_event() -> None:
    parser = SseParser(max_event_bytes=4)
    assert parse(b"data: abcd\n\ndata: efgh\n\n", parser=parser) == [
        SseEvent(data="abcd"),
        SseEvent(data="efgh"),
    ]


def test_invalid_limits() -> None:
    with pytest.raises(ValueError, match="positive"):
        SseParser(max_line_bytes=0)


def test_non_ascii_and_invalid_bytes_in_whole_chunks_match_the_line_parser() -> None:
    # A chunk that is not all ASCII takes the block path event by event; limits count bytes.
    stream = (
        b"data: donn\xc3\xa9es \xe2\x9c\x93\n\n"
        b"event: \xc3\xa9v\ndata: \xf0\x9f\x98\x80\n\n"
        b"data: \xff\xfe x\n\n"
        b"event: e\ndata: \xc3\n\n"
        b"data: tail \xc3"
    )
    whole = parse(stream)
    assert whole == parse(*(stream[i : i + 1] for i in range(len(stream))))
    assert whole == [
        SseEvent(data="données ✓"),
        SseEvent(event="év", data="😀"),
        SseEvent(data="\ufffd\ufffd x"),
        SseEvent(event="e", data="\ufffd"),
        SseEvent(data="tail \ufffd"),
    ]
    line = b"data: " + "é".encode() * 47  # 100 bytes, 53 characters
    assert (
        parse(line + b"\n\n" + line + b"\n\n", parser=SseParser(max_line_bytes=100))
        == [SseEvent(data="é" * 47)] * 2
    )
    with pytest.raises(ResponseTooLargeError, match="max_stream_line_bytes"):
        parse(b"data: a\n\n" + line + b"\n\n", parser=SseParser(max_line_bytes=99))


def test_repeated_event_names_in_whole_chunks() -> None:
    # The block path remembers the last `event: name\ndata: ` it saw; blocks that only look like
    # it (a longer name, no space after the colon, a second data line) must still parse exactly.
    stream = (
        b"event: d\ndata: 1\n\n"
        b"event: d\ndata: 2\n\n"
        b"event: d\ndata:3\n\n"
        b"event: d\ndata: 4\ndata: 5\n\n"
        b"event: dd\ndata: 6\n\n"
        b"event: d\ndata:  7\n\n"
        b"event:\ndata: 8\n\n"
        b"event:\ndata: 9\n\n"
        b"event: d\nid: 3\ndata: 10\n\n"
        b"event: d\ndata: 11\n\n"
    )
    expected = [
        SseEvent(event="d", data="1"),
        SseEvent(event="d", data="2"),
        SseEvent(event="d", data="3"),
        SseEvent(event="d", data="4\n5"),
        SseEvent(event="dd", data="6"),
        SseEvent(event="d", data=" 7"),
        SseEvent(data="8"),
        SseEvent(data="9"),
        SseEvent(event="d", data="10", id="3"),
        SseEvent(event="d", data="11", id="3"),
    ]
    assert parse(stream) == expected
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == expected


# Values for the whole-chunk path: one-line values with spaces, colons, non-ASCII and invalid
# UTF-8, and (for the fallback) a value that breaks the shape.
_VALUE = st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")) | st.sampled_from(
    [b"", b" lead", b"a: b", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xff", b"x\ndata: y", b"x\n\n\n"]
)


@given(
    st.lists(st.tuples(st.sampled_from([b"", b"delta", b"d: e", b" sp"]), _VALUE), min_size=1, max_size=8),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=0, max_value=30),
)
def test_whole_chunks_of_one_shape_match_the_line_parser(
    events: list[tuple[bytes, bytes]], named: bool, with_id: bool, tail: int
) -> None:
    # A chunk of complete events of one shape (one `data: ` line, or `event: ` and `data: `) is
    # parsed at once; anything the shape does not cover must still give what the line parser gives.
    blocks = [
        (b"event: " + name + b"\n" if named else b"") + b"data: " + value + b"\n\n" for name, value in events
    ]
    head = b"id: 4\n\n" if with_id else b""
    stream = head + b"".join(blocks) + b"data: rest"[:tail]
    expected = parse(*(stream[i : i + 1] for i in range(len(stream))))
    parser = SseParser()
    if head:
        assert parser.feed(head) == []
    assert parse(stream[len(head) :], parser=parser) == expected


def test_whole_chunks_of_one_shape_are_parsed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    whole_events = SseParser._whole_events

    def counted(self: SseParser, head: bytes) -> list[SseEvent] | None:
        events = whole_events(self, head)
        parsed.append(-1 if events is None else len(events))
        return events

    monkeypatch.setattr(SseParser, "_whole_events", counted)
    parser = SseParser(max_line_bytes=40)
    assert parser.feed(b"data: a\n\ndata:  b\n\ndata: \xc3\xa9\n\ndata: c") == [
        SseEvent(data="a"),
        SseEvent(data=" b"),
        SseEvent(data="é"),
    ]
    assert parser.feed(b"\n\nevent: x\ndata: 1\n\nevent: \ndata: 2\n\n") == [
        SseEvent(data="c"),
        SseEvent(event="x", data="1"),
        SseEvent(data="2"),
    ]
    assert parser.feed(b"data: 1\n\nevent: x\ndata: 2\n\n") == [
        SseEvent(data="1"),
        SseEvent(event="x", data="2"),
    ]
    assert parser.feed(b"data: \xff\n\n") == [SseEvent(data="\ufffd")]
    assert parsed == [3, 2, -1, -1]  # a mix, and invalid UTF-8, take the event-by-event path
    # A chunk longer than a limit is parsed event by event, where the limits are checked.
    with pytest.raises(ResponseTooLargeError, match="max_stream_line_bytes"):
        parser.feed(b"data: " + b"x" * 35 + b"\n\n")
    assert parsed == [3, 2, -1, -1]


def test_a_long_line_of_data_fields_is_parsed_in_linear_time() -> None:
    # Searching for one-line events in it would retry each `data: ` to the end of the line
    # (hours for a few megabytes); the whole-chunk path first checks the run, anchored.
    line = b"data: " * 100_000
    assert parse(line + b"\nx\n\n") == [SseEvent(data=line[6:].decode())]  # `x`: a field, ignored
    name = b"event: " * 50_000
    assert parse(name + b"\ndata: x\nmore\n\n") == [SseEvent(event=name[7:].decode(), data="x")]


# Pieces of the two common shapes and of what must leave their fast path: a second data line, an
# event line without data, a blank line too many, a field without its space, a comment.
_PIECES = ["data: ", "event: ", "data:", "id: 1", ": c", "x", "é", "{}", "\n", "\n\n"]


@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_a_read_of_whole_events_parses_as_its_lines_do(pieces: list[str]) -> None:
    # Whole in one read, the events take the block path (one split, the line breaks counted);
    # fed a byte at a time, the line parser. Both must find the same events.
    stream = "".join(pieces).encode() + b"\n\n"
    assert parse(stream) == parse(*(stream[i : i + 1] for i in range(len(stream))))


def test_line_breaks_that_add_up_across_events_do_not_pass_for_the_common_shape() -> None:
    # Two data lines in one named event and none in the next hold as many line breaks as two
    # one-line events: the event without its data line is what gives it away.
    stream = b"event: a\ndata: x\ndata: y\n\nevent: b\n\n"
    assert parse(stream) == [SseEvent(event="a", data="x\ny")]
    # A data event with a second line and one with an extra blank line before it, likewise.
    assert parse(b"data: x\ndata: y\n\ndata: z\n\n") == [SseEvent(data="x\ny"), SseEvent(data="z")]
    assert parse(b"data: x\n\n\ndata: z\n\n") == [SseEvent(data="x"), SseEvent(data="z")]
