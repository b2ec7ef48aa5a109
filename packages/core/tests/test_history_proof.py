"""`WireCache.prove`: one fingerprint of a history, how many leading messages are unchanged since the
last proof, how far each check got over them, and encodes that reuse the proof's fingerprint while it
is armed (the same bytes as without it)."""

from __future__ import annotations

import json

import msgspec
import pytest

from ferrule.core.codec import WireCache
from ferrule.core.errors import UnsupportedFeatureError
from ferrule.core.messages import ImageUrl, Message, ModelRequest, ModelResponse, TextPart, UserPromptPart
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
