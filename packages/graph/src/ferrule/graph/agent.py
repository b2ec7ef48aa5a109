"""Agent nodes: an agent run as an ordinary graph step.

```python
from ferrule.graph.agent import agent_node

draft = agent_node(
    writer,
    prepare=lambda ctx, topic: f"Write two sentences about {topic}.",
    apply=lambda ctx, result: result.output,
)
builder.step("draft", draft)
```

`prepare(ctx, value)` returns the prompt, or `(prompt, AgentRunOptions(...))` with any keyword
arguments of `agent.run`; the graph's `deps` are injected unless the options give `deps`, and the
run carries a `RunCorrelation` (graph run ID, node ID and name) and the graph's trace parent, so the
agent's hooks and spans share the graph's identity. `apply(ctx, result)` turns the completed
`AgentRunResult[T]` into the next value; it runs only after the agent run completed.

With `stream=handler` the node streams (`agent.run_stream`): the handler sees every
`AgentStreamEvent` in order; if it raises, the run is cancelled before `apply` and the node fails.

An agent run that pauses for decisions on deferred tools (approval, external tools) pauses the
graph: `run.next()` returns `Interrupted`, `run.snapshot(codec)` stores the agent's paused state,
and `await run.resume(decisions)` (also on a run from `Graph.resume_snapshot`, in another process)
continues the agent run without repeating its model request, then applies and moves on.

Failures at the graph boundary are narrow: `MemoryError` and cancellation (`RunCancelledError`,
the backend's cancellation) propagate as they are; anything else becomes `StepFailed(node, phase)`
with the original as `__cause__`, `phase` one of `prepare`, `agent`, `stream`, `apply`.

Agent nodes are ordinary steps, never fan-out branches: within one graph run they run one at a
time. Concurrent graph runs may share an agent node (the agent, callbacks, dependencies and
telemetry exporter must then be safe to share); a shared `Conversation` needs the application's
own synchronization.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from contextlib import AbstractContextManager
from contextlib import nullcontext
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypeAlias
from typing import cast

import anyio
import msgspec
from typing_extensions import TypeVar

from ferrule.agent import Agent
from ferrule.agent import AgentRunResult
from ferrule.agent import AgentStreamEvent
from ferrule.agent import Paused
from ferrule.agent import RunCorrelation
from ferrule.agent import RunOptions
from ferrule.agent import durable
from ferrule.agent.exceptions import PausedStateError
from ferrule.agent.exceptions import RunCancelledError
from ferrule.core import history
from ferrule.core.messages import Message
from ferrule.core.messages import UserContent
from ferrule.core.usage import RunUsage

from ._errors import StepFailed
from ._graph import NodePaused
from ._graph import NodeResumeRejected
from ._types import DepsT
from ._types import GraphContext
from ._types import StateT
from ._types import ValueT
from ._types import is_async_callable
from ._types import pending_resumes

__all__ = [
    "AgentNode",
    "AgentNodeEvent",
    "AgentNodeObserver",
    "AgentNodePhase",
    "AgentRunOptions",
    "CancelToken",
    "Control",
    "Conversation",
    "agent_node",
]

AgentOutputT = TypeVar("AgentOutputT")

_log = logging.getLogger("ferrule.graph")

AgentNodePhase: TypeAlias = Literal["prepare", "agent", "stream", "apply"]
"""Where an agent node failed."""

Prompt: TypeAlias = "str | Sequence[UserContent] | None"


AgentRunOptions: TypeAlias = RunOptions[Any]
"""Keyword arguments of `Agent.run` that `prepare` may return with the prompt: `ferrule.agent.RunOptions`."""


# `resume` continues the paused history with the paused instructions: these two do not apply.
_NOT_ON_RESUME = ("message_history", "instructions")


class AgentNodeEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What an agent node's observer sees: `start`, every `stream` event, `end` or `failure`."""

    kind: Literal["start", "stream", "end", "failure"]
    """What happened."""
    node: str
    """The graph node."""
    run_id: str
    """The graph run's ID."""
    resumed: bool = False
    """Whether the node continues a paused agent run."""
    event: Any = None
    """The stream event (`stream`)."""
    result: Any = None
    """The agent's `AgentRunResult` (`end`)."""
    phase: AgentNodePhase | None = None
    """Where it failed (`failure`)."""
    error_type: str | None = None
    """The original exception's type name (`failure`)."""
    error: BaseException | None = None
    """The original exception (`failure`)."""


