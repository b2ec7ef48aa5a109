"""Built-in history processors: shape what the model sees without touching the run's history.

A history processor is `fn(messages)` or `fn(ctx, messages)`, sync or async, returning the
messages to send. Processors come from the agent (`Agent(history_processors=...)`), from active
capabilities and from the run (`run(history_processors=...)`), and are applied left to right to
the provider-facing view before each request. The canonical history (`result.all_messages()`) is
never changed; processors must not mutate the messages they receive (the built-ins build new
ones).

```python
from ferrule.agent.history_processors import compact_text, keep_last

agent = Agent(model, history_processors=[keep_last(20), compact_text()])
```

Every built-in that removes messages finishes with `drop_orphaned_tool_traffic`, so a trimmed
view never holds a tool result without its call, or a call without its result.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any
from typing import TypeAlias
from typing import TypeVar
from typing import cast

import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelRequest
from ferrule.core.messages import ModelRequestPart
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import ModelResponsePart
from ferrule.core.messages import RetryPromptPart
from ferrule.core.messages import SystemPromptPart
from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.messages import ToolReturnPart
from ferrule.core.messages import UserPromptPart

from ._context import RunContext
from ._util import settled

__all__ = [
    "HistoryProcessor",
    "compact_text",
    "drop_orphaned_tool_traffic",
    "keep_last",
    "summarize_prefix",
]

HistoryProcessor: TypeAlias = Callable[..., "Sequence[Message] | Awaitable[Sequence[Message]]"]
"""`fn(messages)` or `fn(ctx, messages)`, sync or async, returning the messages to send."""

Summarizer: TypeAlias = Callable[..., "str | Awaitable[str]"]
"""`fn(messages)` or `fn(ctx, messages)`, sync or async, returning a summary of `messages`."""

_PartT = TypeVar("_PartT", ModelRequestPart, ModelResponsePart)


def _is_tool_answer(part: ModelRequestPart) -> bool:
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


def _is_user_turn(message: Message) -> bool:
    """A request that starts a turn: prompts, and no answers to earlier tool calls."""
    return isinstance(message, ModelRequest) and not any(_is_tool_answer(p) for p in message.parts)


def _clean_start(messages: Sequence[Message], start: int) -> int:
    """A cut index at or near `start` that does not split a tool exchange."""
    for index in range(start, len(messages)):
        if _is_user_turn(messages[index]):
            return index
    for index in range(start - 1, -1, -1):
        if _is_user_turn(messages[index]):
            return index
    return start


def drop_orphaned_tool_traffic(messages: Sequence[Message]) -> list[Message]:
    """The messages without unpaired tool traffic, leading responses or empty messages.

    A tool call is kept only when the next message answers it (a `ToolReturnPart` or a tool
    `RetryPromptPart` with its ID), and an answer only when the previous message holds its call.
    Messages left empty are removed, requests that become adjacent are merged, and the view starts
    with a request. Usable directly as a history processor.
    """
    current = list(messages)
    while True:
        changed = False
        result: list[Message] = []
        for index, message in enumerate(current):
            if isinstance(message, ModelResponse):
                nxt = current[index + 1] if index + 1 < len(current) else None
                answered: set[str] = set()
                if isinstance(nxt, ModelRequest):
                    for p in nxt.parts:
                        if isinstance(p, ToolReturnPart) or (isinstance(p, RetryPromptPart) and p.tool_name):
                            answered.add(p.tool_call_id)
                parts: list[ModelResponsePart] = [
                    p for p in message.parts if not isinstance(p, ToolCallPart) or p.tool_call_id in answered
                ]
                if len(parts) != len(message.parts):
                    changed = True
                    if not parts:
                        continue
                    message = msgspec.structs.replace(message, parts=parts)
                result.append(message)
            else:
                prev = current[index - 1] if index > 0 else None
                calls = (
                    {p.tool_call_id for p in prev.parts if isinstance(p, ToolCallPart)}
                    if isinstance(prev, ModelResponse)
                    else set[str]()
                )
                kept: list[ModelRequestPart] = []
                seen: set[str] = set()
                for part in message.parts:
                    if _is_tool_answer(part):
                        call_id = cast("ToolReturnPart | RetryPromptPart", part).tool_call_id
                        if call_id not in calls or call_id in seen:
                            continue
                        seen.add(call_id)
                    kept.append(part)
                if len(kept) != len(message.parts):
                    changed = True
                    if not kept:
                        continue
                    message = msgspec.structs.replace(message, parts=kept)
                last = result[-1] if result else None
                if isinstance(last, ModelRequest):
                    result[-1] = msgspec.structs.replace(last, parts=[*last.parts, *message.parts])
                    changed = True
                    continue
                result.append(message)
        while result and isinstance(result[0], ModelResponse):
            result.pop(0)
            changed = True
        if not changed:
            return result
        current = result


def keep_last(n: int) -> Callable[[Sequence[Message]], list[Message]]:
    """A processor sending only about the last `n` messages, never splitting a tool exchange.

    The cut moves forward to the next request that starts a user turn (or, when the tail is one
    long tool loop, back to the previous one), then unpaired tool traffic is dropped.
    """
    if n < 1:
        raise UserError(f"keep_last(n) needs n >= 1, got {n}")

    def process(messages: Sequence[Message]) -> list[Message]:
        if len(messages) <= n:
            return list(messages)
        start = _clean_start(messages, len(messages) - n)
        return drop_orphaned_tool_traffic(messages[start:])

    process.__name__ = f"keep_last_{n}"
    return process


def compact_text(separator: str = "") -> Callable[[Sequence[Message]], list[Message]]:
    """A processor merging adjacent text parts of responses and adjacent text prompts of requests.

    Response text parts are joined with `separator`; plain-text user prompts with a blank line.
    Parts carrying provider data (IDs, details, citations) are left alone.
    """

    def plain_text(part: Any) -> bool:
        return (
            isinstance(part, TextPart)
            and part.id is None
            and part.provider_details is None
            and part.citations is None
        )

    def join_texts(previous: ModelResponsePart, part: ModelResponsePart) -> ModelResponsePart | None:
        if plain_text(previous) and plain_text(part):
            return TextPart(cast("TextPart", previous).content + separator + cast("TextPart", part).content)
        return None

    def join_prompts(previous: ModelRequestPart, part: ModelRequestPart) -> ModelRequestPart | None:
        if (
            isinstance(part, UserPromptPart)
            and isinstance(part.content, str)
            and isinstance(previous, UserPromptPart)
            and isinstance(previous.content, str)
        ):
            return UserPromptPart(
                content=previous.content + "\n\n" + part.content, timestamp=previous.timestamp
            )
        return None

    def process(messages: Sequence[Message]) -> list[Message]:
        result: list[Message] = []
        for message in messages:
            merged: Sequence[ModelRequestPart | ModelResponsePart] = (
                _joined(message.parts, join_texts)
                if isinstance(message, ModelResponse)
                else _joined(message.parts, join_prompts)
            )
            result.append(
                message
                if len(merged) == len(message.parts)
                else msgspec.structs.replace(message, parts=merged)
            )
        return result

    return process


def _joined(parts: Sequence[_PartT], join: Callable[[_PartT, _PartT], _PartT | None]) -> list[_PartT]:
    """`parts` with every part that `join` combines with the one before it folded into that one."""
    joined: list[_PartT] = []
    for part in parts:
        combined = join(joined[-1], part) if joined else None
        if combined is None:
            joined.append(part)
        else:
            joined[-1] = combined
    return joined


def summarize_prefix(
    summarize: Summarizer,
    *,
    keep_last: int,
    trigger: int | None = None,
    header: str = "Summary of the earlier conversation:\n",
) -> Callable[[RunContext[Any], Sequence[Message]], Awaitable[list[Message]]]:
    """A processor replacing an older prefix of the view with a summary written by `summarize`.

    When the view holds more than `trigger` messages (default `2 * keep_last`), everything before
    about the last `keep_last` messages (cut at a user turn, never inside a tool exchange) is
    passed to `summarize(messages)` or `summarize(ctx, messages)` (sync or async), and replaced
    by one system prompt `header + summary` placed at the start of the kept request. The summary
    of a prefix is computed once and reused while the prefix stays the same.
    """
    if keep_last < 1:
        raise UserError(f"summarize_prefix(keep_last=...) needs keep_last >= 1, got {keep_last}")
    threshold = trigger if trigger is not None else 2 * keep_last
    try:
        params = [
            p
            for p in inspect.signature(summarize).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        takes_ctx = len(params) >= 2
    except (TypeError, ValueError):
        takes_ctx = False
    cache: dict[tuple[int, int], str] = {}

    async def process(ctx: RunContext[Any], messages: Sequence[Message]) -> list[Message]:
        if len(messages) <= threshold:
            return list(messages)
        cut = _clean_start(messages, len(messages) - keep_last)
        if cut <= 0:
            return list(messages)
        prefix = list(messages[:cut])
        key = (cut, id(prefix[-1]))
        summary = cache.get(key)
        if summary is None:
            value = await settled(summarize(ctx, prefix) if takes_ctx else summarize(prefix))
            summary = str(value)
            cache.clear()  # only the latest prefix is worth keeping
            cache[key] = summary
        first = messages[cut]
        assert isinstance(first, ModelRequest)
        opening = msgspec.structs.replace(
            first, parts=[SystemPromptPart(content=header + summary), *first.parts]
        )
        return drop_orphaned_tool_traffic([opening, *messages[cut + 1 :]])

    return process
