"""Partial output while a response streams: `PartialOutputEvent`s from the deltas of output-bearing parts.

A snapshot is shown only once later bytes cannot change what it already says (`JsonPrefix`), it is
checked against the output schema's partial form, and output validators see it with
`ctx.partial_output` set; a `ModelRetry` from one hides the snapshot instead of failing the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import cast

from ferrule.core.messages import TextPart
from ferrule.core.messages import ToolCallPart
from ferrule.core.model import PartDeltaEvent
from ferrule.core.model import PartStartEvent
from ferrule.core.model import TextPartDelta
from ferrule.core.model import ToolCallPartDelta

from ._context import partial_output_context
from ._errors import ModelRetry
from ._events import PartialOutputEvent
from ._output_plan import OutputChoice
from ._partial import JsonPrefix
from ._schema import partial_ok
from ._state import LoopState

__all__ = ["PlainText", "PartialTracker", "SPAN_END"]


class PlainText:
    """The partial outputs of plain text output (`str` that nothing checks), from one response's events.

    Fed every model event of the response in order, by the run's task (`see`, `delta`) or, when
    the run streams into the consumer's `Handoff`, by the consumer: the run hands this object over
    before the response's events and `SPAN_END` after them, and the consumer makes each partial
    output right after the event it follows, only when it iterates events. A consumer that wants
    only the text (`stream_text`) keeps the deltas with `skip`, so later snapshots still hold them,
    without a snapshot per delta.
    """

    __slots__ = ("chunks", "saw_tool_call", "skip", "text")

    def __init__(self) -> None:
        self.text: str | None = None
        """The text of the last snapshot."""
        self.chunks: list[str] = []
        """Text skipped since the last snapshot, which the next one includes."""
        self.saw_tool_call = False
        """Whether a tool call started: text after one is no output."""
        self.skip: Callable[[str], None] = self.chunks.append
        """A text delta whose partial output is not wanted: its text goes into the next snapshot
        (`chunks.append`, no Python call per delta; `delta` clears the list, never replaces it)."""

    def delta(self, delta: str) -> PartialOutputEvent | None:
        """The partial output after a text delta (none once a tool call started, or for no text)."""
        if self.saw_tool_call or not delta:
            return None
        text = self.text
        chunks = self.chunks
        if chunks:
            chunks.append(delta)
            delta = "".join(chunks)
            chunks.clear()
        # One copy per delta (which the snapshot needs anyway), not a join over every delta so far.
        snapshot = self.text = delta if text is None else text + delta
        return PartialOutputEvent(snapshot, snapshot, True)

    def see(self, event: Any) -> PartialOutputEvent | None:
        """The partial output after any other event of the response."""
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                return self.delta(part.content)
            if isinstance(part, ToolCallPart):
                self.saw_tool_call = True
        elif isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                return self.delta(delta.content_delta)
            if isinstance(delta, ToolCallPartDelta):
                self.saw_tool_call = True
        return None


class _SpanEnd:
    """The marker after the events of a response whose `PlainText` the consumer feeds."""

    __slots__ = ()


SPAN_END = _SpanEnd()
"""Handed over after the last event of a response that a `PlainText` went before."""


class PartialTracker:
    """Turns streamed deltas of output-bearing parts into `PartialOutputEvent`s."""

    __slots__ = ("named", "names", "plain", "prefixes", "run", "saw_tool_call", "text")

    def __init__(self, run: LoopState) -> None:
        self.run = run
        self.text: JsonPrefix | str | None = None
        self.prefixes: dict[int, JsonPrefix] = {}
        self.names: dict[int, str] = {}
        self.named: set[int] = set()  # parts whose start event already carried the whole name
        self.saw_tool_call = False
        plan = run.plan
        self.plain = (
            PlainText()
            if plan.allow_text
            and plan.mode not in ("native", "prompted")
            and plan.text_function is None
            and not run.output_validators
            else None
        )
        """When text is `str` output that nothing checks: what makes its partial outputs (and
        `update` none for text)."""

    def _append(self, delta: str) -> str:
        """The text so far with `delta` appended: one copy per delta (which the snapshot needs
        anyway), not a join over every delta so far."""
        text = self.text
        snapshot = delta if not isinstance(text, str) else text + delta
        self.text = snapshot
        return snapshot

    async def update(self, event: Any) -> PartialOutputEvent | None:
        plan = self.run.plan
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                return await self._text(part.content) if part.content else None
            if isinstance(part, ToolCallPart):
                self.saw_tool_call = True
                self.names[event.index] = part.tool_name
                if part.tool_name:
                    self.named.add(event.index)
                if part.tool_name in plan.by_tool_name and part.args:
                    return await self._args(event.index, part.args)
            return None
        if isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                return await self._text(delta.content_delta)
            if isinstance(delta, ToolCallPartDelta):
                self.saw_tool_call = True
                if delta.tool_name_delta and event.index not in self.named:
                    self.names[event.index] = self.names.get(event.index, "") + delta.tool_name_delta
                if delta.args_delta and self.names.get(event.index) in plan.by_tool_name:
                    return await self._args(event.index, delta.args_delta)
        return None

    async def _text(self, delta: str) -> PartialOutputEvent | None:
        plan = self.run.plan
        if self.saw_tool_call or not delta or self.plain is not None:
            return None
        if plan.mode in ("native", "prompted"):
            if not isinstance(self.text, JsonPrefix):
                self.text = JsonPrefix(skip_prose=True)
            self.text.feed(delta)
            return await self._snapshot(self.text, plan.choices[0] if len(plan.choices) == 1 else None, None)
        if not plan.allow_text:
            return None
        snapshot = self._append(delta)
        if plan.text_function is not None:
            return PartialOutputEvent(snapshot)
        ok, value = await self._validated(snapshot, None)
        if not ok:
            return None
        return PartialOutputEvent(snapshot, value, True)

    async def _args(self, index: int, delta: str | dict[str, Any]) -> PartialOutputEvent | None:
        name = self.names[index]
        choice = self.run.plan.by_tool_name[name]
        if isinstance(delta, dict):
            return await self._checked(delta, choice, name)
        prefix = self.prefixes.get(index)
        if prefix is None:
            prefix = self.prefixes[index] = JsonPrefix()
        prefix.feed(delta)
        return await self._snapshot(prefix, choice, name)

    async def _snapshot(
        self, prefix: JsonPrefix, choice: OutputChoice | None, name: str | None
    ) -> PartialOutputEvent | None:
        ok, snapshot = prefix.snapshot()
        if not ok:
            return None
        if choice is None:
            return PartialOutputEvent(snapshot, tool_name=name)
        return await self._checked(snapshot, choice, name)

    async def _checked(
        self, snapshot: Any, choice: OutputChoice, name: str | None
    ) -> PartialOutputEvent | None:
        if not partial_ok(snapshot, choice.schema, choice.defs, True):
            return None
        visible: Any = snapshot
        if choice.wrapped and isinstance(snapshot, dict):
            visible = cast("dict[str, Any]", snapshot).get("value")
        ok, value = choice.partial(snapshot)
        if ok:
            ok, value = await self._validated(value, choice)
            if not ok:
                return None
            return PartialOutputEvent(visible, value, True, name)
        return PartialOutputEvent(visible, tool_name=name)

    async def _validated(self, value: Any, choice: OutputChoice | None) -> tuple[bool, Any]:
        validators = self.run.output_validators
        if not validators:
            return True, value
        ctx = partial_output_context(self.run.ctx)
        for fn, takes_ctx, is_async in validators:
            try:
                result = fn(ctx, value) if takes_ctx else fn(value)
                if is_async:
                    result = await result
            except ModelRetry:
                return False, None
            value = result
        return True, value