AgentNodeObserver: TypeAlias = Callable[[AgentNodeEvent], None]
"""A synchronous observer of an agent node; an exception it raises is logged and ignored."""


class CancelToken:
    """Cancels the agent runs of the nodes it controls: those in flight now, and every later one.

    Call `cancel()` from the event loop's thread (anyio cancel scopes are not thread-safe).
    """

    __slots__ = ("_cancelled",)

    def __init__(self) -> None:
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Cancel every controlled agent run in flight; later ones raise `RunCancelledError`."""
        self._cancelled = True
        for scope in list(_token_scopes.get(self, ())):
            scope.cancel()


# The cancel scopes of the controlled agent runs in flight, by token; an entry goes when its last run ends.
_token_scopes: dict[CancelToken, set[anyio.CancelScope]] = {}


class Control(msgspec.Struct, frozen=True, kw_only=True):
    """Run control for one agent node."""

    timeout: float | None = None
    """Seconds the node's agent run may take: only ever tightens the agent's `run_timeout` and the
    prepared `timeout`."""
    cancel: CancelToken | None = None
    """Cancels this node's agent runs."""

    def __post_init__(self) -> None:
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"Control.timeout must be a positive number of seconds, got {self.timeout!r}")


def _copy_messages(messages: Sequence[Message]) -> list[Message]:
    return history.loads(history.dumps(messages)) if messages else []


def _copy_usage(usage: RunUsage) -> RunUsage:
    return RunUsage() + usage


class Conversation(msgspec.Struct, kw_only=True):
    """Graph state for sequential agent nodes: a private copy of the history and cumulative usage.

    It is a msgspec Struct, so a state Struct holding one snapshots with `JsonCodec` as it is.
    """

    messages: list[Message] = msgspec.field(default_factory=list)  # pyright: ignore[reportUnknownVariableType]
    """The canonical history (a deep copy, never shared with a result)."""
    usage: RunUsage = msgspec.field(default_factory=RunUsage)
    """Usage of every run appended: requests, tool calls, tokens, details and cost."""
    runs: int = 0
    """Runs appended so far."""

    def __post_init__(self) -> None:
        self.messages = _copy_messages(self.messages)
        self.usage = _copy_usage(self.usage)

    def replace(self, messages: Sequence[Message]) -> None:
        """Replace the history with a deep copy of `messages` (usage is kept)."""
        self.messages = _copy_messages(messages)

    def append_run(self, result: AgentRunResult[Any]) -> None:
        """Take a finished run: its whole history becomes the history, its usage adds up."""
        self.messages = _copy_messages(result.all_messages())
        self.usage = self.usage + result.usage
        self.runs += 1


