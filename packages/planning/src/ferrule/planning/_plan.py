"""Immutable, revisable plans with approval gates, run in dependency order (seed 001)."""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import TypeAlias
from typing import TypeVar

import anyio
import msgspec

from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent.exceptions import RunCancelledError
from ferrule.agent.exceptions import run_state_of
from ferrule.core.errors import UserError
from ferrule.core.usage import RunUsage

from ._errors import PlanDenied
from ._errors import PlanError
from ._events import Advice
from ._events import AdviceEvent
from ._events import ApprovalEvent
from ._events import PlanCompletedEvent
from ._events import PlanEvent
from ._events import PlanFailedEvent
from ._events import PlanRevisedEvent
from ._events import StepEndEvent
from ._events import StepStartEvent
from ._graph import CycleError
from ._graph import topological_order
from ._limits import MAX_ADVICE_CHARS
from ._limits import MAX_ADVISORS
from ._limits import MAX_PLAN_STEPS
from ._limits import MAX_TITLE_CHARS
from ._limits import check_step_id
from ._run_errors import PlanTimeoutError
from ._util import call_user
from ._util import callable_name
from ._util import describe_error

if TYPE_CHECKING:
    from ferrule.agent import Agent
    from ferrule.agent import AgentRunResult
    from ferrule.agent.multi_agent import Scope

__all__ = [
    "Advisor",
    "Decision",
    "Observer",
    "Plan",
    "PlanOutcome",
    "PlanPaused",
    "PlanStep",
    "StepContext",
    "StepFunction",
    "run",
]

DepsT = TypeVar("DepsT")

StepFunction: TypeAlias = "Callable[[StepContext[Any]], Any]"
"""`run(ctx) -> output` of a plan step, sync (run in a worker thread) or async."""
Advisor: TypeAlias = "Callable[[Plan], str | Awaitable[str | None] | None]"
"""`advisor(plan) -> advice` (sync in a worker thread, or async); `None` or `""` gives no advice."""
Observer: TypeAlias = Callable[[PlanEvent], "Awaitable[None] | None"]
"""`observer(event)`: called inline (keep a sync one fast) or awaited."""
Decision: TypeAlias = "bool | Approved | Denied"
"""An approval decision for one gated step: `True`/`Approved()` or `False`/`Denied(message)`."""


