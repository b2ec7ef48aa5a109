"""Per-case copies of the OpenTelemetry spans an instrumented task exports.

A span processor is added once to each SDK `TracerProvider` that a dataset run captures from. It
does nothing unless the span ends inside a case's task, which it recognizes by a context variable
that the runner sets around the task; anyio copies context variables into child tasks and
ferrule's worker threads, so spans of tools and streams land in the right case even when cases run
concurrently. The configured exporters are untouched: they receive the original spans and every
metric.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Generator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from typing import Literal
from typing import TypeAlias

import msgspec

__all__ = ["AttributeValue", "SpanEvent", "SpanKind", "SpanRecord", "SpanStatus"]

AttributeValue: TypeAlias = (
    str | bool | int | float | tuple[str, ...] | tuple[bool, ...] | tuple[int, ...] | tuple[float, ...]
)
"""An OpenTelemetry attribute value: a primitive or a homogeneous sequence of primitives."""

SpanKind: TypeAlias = Literal["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"]
"""The kind of a span, as OpenTelemetry names it."""

SpanStatus: TypeAlias = Literal["UNSET", "OK", "ERROR"]
"""The status code of a span."""


def _no_attributes() -> dict[str, AttributeValue]:
    return {}


class SpanEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event recorded on a span (for example an exception)."""

    name: str
    """The event's name (`exception` for recorded errors)."""
    time_unix_nano: int
    """When it happened, in nanoseconds since the epoch."""
    attributes: Mapping[str, AttributeValue] = msgspec.field(default_factory=_no_attributes)
    """Its attributes, with their types kept."""


class SpanRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A deep copy of one exported span, with typed attributes."""

    name: str
    """The span's name, e.g. `chat gpt-5-mini` or `execute_tool add`."""
    trace_id: str
    """The trace ID: 32 lowercase hex digits."""
    span_id: str
    """The span ID: 16 lowercase hex digits."""
    parent_span_id: str | None = None
    """The parent's span ID, or `None` for a root span."""
    kind: SpanKind = "INTERNAL"
    """The span kind."""
    start_time_unix_nano: int = 0
    """Start, in nanoseconds since the epoch."""
    end_time_unix_nano: int | None = None
    """End, in nanoseconds since the epoch."""
    status: SpanStatus = "UNSET"
    """The status code."""
    status_description: str | None = None
    """The status description (set on errors)."""
    scope: str | None = None
    """The instrumentation scope's name (`ferrule.agent` for agent spans)."""
    attributes: Mapping[str, AttributeValue] = msgspec.field(default_factory=_no_attributes)
    """The attributes, with their types kept (`int` stays `int`, sequences become tuples)."""
    events: tuple[SpanEvent, ...] = ()
    """The span's events in order."""

    @property
    def duration_seconds(self) -> float | None:
        """End minus start in seconds, or `None` for a span that has not ended."""
        if self.end_time_unix_nano is None:
            return None
        return (self.end_time_unix_nano - self.start_time_unix_nano) / 1e9


def _attributes(raw: Any) -> dict[str, AttributeValue]:
    if not raw:
        return {}
    copied: dict[str, AttributeValue] = {}
    for key, value in raw.items():
        if isinstance(value, (str, bool, int, float)):
            copied[str(key)] = value
        elif isinstance(value, Sequence):
            copied[str(key)] = tuple(value)  # pyright: ignore[reportUnknownArgumentType]
        else:  # the SDK only stores primitives and sequences; keep anything else readable
            copied[str(key)] = str(value)
    return copied


def copy_span(span: Any) -> SpanRecord:
    """Copy an SDK `ReadableSpan` into a `SpanRecord` (no reference to the original is kept)."""
    context = span.context
    parent = span.parent
    status = span.status
    scope = getattr(span, "instrumentation_scope", None)
    return SpanRecord(
        name=str(span.name),
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_span_id=format(parent.span_id, "016x") if parent is not None else None,
        kind=span.kind.name,
        start_time_unix_nano=int(span.start_time or 0),
        end_time_unix_nano=None if span.end_time is None else int(span.end_time),
        status=status.status_code.name,
        status_description=status.description,
        scope=None if scope is None else scope.name,
        attributes=_attributes(span.attributes),
        events=tuple(
            SpanEvent(name=str(e.name), time_unix_nano=int(e.timestamp), attributes=_attributes(e.attributes))
            for e in span.events
        ),
    )


_collector: ContextVar[list[SpanRecord] | None] = ContextVar("ferrule_evals_spans", default=None)


class _CaptureProcessor:
    """A span processor (duck-typed to the SDK's interface) that copies spans into the current case."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def _on_ending(self, span: Any) -> None:
        return None

    def on_end(self, span: Any) -> None:
        spans = _collector.get()
        if spans is not None:
            spans.append(copy_span(span))

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


_attached: weakref.WeakSet[Any] = weakref.WeakSet()
_attach_lock = threading.Lock()


def capturable(provider: Any) -> bool:
    """Whether spans of `provider` can be captured (it is an SDK provider that takes span processors)."""
    return callable(getattr(provider, "add_span_processor", None))


def attach(provider: Any) -> None:
    """Add the capture processor to `provider`, once per provider."""
    with _attach_lock:
        if provider in _attached:
            return
        provider.add_span_processor(_CaptureProcessor())
        _attached.add(provider)


@contextmanager
def collecting(spans: list[SpanRecord]) -> Generator[None]:
    """Collect every span that ends in this context (and tasks started from it) into `spans`."""
    token = _collector.set(spans)
    try:
        yield
    finally:
        _collector.reset(token)
