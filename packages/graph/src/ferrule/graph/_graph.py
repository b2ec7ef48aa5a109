"""`Graph` (built, immutable, reusable) and `GraphRun` (one execution, advanced node by node)."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic

import anyio.lowlevel
from typing_extensions import TypeVar

from ._errors import GraphCancelledError
from ._errors import GraphInterrupted
from ._errors import GraphOptionsError
from ._errors import GraphRunError
from ._errors import GraphRunStateError
from ._errors import GraphStepLimitExceeded
from ._errors import SnapshotsDisabledError
from ._errors import SnapshotStateError
from ._errors import UnmatchedRouteError
from ._fanout import run_fan_out
from ._limits import GraphLimits
from ._node import DECISION
from ._node import END
from ._node import FAN_OUT
from ._node import STEP
from ._node import Node
from ._types import End
from ._types import EventSink
from ._types import GraphContext
from ._types import GraphEvent
from ._types import GraphEventKind
from ._types import Interrupt
from ._types import Interrupted
from ._types import NextNode
from ._types import NodeMetadata
from ._types import RunOptions
from ._types import pending_resumes

if TYPE_CHECKING:
    from ferrule.agent import Decision

    from ._snapshot import SnapshotCodec
    from ._visual import MermaidDirection
    from ._visual import Visualization

__all__ = ["Graph", "GraphRun", "NodePaused", "NodeResumeRejected"]

StateT = TypeVar("StateT", default=None)
DepsT = TypeVar("DepsT", default=None)
InputT = TypeVar("InputT", default=None)
ValueT = TypeVar("ValueT", default=Any)
OutputT = TypeVar("OutputT", default=Any)

_log = logging.getLogger("ferrule.graph")

_RUNNING = 0
_BUSY = 1
_INTERRUPTED = 2
_DONE = 3
_FAILED = 4

_UNMATCHED = -2
_DEFAULT_OPTIONS = RunOptions()
_CHECKPOINT_EVERY = 64


class NodePaused(Exception):
    """Raised by an agent node whose agent run paused for decisions (the runner turns it into an
    `Interrupted` result; it never reaches the application)."""

    def __init__(self, paused: Any) -> None:
        self.paused = paused
        super().__init__("the agent node paused for decisions")


class NodeResumeRejected(Exception):
    """Raised by an agent node when the agent refused the decisions before running anything: the
    run stays interrupted and the original error reaches the caller."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        super().__init__(str(error))


def _new_run_id() -> str:
    return os.urandom(16).hex()


def _emit(sinks: tuple[EventSink, ...], kind: GraphEventKind, run_id: str, step: int, **fields: Any) -> None:
    event = GraphEvent(kind=kind, run_id=run_id, step=step, **fields)
    for sink in sinks:
        try:
            sink(event)
        except Exception as exc:  # sinks are infallible by contract: one that raises cannot change the run
            _log.warning("graph event sink %r raised on %s (ignored): %r", sink, kind, exc)