@dataclasses.dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of a `Plan`: an ID, a title, its dependencies and the function that runs it."""

    id: str
    """Unique within the plan; at most `MAX_STEP_ID_CHARS` characters."""
    title: str
    """What the step does, for people; at most `MAX_TITLE_CHARS` characters."""
    depends_on: tuple[str, ...] = ()
    """Steps that must finish first (their outputs are in `StepContext.outputs`)."""
    requires_approval: bool = False
    """The step is gated: the run pauses before anything executes until a decision approves it."""
    run: StepFunction = dataclasses.field(kw_only=True)
    """`run(ctx) -> output`, sync (in a worker thread) or async."""

    def __post_init__(self) -> None:
        check_step_id(self.id)
        if not isinstance(self.title, str) or not self.title.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PlanError("every step needs a non-empty title", step_id=self.id)
        if len(self.title) > MAX_TITLE_CHARS:
            raise PlanError(
                f"the title is {len(self.title)} characters long; the limit is {MAX_TITLE_CHARS}",
                step_id=self.id,
            )
        if isinstance(self.depends_on, str):
            raise PlanError("depends_on must be a sequence of step IDs, not one string", step_id=self.id)
        deps = tuple(self.depends_on)
        object.__setattr__(self, "depends_on", deps)
        for dep in deps:
            check_step_id(dep, what="dependency")
        if len(set(deps)) != len(deps):
            raise PlanError("a dependency is listed twice", step_id=self.id)
        if not callable(self.run):
            raise PlanError("run must be a function run(ctx)", step_id=self.id)


class Plan:
    """One immutable revision of a plan: validated steps in a fixed dependency order.

    `revise(steps)` returns the next revision; this object stays valid and unchanged.
    """

    __slots__ = ("_by_id", "_gated", "_order", "_revision", "_steps")
    _by_id: Mapping[str, PlanStep]
    _gated: tuple[str, ...]
    _order: tuple[str, ...]
    _revision: int
    _steps: tuple[PlanStep, ...]

    def __init__(self, steps: Iterable[PlanStep], *, revision: int = 1) -> None:
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PlanError(f"revision must be an integer >= 1, got {revision!r}")
        items: list[PlanStep] = []
        for step in steps:
            if not isinstance(step, PlanStep):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise PlanError(f"steps must be PlanStep objects, got {type(step).__name__}")
            items.append(step)
            if len(items) > MAX_PLAN_STEPS:
                raise PlanError(f"a plan has at most {MAX_PLAN_STEPS} steps", step_id=step.id)
        if not items:
            raise PlanError("a plan needs at least one step")
        by_id: dict[str, PlanStep] = {}
        for step in items:
            if step.id in by_id:
                raise PlanError("two steps have this ID; step IDs must be unique", step_id=step.id)
            by_id[step.id] = step
        for step in items:
            for dep in step.depends_on:
                if dep not in by_id:
                    raise PlanError(f"depends on {dep!r}, which is not a step of the plan", step_id=step.id)
        try:
            order = topological_order([s.id for s in items], [s.depends_on for s in items])
        except CycleError as cycle:
            raise PlanError(f"the dependencies form a cycle: {cycle}", step_id=cycle.path[0]) from None
        object.__setattr__(self, "_steps", tuple(items))
        object.__setattr__(self, "_revision", revision)
        object.__setattr__(self, "_order", tuple(order))
        object.__setattr__(self, "_by_id", MappingProxyType(by_id))
        object.__setattr__(self, "_gated", tuple(s.id for s in items if s.requires_approval))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Plan is immutable; use plan.revise(steps) for a new revision")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Plan is immutable")

    @property
    def steps(self) -> tuple[PlanStep, ...]:
        """The steps in declaration order."""
        return self._steps

    @property
    def revision(self) -> int:
        """The revision number (1 for a new plan, one more for each `revise`)."""
        return self._revision

    @property
    def order(self) -> tuple[str, ...]:
        """Step IDs in execution order: dependencies first, ties in declaration order."""
        return self._order

    @property
    def gated(self) -> tuple[str, ...]:
        """IDs of the steps that require approval, in declaration order."""
        return self._gated

    def step(self, step_id: str) -> PlanStep:
        """The step with this ID (`KeyError` if there is none)."""
        return self._by_id[step_id]

    def revise(self, steps: Iterable[PlanStep]) -> Plan:
        """A complete replacement plan with `revision + 1`; this plan is unchanged."""
        return Plan(steps, revision=self._revision + 1)

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[PlanStep]:
        return iter(self._steps)

    def __repr__(self) -> str:
        return f"Plan(revision={self._revision}, steps={[s.id for s in self._steps]})"


class StepContext(Generic[DepsT]):
    """What a running step knows: its plan and revision, earlier outputs, and the shared run control."""

    __slots__ = (
        "cancel_scope",
        "deadline",
        "deps",
        "outputs",
        "plan",
        "run_id",
        "scope",
        "step",
        "trace",
        "usage",
    )

    def __init__(
        self,
        *,
        plan: Plan,
        step: PlanStep,
        outputs: Mapping[str, Any],
        deadline: float | None,
        cancel_scope: anyio.CancelScope,
        trace: str | None,
        scope: Scope | None,
        deps: DepsT,
        run_id: str,
    ) -> None:
        self.plan = plan
        """The plan being run."""
        self.step = step
        """The step being run."""
        self.outputs = outputs
        """Outputs of the steps completed so far, by step ID (read-only)."""
        self.deadline = deadline
        """The run's absolute deadline on `anyio.current_time()`'s clock, or `None`."""
        self.cancel_scope = cancel_scope
        """The run's cancel scope: cancelling it cancels the whole plan run."""
        self.trace = trace
        """The parent trace the run was started with, if any."""
        self.scope = scope
        """The multi-agent scope nested agents run in (`run_agent` uses it), if any."""
        self.deps = deps
        """The dependencies passed to `run(deps=...)`."""
        self.run_id = run_id
        """The plan run's ID (also on every event)."""
        self.usage = RunUsage()
        """Usage this step recorded (`add_usage`, `run_agent`); summed into the outcome."""

    @property
    def revision(self) -> int:
        """The revision being run."""
        return self.plan.revision

    def add_usage(self, usage: RunUsage) -> None:
        """Count usage of work the step did itself (for example a model call outside `run_agent`)."""
        self.usage = self.usage + usage

    async def run_agent(
        self, agent: Agent[Any, Any], prompt: Any = None, **options: Any
    ) -> AgentRunResult[Any]:
        """Run a nested agent under this run's deadline (and scope, as a delegate) and count its usage.

        With a `scope`, the agent runs through `scope.delegate`, so the session's cancellation,
        deadline, run and usage limits apply and its usage joins the session's total too.
        """
        try:
            if self.scope is not None:
                result = await self.scope.delegate(
                    agent, prompt, deps=options.pop("deps", self.deps), **options
                )
            else:
                if self.deadline is not None:
                    remaining = self.deadline - anyio.current_time()
                    given = options.pop("timeout", None)
                    options["timeout"] = remaining if given is None else min(given, remaining)
                result = await agent.run(prompt, deps=options.pop("deps", self.deps), **options)
        except Exception as exc:
            state = run_state_of(exc)
            if state is not None:
                self.add_usage(state.usage)
            raise
        self.add_usage(result.usage)
        return result


class PlanOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """A completed plan run: every step's output and the aggregate usage."""

    plan: Plan
    """The revision that ran."""
    outputs: Mapping[str, Any]
    """Each step's output by step ID, in execution order (read-only)."""
    order: tuple[str, ...]
    """The order the steps ran in."""
    advice: tuple[Advice, ...]
    """What the advisors said before execution."""
    usage: RunUsage
    """Usage the steps recorded, summed."""
    run_id: str
    """The run's ID."""

    @property
    def revision(self) -> int:
        """The revision that ran."""
        return self.plan.revision


class PlanPaused(msgspec.Struct, frozen=True, kw_only=True):
    """A run that needs approval decisions; nothing executed. Run again with `decisions=`."""

    plan: Plan
    """The revision waiting for decisions."""
    pending: tuple[str, ...]
    """Every gated step of the plan, in declaration order (decide all of them)."""
    advice: tuple[Advice, ...]
    """What the advisors said."""
    run_id: str
    """The run's ID."""

    @property
    def revision(self) -> int:
        """The revision waiting for decisions."""
        return self.plan.revision


async def notify(observer: Observer | None, event: PlanEvent) -> None:
    """Deliver one event: inline for a sync observer, awaited for an async one."""
    if observer is None:
        return
    result = observer(event)
    if inspect.isawaitable(result):
        await result


def _decision_kind(plan: Plan, step_id: str, decision: Any) -> tuple[str, str | None]:
    if decision is True or isinstance(decision, Approved):
        if isinstance(decision, Approved) and decision.override_args is not None:
            raise UserError(
                f"plan step {step_id!r}: plan steps take no arguments, so Approved(override_args=...) cannot apply"
            )
        return "approved", None
    if decision is False:
        return "denied", None
    if isinstance(decision, Denied):
        return "denied", decision.message
    raise UserError(
        f"the decision for plan step {step_id!r} must be True, False, Approved() or Denied(...), got {decision!r}"
    )


def effective_deadline(deadline: float | None, timeout: float | None, scope: Scope | None) -> float | None:
    """The earliest of an absolute deadline, `timeout` from now and the scope's deadlines."""
    if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
        raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}")
    candidates: list[float] = []
    if deadline is not None:
        candidates.append(deadline)
    if timeout is not None:
        candidates.append(anyio.current_time() + timeout)
    if scope is not None:
        candidates.extend(d for d in (scope.deadline, scope.session.deadline) if d is not None)
    return min(candidates) if candidates else None