class _StreamFailed(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


class AgentNode(Generic[StateT, DepsT, ValueT, AgentOutputT]):
    """A graph step that runs an agent; build it with `agent_node(...)`."""

    __ferrule_agent_node__ = True

    __slots__ = (
        "_apply_async",
        "_prepare_async",
        "_stream_async",
        "agent",
        "apply",
        "control",
        "name",
        "observer",
        "prepare",
        "stream",
    )

    def __init__(
        self,
        agent: Agent[Any, AgentOutputT],
        *,
        prepare: Callable[[GraphContext[StateT, DepsT], ValueT], Any],
        apply: Callable[[GraphContext[StateT, DepsT], AgentRunResult[AgentOutputT]], Any],
        name: str | None,
        stream: Callable[[AgentStreamEvent], Any] | None,
        observer: AgentNodeObserver | None,
        control: Control | None,
    ) -> None:
        if not isinstance(agent, Agent):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"agent_node needs an Agent, got {agent!r}")
        for what, fn in (("prepare", prepare), ("apply", apply)):
            if not callable(fn):
                raise TypeError(f"agent_node {what}= must be callable, got {fn!r}")
        if stream is not None and not callable(stream):
            raise TypeError(f"agent_node stream= must be callable, got {stream!r}")
        if observer is not None and not callable(observer):
            raise TypeError(f"agent_node observer= must be callable, got {observer!r}")
        if control is not None and not isinstance(control, Control):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"agent_node control= must be a Control, got {control!r}")
        self.agent = agent
        """The agent this node runs."""
        self.prepare = prepare
        """`prepare(ctx, value)`: the prompt, or `(prompt, AgentRunOptions)`."""
        self.apply = apply
        """`apply(ctx, result)`: the next value."""
        self.name = name
        """The node name reported in the correlation (default: the graph node's name)."""
        self.stream = stream
        """The stream handler, if the node streams."""
        self.observer = observer
        """The node's observer."""
        self.control = control
        """The node's run control."""
        self._prepare_async = is_async_callable(prepare)
        self._apply_async = is_async_callable(apply)
        self._stream_async = stream is not None and is_async_callable(stream)

    def __repr__(self) -> str:
        return f"AgentNode(agent={self.agent.name!r}, stream={self.stream is not None})"

    def _observe(self, event: AgentNodeEvent) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            observer(event)
        except Exception as exc:  # observers are infallible by contract
            _log.warning("agent node observer %r raised on %s (ignored): %r", observer, event.kind, exc)

    def _failed(
        self, ctx: GraphContext[Any, Any], phase: AgentNodePhase, error: Exception, resumed: bool
    ) -> StepFailed:
        self._observe(
            AgentNodeEvent(
                kind="failure",
                node=ctx.node,
                run_id=ctx.run_id,
                resumed=resumed,
                phase=phase,
                error_type=type(error).__name__,
                error=error,
            )
        )
        failure = StepFailed(ctx.node, phase, error)
        failure.__cause__ = error
        return failure

    async def __call__(self, ctx: GraphContext[StateT, DepsT], value: ValueT) -> ValueT:
        """Run the agent for `value` and return what `apply` makes of its result."""
        resume = pending_resumes.pop(ctx, None)
        resumed = resume is not None
        node = ctx.node
        self._observe(AgentNodeEvent(kind="start", node=node, run_id=ctx.run_id, resumed=resumed))
        try:
            prepared = self.prepare(ctx, value)
            if self._prepare_async:
                prepared = await prepared
            prompt, options = _split(prepared)
        except MemoryError:
            raise
        except Exception as exc:
            raise self._failed(ctx, "prepare", exc, resumed) from exc
        if "deps" not in options:
            options["deps"] = ctx.deps
        if options.get("correlation") is None:
            options["correlation"] = RunCorrelation(
                run_id=ctx.run_id, node_id=node, node_name=self.name or node
            )
        else:
            _check_durable_correlation(options["correlation"])
        if options.get("trace_parent") is None and ctx.options.trace_parent is not None:
            options["trace_parent"] = ctx.options.trace_parent
        control = self.control
        if control is not None and control.timeout is not None:
            given = options.get("timeout")
            options["timeout"] = control.timeout if given is None else min(given, control.timeout)
        try:
            outcome = await self._run(ctx, prompt, options, resume, control)
        except MemoryError:
            raise
        except RunCancelledError:
            raise
        except _StreamFailed as failed:
            raise self._failed(ctx, "stream", failed.error, resumed) from failed.error
        except PausedStateError as exc:
            if resumed:  # refused before anything ran: the same pause still waits
                raise NodeResumeRejected(exc) from exc
            raise self._failed(ctx, "agent", exc, resumed) from exc
        except Exception as exc:
            raise self._failed(ctx, "agent", exc, resumed) from exc
        if isinstance(outcome, Paused):
            raise NodePaused(outcome)
        try:
            result = self.apply(ctx, outcome)
            if self._apply_async:
                result = await result
        except MemoryError:
            raise
        except Exception as exc:
            raise self._failed(ctx, "apply", exc, resumed) from exc
        self._observe(
            AgentNodeEvent(kind="end", node=node, run_id=ctx.run_id, resumed=resumed, result=outcome)
        )
        return cast("ValueT", result)

    async def _run(
        self,
        ctx: GraphContext[Any, Any],
        prompt: Any,
        options: dict[str, Any],
        resume: tuple[Any, Any] | None,
        control: Control | None,
    ) -> AgentRunResult[AgentOutputT] | Paused:
        token = control.cancel if control is not None else None
        if token is None:
            with _node_steps(ctx):
                return await self._invoke_agent(ctx, prompt, options, resume)
        if token.cancelled:
            raise RunCancelledError("the agent node's CancelToken was cancelled")
        scope = anyio.CancelScope()
        scopes = _token_scopes.setdefault(token, set())
        scopes.add(scope)
        outcome: AgentRunResult[AgentOutputT] | Paused | None = None
        try:
            with scope, _node_steps(ctx):
                outcome = await self._invoke_agent(ctx, prompt, options, resume)
        finally:
            scopes.discard(scope)
            if not scopes:
                _token_scopes.pop(token, None)
        if outcome is None:  # the token's cancellation ended the run; its work was drained
            raise RunCancelledError("the agent node's CancelToken cancelled its run")
        return outcome

    async def _invoke_agent(
        self,
        ctx: GraphContext[Any, Any],
        prompt: Any,
        options: dict[str, Any],
        resume: tuple[Any, Any] | None,
    ) -> AgentRunResult[AgentOutputT] | Paused:
        agent = self.agent
        if resume is not None:
            for key in _NOT_ON_RESUME:
                options.pop(key, None)
        if self.stream is None:
            if resume is not None:
                return await agent.resume(resume[0], resume[1], **options)
            return await agent.run_until_pause(prompt, **options)
        streamed = (
            agent.resume_stream(resume[0], resume[1], **options)
            if resume is not None
            else agent.run_stream(prompt, **options)
        )
        handler = self.stream
        handler_async = self._stream_async
        async with streamed as stream:
            async for event in stream:
                try:
                    handled = handler(event)
                    if handler_async:
                        await handled
                except Exception as exc:
                    # Leaving the block cancels the run and drains it: nothing is applied.
                    raise _StreamFailed(exc) from exc
                if self.observer is not None:
                    self._observe(
                        AgentNodeEvent(
                            kind="stream",
                            node=ctx.node,
                            run_id=ctx.run_id,
                            resumed=resume is not None,
                            event=event,
                        )
                    )
            paused = stream.paused
            if paused is not None:
                return paused
            return stream.result


