"""The small public types of a graph: callbacks' context, results, options, events, metadata."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypeAlias

import msgspec
from typing_extensions import TypeVar

if TYPE_CHECKING:
    from ferrule.agent import DeferredCall
    from ferrule.agent import Paused

__all__ = [
    "DecisionResult",
    "EdgeMetadata",
    "End",
    "EventSink",
    "GraphContext",
    "GraphEvent",
    "GraphEventKind",
    "Interrupt",
    "Interrupted",
    "Join",
    "NextNode",
    "NodeMetadata",
    "ParallelBranch",
    "RunOptions",
    "SourceLocation",
]

StateT = TypeVar("StateT")
DepsT = TypeVar("DepsT")
ValueT = TypeVar("ValueT")
OutputT = TypeVar("OutputT")
ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


class SourceLocation(msgspec.Struct, frozen=True):
    """Where a node or edge is defined (shown as a note in pictures)."""

    file: str
    """The file, as written (usually relative to the project)."""
    line: int
    """The 1-based line number."""

    @classmethod
    def here(cls, depth: int = 1) -> SourceLocation:
        """The caller's location (`depth` frames up)."""
        frame = inspect.stack(context=0)[depth]
        return cls(frame.filename, frame.lineno)


class NodeMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """Presentation data of a node; never part of routing or of the definition fingerprint."""

    label: str | None = None
    """The text shown instead of the node's name."""
    description: str | None = None
    """A longer text, rendered as a note."""
    group: str | None = None
    """Nodes of one group are drawn inside one box."""
    source: SourceLocation | None = None
    """Where the node is defined."""


class EdgeMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """Presentation data of a route."""

    label: str | None = None
    """The edge's label (a decision branch's label defaults to its branch name)."""
    description: str | None = None
    """A longer text, rendered as a note on the source node."""
    source: SourceLocation | None = None
    """Where the route is registered."""


class DecisionResult(msgspec.Struct, Generic[ValueT], frozen=True):
    """What a decision returns: the branch to take and the value it carries."""

    branch: str
    """A branch name registered with `branch(...)` or `branch_finish(...)`."""
    value: ValueT
    """The value handed to the branch's target."""


class ParallelBranch(Generic[StateT, DepsT, ItemT, ResultT]):
    """One branch of a fan-out: `fn(ctx, item) -> result`, sync or async."""

    __slots__ = ("fn", "is_async", "name")

    def __init__(
        self, name: str, fn: Callable[[GraphContext[StateT, DepsT], ItemT], ResultT | Awaitable[ResultT]]
    ) -> None:
        self.name = name
        """The branch's name (unique within its fan-out)."""
        self.fn = fn
        """The callback."""
        self.is_async = is_async_callable(fn)

    def __repr__(self) -> str:
        return f"ParallelBranch({self.name!r})"


class Join(Generic[ValueT, ResultT]):
    """How a fan-out's branch results become one value: `reduce(acc, result)` from `initial()`.

    `initial()` runs exactly once per fan-out (also for a map that emits nothing); `reduce` sees
    the successful results in source order (item-major, then branch order), whatever order the
    tasks finished in. Both are synchronous.
    """

    __slots__ = ("initial", "reduce")

    def __init__(self, initial: Callable[[], ValueT], reduce: Callable[[ValueT, ResultT], ValueT]) -> None:
        self.initial = initial
        """Creates the accumulator."""
        self.reduce = reduce
        """Folds one branch result into the accumulator, returning the new accumulator."""


class GraphContext(Generic[StateT, DepsT]):
    """What every callback receives: the run's state, dependencies, ID, options and position.

    One context serves the whole run; `node` and `step` are updated before each node runs (fan-out
    branches of one node share it).
    """

    __slots__ = ("deps", "node", "options", "run_id", "state", "step")

    def __init__(self, state: StateT, deps: DepsT, run_id: str, options: RunOptions) -> None:
        self.state = state
        """The run's mutable state."""
        self.deps = deps
        """The run's dependencies."""
        self.run_id = run_id
        """The graph run's stable ID (kept across snapshot and resume)."""
        self.options = options
        """The run's options."""
        self.node = ""
        """The name of the node being executed."""
        self.step = 0
        """Nodes completed before this one."""

    def __repr__(self) -> str:
        return f"GraphContext(run_id={self.run_id!r}, node={self.node!r}, step={self.step})"