async def run(
    plan: Plan,
    *,
    decisions: Mapping[str, Decision] | None = None,
    advisors: Sequence[Advisor] = (),
    observer: Observer | None = None,
    deadline: float | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 - tightens the plan's deadline, enforced by its cancel scope
    scope: Scope | None = None,
    trace: str | None = None,
    deps: Any = None,
) -> PlanOutcome | PlanPaused:
    """Run one plan revision: advice, approval gates, then every step in dependency order.

    1. Observers receive `plan_revised` for a revision above 1, before anything else.
    2. Advisors run in order under the shared deadline; each returns bounded advice.
    3. Approval gates are evaluated before any step runs: an explicit denial raises `PlanDenied`;
       a missing decision returns `PlanPaused` listing every gated step. Nothing has executed.
    4. Steps run one at a time in `plan.order`; a step's exception ends the run and propagates
       unchanged (observers receive `failed` first).

    `deadline` is absolute on `anyio.current_time()`'s clock; `timeout` (seconds) and the scope's
    deadlines tighten it; when it passes, the running step is cancelled and `PlanTimeoutError` is
    raised.
    """
    if not isinstance(plan, Plan):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"run() needs a Plan, got {type(plan).__name__}")
    if len(advisors) > MAX_ADVISORS:
        raise UserError(f"run() takes at most {MAX_ADVISORS} advisors, got {len(advisors)}")
    decided = dict(decisions or {})
    for step_id in decided:
        if step_id not in plan.gated:
            known = "is not a step of the plan" if step_id not in plan.order else "does not require approval"
            raise UserError(f"a decision was given for plan step {step_id!r}, which {known}")
    kinds = {step_id: _decision_kind(plan, step_id, d) for step_id, d in decided.items()}
    run_id = os.urandom(8).hex()
    revision = plan.revision
    end = effective_deadline(deadline, timeout, scope)
    outputs: dict[str, Any] = {}
    advice: list[Advice] = []
    usage = RunUsage()
    paused: PlanPaused | None = None
    with anyio.CancelScope(deadline=math.inf if end is None else end) as cancel_scope:
        if revision > 1:
            await notify(
                observer,
                PlanRevisedEvent(run_id=run_id, revision=revision, trace=trace, step_ids=tuple(plan.order)),
            )
        for number, advisor in enumerate(advisors, 1):
            text = await call_user(advisor, plan)
            if text is None or text == "":
                continue
            if not isinstance(text, str):
                raise UserError(
                    f"advisor {callable_name(advisor, str(number))!r} returned {type(text).__name__}, not str"
                )
            item = Advice(
                advisor=callable_name(advisor, f"advisor-{number}"),
                text=text[:MAX_ADVICE_CHARS],
                truncated=len(text) > MAX_ADVICE_CHARS,
            )
            advice.append(item)
            await notify(observer, AdviceEvent(run_id=run_id, revision=revision, trace=trace, advice=item))
        for step_id in plan.gated:
            kind = kinds.get(step_id, ("pending", None))[0]
            await notify(
                observer,
                ApprovalEvent(run_id=run_id, revision=revision, trace=trace, step_id=step_id, decision=kind),  # pyright: ignore[reportArgumentType]
            )
        denied = next((s for s in plan.gated if kinds.get(s, ("", None))[0] == "denied"), None)
        if denied is not None:
            raise PlanDenied(denied, kinds[denied][1])
        if any(s not in kinds for s in plan.gated):
            paused = PlanPaused(plan=plan, pending=plan.gated, advice=tuple(advice), run_id=run_id)
        else:
            view = MappingProxyType(outputs)
            for step_id in plan.order:
                step = plan.step(step_id)
                ctx = StepContext(
                    plan=plan,
                    step=step,
                    outputs=view,
                    deadline=end,
                    cancel_scope=cancel_scope,
                    trace=trace,
                    scope=scope,
                    deps=deps,
                    run_id=run_id,
                )
                await notify(
                    observer, StepStartEvent(run_id=run_id, revision=revision, trace=trace, step_id=step_id)
                )
                try:
                    output = await call_user(step.run, ctx)
                except Exception as exc:
                    usage = usage + ctx.usage
                    exc.add_note(f"plan step {step_id!r} (revision {revision}) failed")
                    await notify(
                        observer,
                        PlanFailedEvent(
                            run_id=run_id,
                            revision=revision,
                            trace=trace,
                            step_id=step_id,
                            error=describe_error(exc),
                        ),
                    )
                    raise
                usage = usage + ctx.usage
                outputs[step_id] = output
                await notify(
                    observer,
                    StepEndEvent(
                        run_id=run_id, revision=revision, trace=trace, step_id=step_id, output=output
                    ),
                )
            await notify(observer, PlanCompletedEvent(run_id=run_id, revision=revision, trace=trace))
    if cancel_scope.cancelled_caught:
        if end is None or anyio.current_time() < end:
            raise RunCancelledError(
                f"the plan run was cancelled through its cancel scope (revision {revision})"
            )
        error = PlanTimeoutError(
            f"the plan's deadline passed (revision {revision}); the running step was cancelled"
        )
        await notify(
            observer,
            PlanFailedEvent(run_id=run_id, revision=revision, trace=trace, error=describe_error(error)),
        )
        raise error
    if paused is not None:
        return paused
    return PlanOutcome(
        plan=plan,
        outputs=MappingProxyType(outputs),
        order=plan.order,
        advice=tuple(advice),
        usage=usage,
        run_id=run_id,
    )
