"""Multi-agent scopes: delegation, subagents and handoffs under one bounded session.

```python
from ferrule.agent.multi_agent import Session, Scope

session = Session(timeout=120)
root = session.root(deps=deps)
plan = await root.delegate(planner, "Plan the trip")              # depth 1, isolated context
answer = await root.handoff(writer, "Write it up", context="shared") # same depth
print(session.usage)                                               # everything, cumulatively
```

A `Session` is one execution tree: it counts every started run (including failed ones), adds
every run's usage to a cumulative `usage`, owns one absolute deadline shared by all runs, and can
cancel every run in the tree at once. A `Scope` is a position in the tree: `delegate` and
`subagent` run another agent one level deeper and return to the caller; `handoff` runs another
agent at the same depth. `context="shared"` passes the scope's dependencies and history;
`"isolated"` (default) passes only what you give.

Inside a tool, `Scope.from_context(ctx)` continues the tree the tool's run belongs to (its depth,
dependencies, history and deadline), so an agent tool can delegate without losing the limits.

Limits (`MultiAgentLimits`): `max_depth` bounds delegate/subagent nesting (handoffs do not add
depth), `max_runs` counts starts, and `usage_limits` caps cumulative requests, tool calls, tokens
and nano-USD cost; each run's own limits are tightened to what remains. One session is for one
execution tree driven from one task at a time.

Every run gets a `RunCorrelation` with the session ID, the transition, its depth, its run index and
the target agent's name (on top of a `correlation=` you pass: its run and node IDs are kept), and
the session's `trace_parent`, so hooks and OpenTelemetry can rebuild the tree.
"""

from __future__ import annotations

import contextvars
import functools
import math
import os
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import TypeAlias

import anyio
import msgspec

from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.usage import RunUsage
from ferrule.core.usage import UsageLimits

from ._context import RunContext
from ._util import tighter
from .capabilities import Capability
from .capabilities import CapabilityLayer
from .correlation import RunCorrelation
from .exceptions import AgentRunError
from .exceptions import RunCancelledError
from .exceptions import RunTimeoutError
from .exceptions import run_state_of

if TYPE_CHECKING:
    from ._agent import Agent
    from ._result import AgentRunResult

__all__ = [
    "ContextMode",
    "MultiAgentLimits",
    "RunRecord",
    "Scope",
    "ScopeDepthExceeded",
    "ScopeRunLimitExceeded",
    "Session",
    "Transition",
]

Transition: TypeAlias = Literal["delegate", "subagent", "handoff"]
"""How a run entered the tree."""
ContextMode: TypeAlias = Literal["shared", "isolated"]
"""`shared`: the scope's dependencies and history; `isolated`: only what the call passes."""

_UNSET: Any = object()
_CURRENT: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("ferrule_scope", default=None)


class ScopeDepthExceeded(AgentRunError):
    """A delegation or subagent would nest deeper than `MultiAgentLimits.max_depth`."""


class ScopeRunLimitExceeded(AgentRunError):
    """The session already started `MultiAgentLimits.max_runs` runs."""


class MultiAgentLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds on one execution tree."""

    max_depth: int = 3
    """Deepest delegate/subagent nesting (the root scope is depth 0)."""
    max_runs: int = 16
    """Runs the session may start, successful or not."""
    usage_limits: UsageLimits | None = None
    """Cumulative ceilings over every run (requests, tool calls, tokens, nano-USD cost)."""

    def __post_init__(self) -> None:
        if self.max_depth < 0:
            raise ValueError(f"max_depth must be >= 0, got {self.max_depth}")
        if self.max_runs < 1:
            raise ValueError(f"max_runs must be >= 1, got {self.max_runs}")


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One run started by the session, for correlation and audit."""

    index: int
    """Position in start order (1-based)."""
    transition: Transition
    """How the run was started."""
    depth: int
    """Its depth in the tree."""
    agent_name: str
    """The agent's name."""
    run_id: str | None
    """The run's ID (when it got far enough to have one)."""
    ok: bool
    """Whether it finished with output."""
    error: str | None = None
    """The exception type that ended it, if any."""


