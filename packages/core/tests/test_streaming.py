from __future__ import annotations

import gc

from ferrule.core.messages import NativeToolReturnPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ThinkingPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import ModelStreamEvent
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartEndEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ThinkingPartDelta
from ferrule.core.model import ToolCallPartDelta
from ferrule.core.streaming import ResponseBuilder


def test_text_deltas_accumulate_into_one_part() -> None:
    b = ResponseBuilder()
    events = b.text("Hel") + b.text("") + b.text("lo")
    assert isinstance(events[0], PartStartEvent)
    assert [e.delta for e in events if isinstance(e, PartDeltaEvent)] == [
        TextPartDelta("Hel"),
        TextPartDelta("lo"),
    ]
    ends = b.finish()
    assert ends == [PartEndEvent(0, TextPart("Hello"))]
    assert b.parts == [TextPart("Hello")]


def test_keyed_text_continues_its_own_part() -> None:
    # A keyed delta continues the part of its key: the last part (the common case) or an
    # earlier one; an unknown key, or the key of an ended part, starts a new part.
    b = ResponseBuilder()
    assert isinstance(b.text("a", key="k1", id="m1")[0], PartStartEvent)
    assert b.text("b", key="k1") == [PartDeltaEvent(0, TextPartDelta("b"))]
    assert isinstance(b.text("c", key="k2")[0], PartStartEvent)
    assert b.text("d", key="k1") == [PartDeltaEvent(0, TextPartDelta("d"))]
    assert b.text("e", key="k2") == [PartDeltaEvent(1, TextPartDelta("e"))]
    assert b.text("f") == [PartDeltaEvent(1, TextPartDelta("f"))]
    b.end("k2")
    assert isinstance(b.text("g", key="k2")[0], PartStartEvent)
    b.finish()
    assert b.parts == [TextPart("abd", id="m1"), TextPart("cef"), TextPart("g")]


def test_text_after_the_open_text_part_ended_or_another_part_started_is_a_new_part() -> None:
    # Most deltas continue the last part while it is open text; once it ended, or a part of
    # another kind (or a whole one) followed it, text starts a new part.
    b = ResponseBuilder()
    b.text("a", key="t")
    assert b.text("b") == [PartDeltaEvent(0, TextPartDelta("b"))]
    b.end("t")
    assert [type(e) for e in b.text("c")] == [PartStartEvent, PartDeltaEvent]
    b.thinking("hm")
    assert [type(e) for e in b.text("d")] == [PartStartEvent, PartDeltaEvent]
    b.add(TextPart("whole"))
    assert [type(e) for e in b.text("e")] == [PartStartEvent, PartDeltaEvent]
    b.tool_call(key=0, tool_name="f", tool_call_id="c1")
    assert [type(e) for e in b.text("f")] == [PartStartEvent, PartDeltaEvent]
    assert b.text("g", key="unknown")[0] == PartStartEvent(8, TextPart(""))
    assert b.text("h") == [PartDeltaEvent(8, TextPartDelta("h"))]
    b.finish()
    assert b.parts == [
        TextPart("ab"),
        TextPart("c"),
        ThinkingPart("hm"),
        TextPart("d"),
        TextPart("whole"),
        TextPart("e"),
        ToolCallPart("f", None, "c1"),
        TextPart("f"),
        TextPart("gh"),
    ]


def test_interleaved_keyed_tool_calls_and_text() -> None:
    b = ResponseBuilder()
    b.text("Let me check.")
    b.tool_call(key=0, tool_name="weather", tool_call_id="c1", args='{"ci')
    b.tool_call(key=1, tool_name="time", tool_call_id="c2")
    b.tool_call(key=0, args='ty": "Paris"}')
    b.tool_call(key=1, args="{}")
    b.finish()
    assert b.parts == [
        TextPart("Let me check."),
        ToolCallPart("weather", '{"city": "Paris"}', "c1"),
        ToolCallPart("time", "{}", "c2"),
    ]


