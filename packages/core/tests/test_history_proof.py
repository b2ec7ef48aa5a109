"""`WireCache.prove`: one fingerprint of a history, how many leading messages are unchanged since the
last proof, how far each check got over them, and encodes that reuse the proof's fingerprint while it
is armed (the same bytes as without it)."""

from __future__ import annotations

import json

import msgspec
import pytest

from ferrule.core.codec import WireCache
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import ImageUrl
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall
from ferrule.core.profile import ModelProfile


def history(n: int) -> list[Message]:
    return [
        ModelRequest(parts=[UserPromptPart(content=f"q{i}")])
        if i % 2 == 0
        else ModelResponse(parts=[TextPart(content=f"a{i}")])
        for i in range(n)
    ]


def fragment(message: Message) -> bytes:
    part = message.parts[0]
    assert isinstance(part, UserPromptPart | TextPart)
    return json.dumps({"kind": message.kind, "content": part.content}).encode()


def plain(messages: list[Message], start: int = 0) -> bytes:
    return b",".join(fragment(m) for m in messages[start:])


def test_unchanged_prefix_and_checks_carried_over() -> None:
    cache = WireCache()
    messages = history(30)
    first = cache.prove(messages)
    assert first is not None
    assert first.unchanged_count == 0
    assert first.checked("kinds") == 0
    first.passed("kinds")
    assert first.checked("kinds") == 30
    messages.append(ModelRequest(parts=[UserPromptPart(content="new")]))
    grown = cache.prove(messages)
    assert grown is not None
    assert (grown.unchanged_count, grown.checked("kinds"), grown.checked("other")) == (30, 30, 0)
    part = messages[12].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = "edited in place"
    edited = cache.prove(messages)
    assert edited is not None
    assert (edited.unchanged_count, edited.checked("kinds")) == (12, 12)
    messages[3] = ModelResponse(parts=[TextPart(content="a3")])  # a new message (its own timestamp)
    replaced = cache.prove(messages)
    assert replaced is not None
    assert replaced.unchanged_count == 3
    assert cache.prove([]) is None
    copy = [msgspec.structs.replace(m) for m in messages]  # equal copies prove as unchanged
    proof = cache.prove([messages[0], *copy[1:]])
    assert proof is not None
    assert proof.unchanged_count == len(messages)


def test_proofs_are_bounded_like_the_wire_entries() -> None:
    few = WireCache(max_histories=2)
    conversations = [history(4) for _ in range(3)]
    for conversation in conversations:
        assert few.prove(conversation) is not None
    again = few.prove(conversations[0])  # forgotten: nothing carried over
    assert again is not None
    assert again.unchanged_count == 0
    latest = few.prove(conversations[2])
    assert latest is not None
    assert latest.unchanged_count == 4
    small = WireCache(max_bytes=200)
    long = history(40)
    assert small.prove(long) is not None
    proof = small.prove(long)  # its fingerprint is over the budget: proved, not kept
    assert proof is not None
    assert proof.unchanged_count == 0


def test_a_history_that_cannot_be_fingerprinted_is_not_proved() -> None:
    class Opaque:
        pass

    cache = WireCache()
    assert cache.prove([ModelRequest(parts=[UserPromptPart(content="hi")], metadata={"x": Opaque()})]) is None


@pytest.mark.parametrize("start", [0, 1, 5])
def test_armed_encodes_are_the_unarmed_bytes(start: int) -> None:
    cache = WireCache()
    unarmed = WireCache()
    messages = history(20)
    for step in range(8):
        proof = cache.prove(messages)
        assert proof is not None
        cache.arm(proof)
        try:
            armed = cache.encode(messages, "view", fragment, start=start)
        finally:
            cache.arm(None)
        assert proof.source is None  # the stretch ended
        assert armed == unarmed.encode(messages, "view", fragment, start=start) == plain(messages, start)
        messages.append(ModelRequest(parts=[UserPromptPart(content=f"step {step}")]))
        if step == 3:
            part = messages[7].parts[0]
            assert isinstance(part, TextPart)
            part.content = "edited"
        if step == 5:
            messages[start + 2] = ModelRequest(parts=[UserPromptPart(content="replaced")])
    # An encode of another history object while armed does not use the proof.
    proof = cache.prove(messages)
    assert proof is not None
    other = list(messages)
    cache.arm(proof)
    try:
        other[-1] = ModelRequest(parts=[UserPromptPart(content="only in the copy")])
        assert cache.encode(other, "view", fragment, start=start) == plain(other, start)
    finally:
        cache.arm(None)


