"""Turn a provider's stream of fragments into neutral stream events and the complete response.

Every provider stream has the same problem: fragments of text, reasoning and tool calls arrive
interleaved, keyed by the provider's own index or ID, and the completed response must contain each
part whole. [`ResponseBuilder`][ferrule.core.streaming.ResponseBuilder] owns that bookkeeping so a
provider's codec only maps its wire events to builder calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any

from .messages import ModelResponsePart
from .messages import TextPart
from .messages import ThinkingPart
from .messages import ToolCallPart
from .messages import new_tool_call_id
from .model import ModelStreamEvent
from .model import PartDeltaEvent
from .model import PartEndEvent
from .model import PartStartEvent
from .model import TextPartDelta
from .model import ThinkingPartDelta
from .model import ToolCallPartDelta

__all__ = ["ResponseBuilder"]


class _Open:
    """A part still receiving fragments; text is joined once, at the end."""

    __slots__ = ("chunks", "ended", "part")

    def __init__(self, part: ModelResponsePart) -> None:
        self.part = part
        self.chunks: list[str] = []
        self.ended = False


class ResponseBuilder:
    """Accumulates streamed fragments into parts and yields the matching stream events.

    Each method returns the events to emit (possibly none). Parts are addressed by a `key` chosen
    by the provider (its content-block index, output index or item ID); text and thinking without a
    key continue the last part when it is of the same kind.
    """

    def __init__(self) -> None:
        self._open: list[_Open] = []
        self._by_key: dict[Hashable, int] = {}
        # The last part while it is an open text part, and its index: where most deltas go.
        self._tail: _Open | None = None
        self._tail_index = 0

    def _start(self, part: ModelResponsePart, key: Hashable | None) -> tuple[int, list[ModelStreamEvent]]:
        events: list[ModelStreamEvent] = []
        index = len(self._open)
        entry = _Open(part)
        self._open.append(entry)
        self._tail = entry if isinstance(part, TextPart) else None
        self._tail_index = index
        if key is not None:
            self._by_key[key] = index
        events.append(PartStartEvent(index, _snapshot(part, None)))
        return index, events

    def _find(self, key: Hashable | None, kind: type[Any]) -> int | None:
        if key is not None:
            index = self._by_key.get(key)
            if index is not None and isinstance(self._open[index].part, kind) and not self._open[index].ended:
                return index
            return None
        if self._open and isinstance(self._open[-1].part, kind) and not self._open[-1].ended:
            return len(self._open) - 1
        return None

    def text(
        self,
        delta: str,
        *,
        key: Hashable | None = None,
        id: str | None = None,
        provider_name: str | None = None,
        provider_details: dict[str, Any] | None = None,
        citations: list[dict[str, Any]] | None = None,
    ) -> list[ModelStreamEvent]:
        """Append text; starts a new text part when needed. Empty deltas produce no event.

        `provider_details` are merged into the part's; `citations` are appended to its list.
        """
        tail = self._tail
        if (
            tail is not None
            and delta
            and provider_details is None
            and citations is None
            and (key is None or self._by_key.get(key) == self._tail_index)
        ):
            # The next delta of the open text part (without a key, or keyed to it): one event, no
            # search (most deltas of a stream).
            tail.chunks.append(delta)
            return [PartDeltaEvent(self._tail_index, TextPartDelta(delta))]
        index = self._find(key, TextPart)
        events: list[ModelStreamEvent] = []
        if index is None:
            if not delta and provider_details is None and citations is None:
                return []
            index, events = self._start(TextPart(content="", id=id, provider_name=provider_name), key)
        entry = self._open[index]
        part = entry.part
        assert isinstance(part, TextPart)
        if provider_details is not None:
            part.provider_details = {**(part.provider_details or {}), **provider_details}
        if citations:
            part.citations = [*(part.citations or ()), *citations]
        if delta:
            entry.chunks.append(delta)
            events.append(PartDeltaEvent(index, TextPartDelta(delta)))
        return events

    def texts(self, deltas: list[str], out: list[ModelStreamEvent], *, key: Hashable | None = None) -> None:
        """Append several text deltas in order, their events added to `out`.

        The same parts and events as `out += self.text(delta, key=key)` for each delta (empty
        ones give none), without a call per delta while they continue the open text part (a
        read's worth of a stream's deltas, from a decoder's batch path).
        """
        tail = self._tail
        if tail is None or (key is not None and self._by_key.get(key) != self._tail_index):
            # Not the open text part's deltas: each goes through `text`, until one started (or
            # made the tail) the part the rest continue.
            for position, delta in enumerate(deltas):
                if not delta:
                    continue
                out += self.text(delta, key=key)
                tail = self._tail
                if tail is not None and (key is None or self._by_key.get(key) == self._tail_index):
                    deltas = deltas[position + 1 :]
                    break
            else:
                return
        index = self._tail_index
        if all(deltas):  # nearly always: decoders pass only non-empty deltas
            tail.chunks += deltas
            out += map(PartDeltaEvent, itertools.repeat(index), map(TextPartDelta, deltas))  # no Python frame
            return
        for delta in deltas:
            if delta:
                tail.chunks.append(delta)
                out.append(PartDeltaEvent(index, TextPartDelta(delta)))

    def thinking(
        self,
        delta: str | None = None,
        *,
        key: Hashable | None = None,
        signature: str | None = None,
        id: str | None = None,
        provider_name: str | None = None,
        provider_details: dict[str, Any] | None = None,
    ) -> list[ModelStreamEvent]:
        """Append reasoning text and/or set its signature (a signature replaces the previous one)."""
        events: list[ModelStreamEvent] = []
        index = self._find(key, ThinkingPart)
        if index is None:
            index, events = self._start(
                ThinkingPart(
                    content="", id=id, provider_name=provider_name, provider_details=provider_details
                ),
                key,
            )
        entry = self._open[index]
        part = entry.part
        assert isinstance(part, ThinkingPart)
        if signature is not None:
            part.signature = signature
        if provider_details is not None:
            part.provider_details = {**(part.provider_details or {}), **provider_details}
        if id is not None and part.id is None:
            part.id = id
        if delta:
            entry.chunks.append(delta)
        if delta or signature is not None:
            events.append(
                PartDeltaEvent(
                    index, ThinkingPartDelta(content_delta=delta or None, signature_delta=signature)
                )
            )
        return events

    def tool_call(
        self,
        *,
        key: Hashable,
        tool_name: str | None = None,
        args: str | dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        id: str | None = None,
        provider_name: str | None = None,
        provider_details: dict[str, Any] | None = None,
    ) -> list[ModelStreamEvent]:
        """Add a fragment of the tool call at `key`: its name, an argument fragment, or its ID."""
        events: list[ModelStreamEvent] = []
        index = self._find(key, ToolCallPart)
        if index is None:
            part = ToolCallPart(
                tool_name=tool_name or "",
                args=None,
                tool_call_id=tool_call_id or "",
                id=id,
                provider_name=provider_name,
                provider_details=provider_details,
            )
            index, events = self._start(part, key)
            entry = self._open[index]
            if isinstance(args, dict):
                part.args = args
            elif args:
                entry.chunks.append(args)
            events.append(
                PartDeltaEvent(
                    index,
                    ToolCallPartDelta(tool_name_delta=tool_name, args_delta=args, tool_call_id=tool_call_id),
                )
            )
            return events
        entry = self._open[index]
        part = entry.part
        assert isinstance(part, ToolCallPart)
        if tool_name:
            part.tool_name += tool_name
        if tool_call_id and not part.tool_call_id:
            part.tool_call_id = tool_call_id
        if id is not None and part.id is None:
            part.id = id
        if provider_details is not None:
            part.provider_details = {**(part.provider_details or {}), **provider_details}
        if isinstance(args, dict):
            part.args = args
            entry.chunks.clear()
        elif args:
            entry.chunks.append(args)
        if tool_name or args or tool_call_id:
            events.append(
                PartDeltaEvent(
                    index,
                    ToolCallPartDelta(tool_name_delta=tool_name, args_delta=args, tool_call_id=tool_call_id),
                )
            )
        return events

    def add(self, part: ModelResponsePart, *, key: Hashable | None = None) -> list[ModelStreamEvent]:
        """Add a part that arrived whole (a native tool result, a file); it starts and ends at once."""
        index, events = self._start(part, key)
        self._open[index].ended = True
        self._tail = None
        events.append(PartEndEvent(index, part))
        return events

    def end(self, key: Hashable) -> list[ModelStreamEvent]:
        """Mark the part at `key` complete (when the provider says so)."""
        index = self._by_key.get(key)
        if index is None or self._open[index].ended:
            return []
        return [self._end(index)]

    def _end(self, index: int) -> PartEndEvent:
        entry = self._open[index]
        entry.ended = True
        if entry is self._tail:
            self._tail = None
        entry.part = _snapshot(entry.part, entry.chunks)
        entry.chunks = []
        return PartEndEvent(index, entry.part)

    def finish(self) -> list[ModelStreamEvent]:
        """End every open part; call once, before building the completed response."""
        return [self._end(i) for i, entry in enumerate(self._open) if not entry.ended]

    @property
    def parts(self) -> list[ModelResponsePart]:
        """The complete parts, after `finish`; tool calls without an ID get a generated one."""
        parts: list[ModelResponsePart] = []
        for entry in self._open:
            part = entry.part if entry.ended else _snapshot(entry.part, entry.chunks)
            if isinstance(part, ToolCallPart) and not part.tool_call_id:
                part.tool_call_id = new_tool_call_id()
            parts.append(part)
        return parts


def _snapshot(part: ModelResponsePart, chunks: list[str] | None) -> ModelResponsePart:
    """A copy of `part` with its accumulated chunks joined in."""
    if isinstance(part, TextPart):
        return TextPart(
            content=part.content + "".join(chunks or ()),
            id=part.id,
            provider_name=part.provider_name,
            provider_details=part.provider_details,
            citations=part.citations,
        )
    if isinstance(part, ThinkingPart):
        return ThinkingPart(
            content=part.content + "".join(chunks or ()),
            id=part.id,
            signature=part.signature,
            provider_name=part.provider_name,
            provider_details=part.provider_details,
        )
    if isinstance(part, ToolCallPart):
        args = part.args
        if chunks:
            args = "".join(chunks)
        return ToolCallPart(
            tool_name=part.tool_name,
            args=args,
            tool_call_id=part.tool_call_id,
            tool_kind=part.tool_kind,
            id=part.id,
            provider_name=part.provider_name,
            provider_details=part.provider_details,
        )
    return part