def test_tool_call_without_id_gets_a_stable_generated_one() -> None:
    b = ResponseBuilder()
    events = b.tool_call(key="x", tool_name="t", args={"a": 1})
    assert events[-1] == PartDeltaEvent(0, ToolCallPartDelta(tool_name_delta="t", args_delta={"a": 1}))
    b.finish()
    first = b.parts[0]
    assert isinstance(first, ToolCallPart)
    assert first.tool_call_id.startswith("call_")
    assert b.parts[0] == first


def test_thinking_signature_replaces_and_text_after_thinking_is_a_new_part() -> None:
    b = ResponseBuilder()
    b.thinking("step 1", provider_name="anthropic")
    events = b.thinking(signature="sig-a") + b.thinking(signature="sig-b")
    assert events[-1] == PartDeltaEvent(0, ThinkingPartDelta(signature_delta="sig-b"))
    b.text("answer")
    b.finish()
    assert b.parts == [
        ThinkingPart("step 1", signature="sig-b", provider_name="anthropic"),
        TextPart("answer"),
    ]


def test_whole_parts_start_and_end_at_once_and_end_by_key() -> None:
    b = ResponseBuilder()
    b.text("a", key="t1")
    ended = b.end("t1")
    assert ended == [PartEndEvent(0, TextPart("a"))]
    assert b.end("t1") == []
    native = NativeToolReturnPart("web_search", {"r": 1}, "n1")
    events = b.add(native)
    assert [type(e) for e in events] == [PartStartEvent, PartEndEvent]
    b.text("b", key="t1")  # the ended part is not reopened
    b.finish()
    assert [type(p) for p in b.parts] == [TextPart, NativeToolReturnPart, TextPart]


def test_text_part_details_and_citations_accumulate() -> None:
    b = ResponseBuilder()
    b.text("a", key=0, citations=[{"url": "https://e.com/1"}])
    b.text("b", key=0, provider_details={"signature": "s1"}, citations=[{"url": "https://e.com/2"}])
    b.text("", key=0, provider_details={"extra": 1})
    b.finish()
    assert b.parts == [
        TextPart(
            "ab",
            provider_details={"signature": "s1", "extra": 1},
            citations=[{"url": "https://e.com/1"}, {"url": "https://e.com/2"}],
        )
    ]


def _scripted(b: ResponseBuilder) -> None:
    # Text of no key, of keys, an ended part, a thinking part in between: every case `text` has.
    b.text("a", key="k1", id="m1")
    b.thinking("t")
    b.text("b", key="k2")
    b.end("k2")


def test_texts_is_text_for_each_delta() -> None:
    cases: list[tuple[list[str], str | None]] = [
        (["x", "y", "z"], None),
        (["x", "", "y"], None),
        (["", ""], None),
        ([], None),
        (["x", "y"], "k1"),  # an open part, not the last one
        (["x", "y"], "k2"),  # an ended part: a new one
        (["x", "", "y"], "k3"),  # a new key
    ]
    for deltas, key in cases:
        for setup in (None, _scripted):
            one, many = ResponseBuilder(), ResponseBuilder()
            if setup is not None:
                setup(one)
                setup(many)
            expected = [event for delta in deltas for event in one.text(delta, key=key)]
            out: list[ModelStreamEvent] = []
            many.texts(deltas, out, key=key)
            assert out == expected, (deltas, key, setup)
            # And the builders go on alike.
            assert many.text("w", key=key) == one.text("w", key=key)
            assert many.finish() == one.finish()
            assert many.parts == one.parts


def test_a_read_of_deltas_adds_nothing_for_the_garbage_collector_to_track() -> None:
    # A read of a long stream makes a few hundred delta events at once: were they tracked, their
    # allocations alone would start collections in the middle of the stream.
    b = ResponseBuilder()
    out: list[ModelStreamEvent] = []
    b.text("a")
    b.texts([f"d{n}" for n in range(400)], out)
    assert len(out) == 400
    assert not any(map(gc.is_tracked, out))
    assert not gc.is_tracked(PartDeltaEvent(0, TextPartDelta("x")))