def test_the_profile_check_skips_only_what_passed_under_the_same_kinds() -> None:
    cache = WireCache()
    messages = history(10)
    text = ModelProfile()
    images = ModelProfile(content_kinds=frozenset({"text", "image"}))
    proof = cache.prove(messages)
    assert proof is not None
    text.check(ModelCall(messages=messages), model="m", proof=proof)
    assert proof.checked(("content kinds", text.content_kinds)) == 10
    part = messages[4].parts[0]
    assert isinstance(part, UserPromptPart)
    part.content = ["see", ImageUrl(url="https://example.com/a.png")]
    proof = cache.prove(messages)
    assert proof is not None
    with pytest.raises(UnsupportedFeatureError, match="image input"):
        text.check(ModelCall(messages=messages), model="m", proof=proof)
    assert proof.checked(("content kinds", text.content_kinds)) == 4
    images.check(ModelCall(messages=messages), model="m", proof=proof)  # another check, from the start
    assert proof.checked(("content kinds", images.content_kinds)) == 10


def framed(messages: list[Message], start: int, lead: bytes) -> bytes:
    """What a framed encode answers: the lead and the fragments joined with commas, in brackets."""
    return b"[" + b",".join(f for f in (lead, *(fragment(m) for m in messages[start:])) if f) + b"]!"


@pytest.mark.parametrize("lead", [b"", b'{"lead":1}'])
@pytest.mark.parametrize("armed", [False, True])
def test_a_framed_encode_is_the_framed_fragments_and_reuses_them(lead: bytes, armed: bool) -> None:
    """`before`, `lead` and `after` frame the fragments in one answer, whose fragments later encodes
    reuse; a message edited in place is encoded again, an empty history gives the frame alone."""
    cache = WireCache()
    messages = history(20)
    calls: list[Message] = []

    def counted(message: Message) -> bytes:
        calls.append(message)
        return fragment(message)

    def encode(start: int = 1) -> bytes:
        proof = cache.prove(messages) if armed else None
        cache.arm(proof)
        try:
            return cache.encode(
                messages, "v", counted, start=start, before=b"[", lead=lead, after=lambda: b"]!"
            )
        finally:
            cache.arm(None)

    assert encode() == framed(messages, 1, lead)
    assert len(calls) == 19
    messages.append(ModelRequest(parts=[UserPromptPart(content="new")]))
    calls.clear()
    assert encode() == framed(messages, 1, lead)
    assert calls == [messages[-1]]  # the rest came from the framed answer before
    part = messages[7].parts[0]
    assert isinstance(part, TextPart)
    part.content = "edited in place"
    calls.clear()
    assert encode() == framed(messages, 1, lead)
    assert calls == messages[7:]
    assert cache.encode(
        messages, "v", counted, start=len(messages), before=b"[", lead=lead, after=lambda: b"]!"
    ) == (b"[" + lead + b"]!")


def test_a_framed_encode_calls_after_once_the_fragments_are_encoded() -> None:
    """A fragment that fails raises before `after` runs (the codec's errors keep their order)."""
    cache = WireCache()
    messages = history(4)
    called: list[str] = []

    def failing(message: Message) -> bytes:
        if message is messages[-1]:
            raise ValueError("this message cannot be sent")
        return fragment(message)

    with pytest.raises(ValueError, match="cannot be sent"):
        cache.encode(messages, "v", failing, before=b"[", after=lambda: called.append("after") or b"]")
    assert called == []
    assert (
        cache.encode(messages, "v", fragment, before=b"[", after=lambda: b"]")
        == b"[" + plain(messages) + b"]"
    )