pending_resumes: dict[GraphContext[Any, Any], tuple[Paused, Any]] = {}
"""(Paused, decisions) by run context while `GraphRun.resume` continues an agent node, which takes
its entry. Kept out of `GraphContext`, whose attributes are all the callbacks' to read."""


GraphEventKind: TypeAlias = Literal[
    "run_start",
    "run_resume",
    "step_start",
    "step_end",
    "step_error",
    "decision",
    "fan_out_start",
    "fan_out_end",
    "interrupt",
    "run_end",
    "run_error",
]
"""The kinds of graph events, in the order a run produces them."""


class GraphEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a run; fields that do not apply to its `kind` are `None`."""

    kind: GraphEventKind
    """What happened."""
    run_id: str
    """The graph run's ID."""
    step: int
    """Nodes completed so far."""
    node: str | None = None
    """The node involved."""
    branch: str | None = None
    """The branch a decision took (`decision`)."""
    tasks: int | None = None
    """Tasks of a fan-out (`fan_out_start`, `fan_out_end`)."""
    error: BaseException | None = None
    """The failure (`step_error`, `run_error`)."""


EventSink: TypeAlias = Callable[[GraphEvent], None]
"""A synchronous observer of a run's events; an exception it raises is logged and ignored."""


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-run options of `Graph.run`, `Graph.iter` and `Graph.resume_snapshot`."""

    max_steps: int | None = None
    """A lower step ceiling than `GraphLimits.max_steps` (never a higher one)."""
    max_concurrency: int = 1
    """Concurrent fan-out tasks (at most `GraphLimits.max_concurrency`)."""
    event_sinks: tuple[EventSink, ...] = ()
    """Observers of the run's `GraphEvent`s, in order."""
    run_id: str | None = None
    """The run's ID (default: a fresh random one)."""
    trace_parent: Any = None
    """An OpenTelemetry `Context` that agent nodes' runs are started under."""


class NextNode(msgspec.Struct, frozen=True):
    """`next()` ran a node; this one runs next."""

    name: str
    """The next node's name."""
    index: int
    """Its position in definition order."""


class End(Generic[OutputT]):
    """`next()` reached the end: the run's typed output."""

    __slots__ = ("output",)

    def __init__(self, output: OutputT) -> None:
        self.output = output
        """What the end callback returned."""

    def __repr__(self) -> str:
        return f"End({self.output!r})"


class Interrupt:
    """An agent node's run paused for decisions on deferred tool calls."""

    __slots__ = ("node", "paused")

    def __init__(self, node: str, paused: Paused) -> None:
        self.node = node
        """The agent node."""
        self.paused = paused
        """The agent's pause (its `state` is what a snapshot stores)."""

    @property
    def pending(self) -> list[DeferredCall]:
        """The calls waiting for a decision."""
        return self.paused.pending

    def __repr__(self) -> str:
        return f"Interrupt(node={self.node!r}, pending={[p.tool_name for p in self.pending]})"


class Interrupted:
    """`next()` paused: an agent node waits for decisions (`run.resume(decisions)`)."""

    __slots__ = ("interrupt",)

    def __init__(self, interrupt: Interrupt) -> None:
        self.interrupt = interrupt
        """What waits for a decision."""

    def __repr__(self) -> str:
        return f"Interrupted({self.interrupt!r})"


def is_async_callable(fn: Any) -> bool:
    """Whether calling `fn` returns an awaitable (coroutine functions and async `__call__`)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ is what is asked about
    return call is not None and inspect.iscoroutinefunction(call)