class Graph(Generic[StateT, DepsT, InputT, ValueT, OutputT]):
    """A built graph: immutable, reusable by any number of concurrent runs.

    `await graph.run(input, state=..., deps=...)` runs to the end; `await graph.iter(...)` returns a
    `GraphRun` to advance with `await run.next()`.
    """

    __slots__ = (
        "_end",
        "_end_async",
        "_fingerprint",
        "_start",
        "_start_async",
        "builder",
        "definition_id",
        "end_metadata",
        "entry",
        "limits",
        "nodes",
        "start_metadata",
        "types",
    )

    def __init__(
        self,
        *,
        nodes: tuple[Node, ...],
        entry: int,
        start: tuple[Any, NodeMetadata | None],
        end: tuple[Any, NodeMetadata | None],
        limits: GraphLimits,
        definition_id: str | None,
        types: tuple[Any, ...],
        builder: object,
    ) -> None:
        from ._types import is_async_callable

        self.nodes = nodes
        """The compiled nodes in definition order."""
        self.entry = entry
        """The entry node's index."""
        self.limits = limits
        """The limits it was built with."""
        self.definition_id = definition_id
        """The stable identity snapshots are bound to (`None`: snapshots are off)."""
        self.types = types
        """The type parameters given to the builder (state, deps, input, value, output)."""
        self.start_metadata = start[1]
        """The start callback's metadata."""
        self.end_metadata = end[1]
        """The end callback's metadata."""
        self.builder = builder
        """The builder it came from (for its type parameters)."""
        self._start = start[0]
        self._start_async = is_async_callable(start[0])
        self._end = end[0]
        self._end_async = is_async_callable(end[0])
        self._fingerprint: str | None = None

    def __repr__(self) -> str:
        return f"Graph(nodes={[n.name for n in self.nodes]}, entry={self.nodes[self.entry].name!r})"

    @property
    def fingerprint(self) -> str:
        """The SHA-256 (hex) of the definition: identity, nodes, routes, types, entry and limits."""
        if self._fingerprint is None:
            from ._snapshot import definition_fingerprint

            self._fingerprint = definition_fingerprint(self)
        return self._fingerprint

    def node_index(self, name: str) -> int:
        """The index of the node called `name` (`KeyError` if there is none)."""
        for node in self.nodes:
            if node.name == name:
                return node.index
        raise KeyError(name)

    # --- running ---------------------------------------------------------------------------------

    def _options(self, options: RunOptions | None, ceiling: int | None = None) -> tuple[RunOptions, int, int]:
        options = options or _DEFAULT_OPTIONS
        if not isinstance(options, RunOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise GraphOptionsError(f"options must be a RunOptions, got {options!r}")
        limits = self.limits
        ceiling = limits.max_steps if ceiling is None else ceiling
        max_steps = ceiling
        if options.max_steps is not None:
            if type(options.max_steps) is not int or options.max_steps < 1:
                raise GraphOptionsError(
                    f"RunOptions.max_steps must be a positive int, got {options.max_steps!r}"
                )
            if options.max_steps > ceiling:
                raise GraphOptionsError(
                    f"RunOptions.max_steps={options.max_steps} would widen the ceiling of {ceiling} steps; "
                    "it may only tighten it (raise GraphLimits.max_steps when building the graph)"
                )
            max_steps = options.max_steps
        concurrency = options.max_concurrency
        if type(concurrency) is not int or concurrency < 1:
            raise GraphOptionsError(f"RunOptions.max_concurrency must be a positive int, got {concurrency!r}")
        if concurrency > limits.max_concurrency:
            raise GraphOptionsError(
                f"RunOptions.max_concurrency={concurrency} is past GraphLimits.max_concurrency="
                f"{limits.max_concurrency}"
            )
        for sink in options.event_sinks:
            if not callable(sink) or inspect.iscoroutinefunction(sink):
                raise GraphOptionsError(
                    f"event sinks must be synchronous callables taking a GraphEvent, got {sink!r}"
                )
        if options.run_id is not None and not options.run_id:
            raise GraphOptionsError("RunOptions.run_id must be a non-empty string")
        return options, max_steps, concurrency

    async def iter(
        self,
        input: InputT,
        *,
        state: StateT = None,
        deps: DepsT = None,
        options: RunOptions | None = None,
    ) -> GraphRun[StateT, DepsT, InputT, ValueT, OutputT]:
        """Run the start callback and return the run, positioned at the entry node."""
        opts, max_steps, concurrency = self._options(options)
        ctx: GraphContext[StateT, DepsT] = GraphContext(state, deps, opts.run_id or _new_run_id(), opts)
        sinks = opts.event_sinks
        if sinks:
            _emit(sinks, "run_start", ctx.run_id, 0)
        try:
            value = self._start(ctx, input)
            if self._start_async:
                value = await value
        except BaseException as exc:
            if sinks:
                _emit(sinks, "run_error", ctx.run_id, 0, node=None, error=exc)
            raise
        return GraphRun(
            self, ctx, max_steps, concurrency, (self._end, self._end_async), self.nodes[self.entry], value
        )

    async def run(
        self,
        input: InputT,
        *,
        state: StateT = None,
        deps: DepsT = None,
        options: RunOptions | None = None,
    ) -> OutputT:
        """Run to the end and return the output.

        Raises the failing callback's exception unchanged, a `GraphRunError` for the graph's own
        failures, or `GraphInterrupted` (with `.run`) when an agent node pauses for decisions.
        """
        run = await self.iter(input, state=state, deps=deps, options=options)
        return await run.run_to_end()

    def resume_snapshot(
        self,
        source: bytes | str,
        codec: SnapshotCodec[StateT, ValueT],
        *,
        deps: DepsT = None,
        options: RunOptions | None = None,
    ) -> GraphRun[StateT, DepsT, InputT, ValueT, OutputT]:
        """A run positioned where `run.snapshot(codec)` left it: the state and value decoded, fresh
        `deps` and options, no start callback, no completed node run again.

        Every check of the envelope runs before the codec is called. When the snapshot was taken
        at an agent node's pause, the run is interrupted: continue it with `await run.resume(...)`.
        """
        from ._snapshot import read_snapshot

        if self.definition_id is None:
            raise SnapshotsDisabledError(
                "this graph has no definition_id, so snapshots are off; set builder.definition_id before build()"
            )
        loaded = read_snapshot(self, source, codec)
        opts, max_steps, concurrency = self._options(options, ceiling=loaded.max_steps)
        if max_steps < loaded.completed_steps:
            from ._errors import SnapshotError

            raise SnapshotError(
                f"RunOptions.max_steps={max_steps} is below the {loaded.completed_steps} steps the snapshot "
                "already completed"
            )
        state, value = loaded.decode(codec)
        ctx: GraphContext[StateT, DepsT] = GraphContext(state, deps, opts.run_id or loaded.run_id, opts)
        node = self.nodes[loaded.node_index]
        steps = ctx.step = loaded.completed_steps
        interrupt = Interrupt(node.name, loaded.paused) if loaded.paused is not None else None
        if opts.event_sinks:
            _emit(opts.event_sinks, "run_resume", ctx.run_id, steps, node=node.name)
        return GraphRun(
            self, ctx, max_steps, concurrency, (self._end, self._end_async), node, value, steps, interrupt
        )

    # --- pictures --------------------------------------------------------------------------------

    def visualization(self) -> Visualization:
        """The graph as data: synthetic start and end nodes, nodes in source order, edges."""
        from ._visual import visualization

        return visualization(self)

    def render_mermaid(
        self, *, title: str | None = None, direction: MermaidDirection = "TB", edge_labels: bool = True
    ) -> str:
        """A Mermaid `stateDiagram-v2` document of the graph (every label escaped)."""
        from ._visual import render_mermaid

        return render_mermaid(self, title=title, direction=direction, edge_labels=edge_labels)


class GraphRun(Generic[StateT, DepsT, InputT, ValueT, OutputT]):
    """One execution of a graph, advanced one node per `await run.next()`.

    A failure is latched: every later `next()` raises the same exception and runs nothing.
    """

    __slots__ = (
        "_concurrency",
        "_ctx",
        "_end",
        "_end_fn",
        "_error",
        "_graph",
        "_interrupt",
        "_max_steps",
        "_node",
        "_nodes",
        "_sinks",
        "_status",
        "_steps",
        "_tb",
        "_value",
    )

    def __init__(
        self,
        graph: Graph[StateT, DepsT, InputT, ValueT, OutputT],
        ctx: GraphContext[StateT, DepsT],
        max_steps: int,
        concurrency: int,
        end_fn: tuple[Any, bool],
        node: Node,
        value: Any,
        steps: int = 0,
        interrupt: Interrupt | None = None,
    ) -> None:
        # Built by `Graph.iter` (after the start callback) and `Graph.resume_snapshot`, positioned at `node`.
        self._graph = graph
        self._nodes = graph.nodes
        self._ctx = ctx
        self._max_steps = max_steps
        self._concurrency = concurrency
        self._end_fn = end_fn  # the graph's end callback and whether it is async
        self._sinks = ctx.options.event_sinks
        self._status = _INTERRUPTED if interrupt is not None else _RUNNING
        self._node: Node | None = node
        self._value: Any = value
        self._steps = steps
        self._end: End[OutputT] | None = None
        self._error: BaseException | None = None
        self._tb: Any = None
        self._interrupt = interrupt

    def __repr__(self) -> str:
        status = ("running", "busy", "interrupted", "done", "failed")[self._status]
        return f"GraphRun(run_id={self._ctx.run_id!r}, status={status}, steps={self._steps})"

    # --- inspection ------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's stable ID."""
        return self._ctx.run_id

    @property
    def state(self) -> StateT:
        """The run's state."""
        return self._ctx.state

    @property
    def context(self) -> GraphContext[StateT, DepsT]:
        """The context callbacks receive."""
        return self._ctx

    @property
    def value(self) -> ValueT:
        """The current value (the next node's input)."""
        return self._value

    @property
    def completed_steps(self) -> int:
        """Nodes completed so far (the start and end callbacks are not counted)."""
        return self._steps

    @property
    def max_steps(self) -> int:
        """The run's effective step ceiling."""
        return self._max_steps

    @property
    def next_node(self) -> NextNode | None:
        """The node the next `next()` runs (`None` once the run ended or failed)."""
        if self._status in (_RUNNING, _INTERRUPTED, _BUSY) and self._node is not None:
            return self._node.marker
        return None

    @property
    def done(self) -> bool:
        """Whether the run reached the end."""
        return self._status == _DONE

    @property
    def error(self) -> BaseException | None:
        """The latched failure, if the run failed."""
        return self._error

    @property
    def interrupt(self) -> Interrupt | None:
        """The agent pause the run waits on, if any."""
        return self._interrupt

    @property
    def output(self) -> OutputT:
        """The output; raises `GraphRunStateError` until the run reached the end."""
        if self._end is None:
            raise GraphRunStateError("the run has not reached the end yet; advance it with next()")
        return self._end.output

    # --- advancing -------------------------------------------------------------------------------

    def _emit(self, kind: GraphEventKind, **fields: Any) -> None:
        if self._sinks:
            _emit(self._sinks, kind, self._ctx.run_id, self._steps, **fields)

    def _fail(self, exc: BaseException, node: Node | None) -> None:
        name = node.name if node is not None else None
        if isinstance(exc, Exception):
            latched: BaseException = exc
        else:
            latched = GraphCancelledError(
                f"the run was cancelled while {'node ' + repr(name) if name else 'the end callback'} ran; "
                "it cannot continue (start a new run, or resume a snapshot taken before)",
                node=name,
            )
            latched.__cause__ = exc
        self._error = latched
        self._tb = latched.__traceback__
        self._status = _FAILED
        self._interrupt = None
        if self._sinks:
            if name is not None:
                self._emit("step_error", node=name, error=exc)
            self._emit("run_error", node=name, error=exc)

    def _not_running(self) -> NextNode | End[OutputT] | Interrupted:
        status = self._status
        if status == _FAILED:
            assert self._error is not None
            raise self._error.with_traceback(self._tb)
        if status == _DONE:
            assert self._end is not None
            return self._end
        if status == _INTERRUPTED:
            assert self._interrupt is not None
            raise GraphRunStateError(
                f"the run waits for decisions at agent node {self._interrupt.node!r}: "
                "call await run.resume(decisions)"
            )
        raise GraphRunStateError("next() is already running for this run; await it first")

    async def next(self) -> NextNode | End[OutputT] | Interrupted:
        """Run the next node: returns the node after it, `End(output)`, or `Interrupted` when an
        agent node paused for decisions. Once the run failed, raises that failure again."""
        if self._status != _RUNNING:
            return self._not_running()
        node = self._node
        assert node is not None
        if self._steps >= self._max_steps:
            error = GraphStepLimitExceeded(
                f"the run completed {self._steps} steps, its ceiling (max_steps={self._max_steps}); "
                f"node {node.name!r} did not run",
                node=node.name,
                max_steps=self._max_steps,
            )
            self._fail(error, node)
            raise error
        self._status = _BUSY
        ctx = self._ctx
        ctx.node = node.name
        ctx.step = self._steps
        sinks = self._sinks
        if sinks:
            self._emit("step_start", node=node.name)
        try:
            kind = node.kind
            if kind == STEP:
                value = node.fn(ctx, self._value)
                if node.is_async:
                    value = await value
                target = node.target
            elif kind == DECISION:
                result = node.fn(ctx, self._value)
                if node.is_async:
                    result = await result
                try:
                    branch = result.branch
                    value = result.value
                except AttributeError:
                    raise GraphRunError(
                        f"decision {node.name!r} returned {type(result).__name__}, not a DecisionResult",
                        node=node.name,
                    ) from None
                target = node.branch_targets.get(branch, _UNMATCHED)
                if target == _UNMATCHED:
                    raise UnmatchedRouteError(node.name, branch)
                if sinks:
                    self._emit("decision", node=node.name, branch=branch)
            else:
                assert kind == FAN_OUT
                if sinks:
                    self._emit("fan_out_start", node=node.name)
                value, tasks = await run_fan_out(
                    node, ctx, self._value, self._concurrency, self._graph.limits
                )
                if sinks:
                    self._emit("fan_out_end", node=node.name, tasks=tasks)
                target = node.target
        except NodePaused as pause:
            self._interrupt = interrupt = Interrupt(node.name, pause.paused)
            self._status = _INTERRUPTED
            self._emit("interrupt", node=node.name)
            return Interrupted(interrupt)
        except NodeResumeRejected as rejected:
            self._status = _INTERRUPTED  # nothing ran: the same pause still waits for valid decisions
            raise rejected.error from None
        except BaseException as exc:
            self._fail(exc, node)
            raise
        self._steps += 1
        self._value = value
        if sinks:
            self._emit("step_end", node=node.name)
        if target == END:
            return await self._finish()
        self._node = following = self._nodes[target]
        self._status = _RUNNING
        return following.marker

    async def _finish(self) -> End[OutputT]:
        end_fn, end_async = self._end_fn
        try:
            output = end_fn(self._ctx, self._value)
            if end_async:
                output = await output
        except BaseException as exc:
            self._fail(exc, None)
            raise
        self._end = end = End(output)
        self._status = _DONE
        self._node = None
        self._emit("run_end")
        return end

    async def resume(self, decisions: Mapping[str, Decision]) -> NextNode | End[OutputT] | Interrupted:
        """Continue the paused agent node with one decision per pending call, then advance like
        `next()`. The agent's model request is not sent again; invalid decisions raise the agent's
        `DecisionError` and leave the run interrupted."""
        if self._status != _INTERRUPTED:
            if self._status == _FAILED:
                self._not_running()
            raise GraphRunStateError("the run is not waiting for decisions")
        interrupt = self._interrupt
        assert interrupt is not None
        pending_resumes[self._ctx] = (interrupt.paused, decisions)
        self._status = _RUNNING
        try:
            return await self.next()
        finally:
            pending_resumes.pop(self._ctx, None)

    async def _to_end(self) -> OutputT:
        count = 0
        while True:
            result = await self.next()
            if result.__class__ is NextNode:
                count += 1
                if count == _CHECKPOINT_EVERY:
                    # Sync-only loops would otherwise never yield: let cancellation and other tasks in.
                    count = 0
                    await anyio.lowlevel.checkpoint()
                continue
            if isinstance(result, End):
                return result.output
            raise GraphInterrupted(self)

    async def run_to_end(self) -> OutputT:
        """Advance until the end and return the output (`GraphInterrupted` if an agent node pauses)."""
        return await self._to_end()

    # --- snapshots -------------------------------------------------------------------------------

    def snapshot(self, codec: SnapshotCodec[StateT, ValueT]) -> bytes:
        """The run as a versioned JSON envelope: state and value through `codec`, the next node,
        the step counters, and an agent pause if the run waits on one. Only between nodes."""
        from ._snapshot import write_snapshot

        graph = self._graph
        if graph.definition_id is None:
            raise SnapshotsDisabledError(
                "this graph has no definition_id, so snapshots are off; set builder.definition_id before build()"
            )
        if self._status == _BUSY:
            raise SnapshotStateError("a snapshot can only be taken between nodes, not while next() runs")
        if self._status in (_DONE, _FAILED):
            raise SnapshotStateError(
                "the run "
                + ("reached the end" if self._status == _DONE else "failed")
                + "; there is nothing to resume"
            )
        node = self._node
        assert node is not None
        paused = self._interrupt.paused if self._interrupt is not None else None
        return write_snapshot(
            graph,
            codec,
            run_id=self._ctx.run_id,
            state=self._ctx.state,
            value=self._value,
            node=node,
            completed_steps=self._steps,
            max_steps=self._max_steps,
            paused=paused,
        )
