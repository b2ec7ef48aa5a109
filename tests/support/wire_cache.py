"""Shared pieces of the codecs' wire-cache tests: a marking cache and the histories they grow.

A cached body must be byte-identical to the uncached one, so a test cannot tell from the bytes
alone which path a request took; `Marking` makes the reused turns visible. The histories are the
same for every codec: recorded answers strung into one conversation, and a history processor's
view that shortens every tool result.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

from ferrule.core.codec import WireCache
from ferrule.core.conformance import Interaction
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart
from ferrule.core.model import ModelCall

__all__ = [
    "Marking",
    "assert_every_step_identical",
    "edit_answer",
    "elide_tool_returns",
    "one_long_history",
    "replayed",
]


class Marking(WireCache):
    """A cache whose reused turns say so: `step` reads `STEP` in every turn taken from it."""

    __slots__ = ()

    def encode(
        self,
        messages: Any,
        view: Any,
        encode: Any,
        /,
        *,
        start: int = 0,
        before: bytes = b"",
        lead: bytes = b"",
        after: bytes | Callable[[], bytes] = b"",
    ) -> bytes:
        body = super().encode(messages, view, encode, start=start, before=before, lead=lead, after=after)
        return body.replace(b"step", b"STEP")


def replayed(
    interactions: Iterable[Interaction],
    wanted: Callable[[str], bool],
    decode: Callable[[Interaction], ModelResponse],
) -> Iterator[tuple[int, ModelResponse]]:
    """The decoded successful answers of the interactions whose URI is `wanted`, with their index."""
    for n, it in enumerate(interactions):
        if it.status >= 300 or not wanted(it.uri):
            continue
        try:
            response = decode(it)
        except Exception:  # recorded errors and unfinished answers are not history
            continue
        yield n, response


def one_long_history(answers: Iterable[tuple[int, ModelResponse]]) -> list[Message]:
    """One conversation from numbered answers: each followed by its tool calls' results, or a prompt."""
    history: list[Message] = [ModelRequest(parts=[UserPromptPart(content="start")])]
    for n, response in answers:
        history.append(response)
        returns: list[ModelRequestPart] = [
            ToolReturnPart(tool_name=p.tool_name, content=f"result {n}", tool_call_id=p.tool_call_id)
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ]
        history.append(ModelRequest(parts=returns or [UserPromptPart(content=f"next {n}")]))
    return history


def elide_tool_returns(messages: list[Message]) -> list[Message]:
    """A history processor's view: new requests with every tool result shortened, the rest as they are."""
    out: list[Message] = []
    for m in messages:
        if isinstance(m, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in m.parts):
            parts = [
                ToolReturnPart(tool_name=p.tool_name, content="(elided)", tool_call_id=p.tool_call_id)
                if isinstance(p, ToolReturnPart)
                else p
                for p in m.parts
            ]
            out.append(ModelRequest(parts=parts))
        else:
            out.append(m)
    return out


def edit_answer(messages: list[Message], index: int) -> TextPart:
    """Edit in place the text (the second part) of the model answer at `index`; the part, to edit again."""
    response = messages[index]
    assert isinstance(response, ModelResponse)
    text = response.parts[1]
    assert isinstance(text, TextPart)
    text.content = "edited in place"
    return text


def assert_every_step_identical(
    history: list[Message], encode: Callable[[ModelCall, WireCache | None], object]
) -> None:
    """Encode each prefix of `history` through one cache and without one: the same request or error.

    `encode(call, cache)` builds the request with the codec under test; a `UserError` stands as its
    text, so a refusal must be the same refusal with and without the cache.
    """
    cache = WireCache()
    for end in range(1, len(history) + 1):
        call = ModelCall(instructions="Be brief.", messages=history[:end])
        assert _outcome(encode, call, cache) == _outcome(encode, call, None)


def _outcome(
    encode: Callable[[ModelCall, WireCache | None], object], call: ModelCall, cache: WireCache | None
) -> object:
    try:
        return encode(call, cache)
    except UserError as exc:
        return f"{type(exc).__name__}: {exc}"