def _node_steps(ctx: GraphContext[Any, Any]) -> AbstractContextManager[object]:
    """Outside a durable run, nothing; inside one, a binding that puts the node's agent steps
    beneath `graph.<node-id>.step.<n>`, so two nodes (or two visits of one node) never share a
    step ID, and a replay finds its own."""
    bound = durable.current()
    if bound is None:
        return nullcontext()
    namespace = f"graph.{ctx.node}.step.{ctx.step}"
    outer = bound.binding
    if outer.step_namespace:
        namespace = f"{outer.step_namespace}.{namespace}"
    return durable.bind(durable.Binding(outer.run_id, namespace), bound.runner)


def _check_durable_correlation(correlation: RunCorrelation) -> None:
    bound = durable.current()
    if bound is not None and correlation.run_id and correlation.run_id != bound.binding.run_id:
        raise durable.DurableError(
            f"the agent node's correlation run ID {correlation.run_id!r} differs from the durable run's "
            f"{bound.binding.run_id!r}; leave correlation.run_id unset or give the durable run's ID"
        )


def _split(prepared: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(prepared, tuple):
        items = cast("tuple[Any, ...]", prepared)
        if len(items) != 2 or not isinstance(items[1], dict):
            raise TypeError("prepare must return a prompt or (prompt, AgentRunOptions(...))")
        return items[0], dict(cast("dict[str, Any]", items[1]))
    return prepared, {}


def agent_node(
    agent: Agent[Any, AgentOutputT],
    *,
    prepare: Callable[
        [GraphContext[StateT, DepsT], ValueT],
        Prompt | tuple[Prompt, AgentRunOptions] | Awaitable[Prompt | tuple[Prompt, AgentRunOptions]],
    ],
    apply: Callable[
        [GraphContext[StateT, DepsT], AgentRunResult[AgentOutputT]],
        ValueT | Awaitable[ValueT],
    ],
    name: str | None = None,
    stream: Callable[[AgentStreamEvent], Awaitable[None] | None] | None = None,
    observer: AgentNodeObserver | None = None,
    control: Control | None = None,
) -> Callable[[GraphContext[StateT, DepsT], ValueT], Awaitable[ValueT]]:
    """A graph step running `agent`: `prepare` the prompt, run (or stream) it, `apply` the result.

    `apply` receives `AgentRunResult[T]` with the agent's output type `T`. Register the node with
    `builder.step(name, agent_node(...))`; see the module documentation for streaming, pauses,
    correlation and errors. The step is an `AgentNode` (typed as the step callable it is, so the
    builder's types flow into `prepare` and `apply`).
    """
    return AgentNode(
        agent, prepare=prepare, apply=apply, name=name, stream=stream, observer=observer, control=control
    )