def _remaining(limit: int | None, used: int | None) -> int | None:
    if limit is None:
        return None
    return limit - (used or 0)


class Session:
    """One bounded execution tree of agent runs."""

    def __init__(
        self,
        *,
        limits: MultiAgentLimits | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        trace_parent: Any = None,
    ) -> None:
        if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
            raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.limits = limits or MultiAgentLimits()
        """The tree's limits."""
        self.session_id = session_id or os.urandom(16).hex()
        """A stable identifier of the tree."""
        self.trace_parent = trace_parent
        """An OpenTelemetry `Context` every run of the tree is started under (`None`: the current one)."""
        self.usage = RunUsage(cost_nano_usd=0)
        """Cumulative usage of every run (cost becomes `None` once any run's cost is unknown)."""
        self.runs = 0
        """Runs started so far."""
        self.records: list[RunRecord] = []
        """Every started run, in start order."""
        self._timeout = timeout
        self._deadline: float | None = None
        self._cancelled = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def deadline(self) -> float | None:
        """The tree's absolute deadline on anyio's clock, fixed when the first run starts."""
        return self._deadline

    @property
    def cancelled(self) -> bool:
        """Whether `cancel()` was called."""
        return self._cancelled

    def root(
        self,
        *,
        deps: Any = None,
        message_history: Sequence[Message] = (),
        capabilities: Sequence[Capability[Any]] = (),
    ) -> Scope:
        """The application's scope (depth 0)."""
        return Scope(self, depth=0, deps=deps, messages=list(message_history), inherited=list(capabilities))

    def cancel(self) -> None:
        """Cancel every run in progress and refuse new ones (they raise `RunCancelledError`)."""
        self._cancelled = True
        for scope in list(self._scopes):
            scope.cancel()

    def record_usage(self, usage: RunUsage) -> None:
        """Add usage of work done outside the session (e.g. a parent run) to the cumulative total."""
        self.usage = self.usage + usage

    def admit(self, transition: Transition, depth: int, agent_name: str) -> None:
        """Check that a run may start in the tree (cancellation, depth, run count, cumulative usage);
        the first admitted run starts the session's clock."""
        self._check_before(transition, depth, agent_name)
        if self._deadline is None and self._timeout is not None:
            self._deadline = anyio.current_time() + self._timeout

    def cancel_scope(self) -> _RunScope:
        """A cancel scope for one run of the tree, cancelled by `cancel()` while it is open."""
        return _RunScope(self._scopes)

    def _check_before(self, transition: Transition, depth: int, agent_name: str) -> None:
        if self._cancelled:
            raise RunCancelledError("the multi-agent session was cancelled; no new runs start")
        if transition != "handoff" and depth > self.limits.max_depth:
            raise ScopeDepthExceeded(
                f"{transition} to {agent_name!r} would run at depth {depth}, past max_depth="
                f"{self.limits.max_depth}; raise MultiAgentLimits.max_depth or handle it at this level"
            )
        if self.runs + 1 > self.limits.max_runs:
            raise ScopeRunLimitExceeded(
                f"the session already started {self.runs} runs (max_runs={self.limits.max_runs}); "
                "raise MultiAgentLimits.max_runs"
            )
        cumulative = self.limits.usage_limits
        if cumulative is not None:
            cumulative.check_before_request(self.usage)

    def limits_for(self, own: UsageLimits | None) -> UsageLimits:
        """A run's own usage limits, tightened to what the session's cumulative limits leave."""
        base = own or UsageLimits()
        cumulative = self.limits.usage_limits
        if cumulative is None:
            return base
        usage = self.usage
        return UsageLimits(
            request_limit=tighter(base.request_limit, _remaining(cumulative.request_limit, usage.requests)),
            tool_calls_limit=tighter(
                base.tool_calls_limit, _remaining(cumulative.tool_calls_limit, usage.tool_calls)
            ),
            input_tokens_limit=tighter(
                base.input_tokens_limit, _remaining(cumulative.input_tokens_limit, usage.input_tokens)
            ),
            output_tokens_limit=tighter(
                base.output_tokens_limit, _remaining(cumulative.output_tokens_limit, usage.output_tokens)
            ),
            total_tokens_limit=tighter(
                base.total_tokens_limit, _remaining(cumulative.total_tokens_limit, usage.total_tokens)
            ),
            cost_limit_nano_usd=tighter(
                base.cost_limit_nano_usd, _remaining(cumulative.cost_limit_nano_usd, usage.cost_nano_usd)
            ),
        )

    def account(self, usage: RunUsage | None) -> None:
        """Add a finished run's usage to the total; raises when the cumulative token limits are passed."""
        if usage is not None:
            self.usage = self.usage + usage
        cumulative = self.limits.usage_limits
        if cumulative is not None:
            cumulative.check_tokens(self.usage)


class _RunScope:
    """The cancel scope of one run of a session, registered with the session while it is open."""

    __slots__ = ("_open", "_scope")

    def __init__(self, open_scopes: set[anyio.CancelScope]) -> None:
        self._open = open_scopes
        self._scope = anyio.CancelScope()

    def __enter__(self) -> anyio.CancelScope:
        self._open.add(self._scope)
        return self._scope.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool:
        try:
            return self._scope.__exit__(kind, error, tb)
        finally:
            self._open.discard(self._scope)


class Scope:
    """A position in a session's tree: the depth, dependencies and history runs start from."""

    __slots__ = ("deadline", "deps", "depth", "inherited", "messages", "session")

    def __init__(
        self,
        session: Session,
        *,
        depth: int,
        deps: Any,
        messages: list[Message],
        inherited: list[Capability[Any]],
        deadline: float | None = None,
    ) -> None:
        self.session = session
        """The tree this scope belongs to."""
        self.depth = depth
        """The depth of runs started by `handoff` from here (delegates run one deeper)."""
        self.deps = deps
        """Dependencies passed to runs with `context="shared"`."""
        self.messages = messages
        """History passed to runs with `context="shared"`."""
        self.inherited = inherited
        """Capabilities passed on with `inherit_capabilities=True` (the `inherited` tier)."""
        self.deadline = deadline
        """An extra absolute deadline (e.g. from the tool this scope was made in)."""

    @staticmethod
    def current() -> Scope | None:
        """The scope of the run executing this code (inside a scope-started run), else `None`."""
        return _CURRENT.get()

    @classmethod
    def from_context(cls, ctx: RunContext[Any], *, session: Session | None = None) -> Scope:
        """The scope of the tool's run: its session and depth, the tool's deps, history and deadline.

        The run must have been started through a scope (or pass `session=` to make it the root of
        a new tree at depth 0).
        """
        current = _CURRENT.get()
        if current is None and session is None:
            raise UserError(
                "Scope.from_context() needs a run started through a multi-agent Scope, or session=..."
            )
        owner = current.session if current is not None else session
        assert owner is not None
        depth = current.depth if current is not None else 0
        inherited = list(ctx.capabilities.capabilities) if ctx.capabilities is not None else []
        return cls(
            owner,
            depth=depth,
            deps=ctx.deps,
            messages=list(ctx.messages),
            inherited=inherited,
            deadline=ctx.deadline,
        )

    def child(self, result: AgentRunResult[Any]) -> Scope:
        """The scope a completed delegate occupies: one level deeper, with its history."""
        return Scope(
            self.session,
            depth=self.depth + 1,
            deps=self.deps,
            messages=result.all_messages(),
            inherited=self.inherited,
            deadline=self.deadline,
        )

    def with_history(self, messages: Sequence[Message]) -> Scope:
        """This scope with replacement history (to continue a same-depth handoff)."""
        return Scope(
            self.session,
            depth=self.depth,
            deps=self.deps,
            messages=list(messages),
            inherited=self.inherited,
            deadline=self.deadline,
        )

    async def delegate(
        self, agent: Agent[Any, Any], prompt: Any = None, **options: Any
    ) -> AgentRunResult[Any]:
        """Run `agent` one level deeper and return its result to the caller."""
        return await self._run("delegate", agent, prompt, **options)

    async def subagent(
        self, agent: Agent[Any, Any], prompt: Any = None, **options: Any
    ) -> AgentRunResult[Any]:
        """Like `delegate`, recorded as a subagent; its capabilities sit in the `subagent` tier."""
        return await self._run("subagent", agent, prompt, **options)

    async def handoff(
        self, agent: Agent[Any, Any], prompt: Any = None, **options: Any
    ) -> AgentRunResult[Any]:
        """Run `agent` at this depth (another programmatic turn)."""
        return await self._run("handoff", agent, prompt, **options)

    async def _run(
        self,
        transition: Transition,
        agent: Agent[Any, Any],
        prompt: Any,
        *,
        context: ContextMode = "isolated",
        deps: Any = _UNSET,
        message_history: Sequence[Message] | None = None,
        capabilities: Sequence[Capability[Any]] = (),
        inherit_capabilities: bool = False,
        timeout: float | None = None,  # noqa: ASYNC109 - tightened to the tree's deadline
        usage_limits: UsageLimits | None = None,
        **run_options: Any,
    ) -> AgentRunResult[Any]:
        if context not in ("shared", "isolated"):
            raise UserError(f"context must be 'shared' or 'isolated', got {context!r}")
        session = self.session
        depth = self.depth if transition == "handoff" else self.depth + 1
        session.admit(transition, depth, agent.name)
        deadline = tighter(session.deadline, self.deadline)
        if deadline is not None:
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise RunTimeoutError("the multi-agent session's deadline passed before the run could start")
            timeout = tighter(timeout, remaining)
        if context == "shared":
            run_deps = self.deps if deps is _UNSET else deps
            history = self.messages if message_history is None else message_history
        else:
            run_deps = None if deps is _UNSET else deps
            history = message_history or []
        layers = list(run_options.pop("capability_layers", ()))
        if inherit_capabilities and self.inherited:
            layers.append(CapabilityLayer("inherited", self.inherited))
        if capabilities:
            layers.append(CapabilityLayer("subagent" if transition == "subagent" else "nested", capabilities))
        session.runs += 1
        index = session.runs
        given: RunCorrelation | None = run_options.pop("correlation", None)
        run_options["correlation"] = msgspec.structs.replace(
            given or RunCorrelation(run_id=session.session_id),
            session_id=session.session_id,
            transition=transition,
            depth=depth,
            run_index=index,
            target_name=agent.name,
        )
        if run_options.get("trace_parent") is None and session.trace_parent is not None:
            run_options["trace_parent"] = session.trace_parent
        scope = Scope(session, depth=depth, deps=run_deps, messages=list(history), inherited=self.inherited)
        token = _CURRENT.set(scope)
        result: AgentRunResult[Any] | None = None
        record = functools.partial(
            RunRecord, index=index, transition=transition, depth=depth, agent_name=agent.name
        )
        try:
            with session.cancel_scope():
                result = await agent.run(
                    prompt,
                    deps=run_deps,
                    message_history=history or None,
                    timeout=timeout,
                    usage_limits=session.limits_for(usage_limits or agent.usage_limits),
                    capability_layers=layers,
                    **run_options,
                )
        except BaseException as exc:
            state = run_state_of(exc)
            session.records.append(record(run_id=None, ok=False, error=type(exc).__name__))
            session.account(state.usage if state is not None else None)
            raise
        finally:
            _CURRENT.reset(token)
        if result is None:  # the cancel scope swallowed a session-wide cancellation
            session.records.append(record(run_id=None, ok=False, error="RunCancelledError"))
            raise RunCancelledError(f"the {transition} to {agent.name!r} was cancelled with its session")
        session.records.append(record(run_id=result.run_id, ok=True))
        session.account(result.usage)
        return result
