"""Plans (M-01 ... M-05): immutable revisions, approval gates, advisors, dependency order, events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from ferrule.agent import Agent
from ferrule.agent import Approved
from ferrule.agent import Denied
from ferrule.agent.exceptions import RunCancelledError
from ferrule.agent.multi_agent import Session
from ferrule.agent.testing import AgentInfo
from ferrule.agent.testing import FunctionModel
from ferrule.core.errors import UserError
from ferrule.core.messages import Message
from ferrule.core.messages import ModelResponse
from ferrule.core.messages import TextPart
from ferrule.core.usage import RequestUsage
from ferrule.planning import MAX_ADVICE_CHARS
from ferrule.planning import MAX_ADVISORS
from ferrule.planning import MAX_PLAN_STEPS
from ferrule.planning import MAX_STEP_ID_CHARS
from ferrule.planning import MAX_TITLE_CHARS
from ferrule.planning import AdviceEvent
from ferrule.planning import ApprovalEvent
from ferrule.planning import Plan
from ferrule.planning import PlanCompletedEvent
from ferrule.planning import PlanDenied
from ferrule.planning import PlanError
from ferrule.planning import PlanEvent
from ferrule.planning import PlanFailedEvent
from ferrule.planning import PlanOutcome
from ferrule.planning import PlanPaused
from ferrule.planning import PlanRevisedEvent
from ferrule.planning import PlanStep
from ferrule.planning import PlanTimeoutError
from ferrule.planning import StepContext
from ferrule.planning import StepEndEvent
from ferrule.planning import StepStartEvent
from ferrule.planning import run

pytestmark = pytest.mark.anyio


def noop(ctx: StepContext[Any]) -> str:
    return ctx.step.id


def silent(plan: Plan) -> None:
    return None


def steps(*specs: tuple[str, Sequence[str]], gated: Sequence[str] = ()) -> list[PlanStep]:
    return [PlanStep(sid, f"Step {sid}", tuple(deps), sid in gated, run=noop) for sid, deps in specs]


# --- M-01: construction ---------------------------------------------------------------------------


def test_plan_is_validated_at_construction() -> None:
    with pytest.raises(PlanError, match="depends on 'x', which is not a step") as unknown:
        Plan(steps(("a", ()), ("b", ("x",))))
    assert unknown.value.step_id == "b"
    with pytest.raises(PlanError, match="step IDs must be unique") as duplicate:
        Plan(steps(("a", ()), ("a", ())))
    assert duplicate.value.step_id == "a"
    with pytest.raises(PlanError, match=r"cycle: 'a' -> 'c' -> 'b' -> 'a'") as cycle:
        Plan(steps(("a", ("c",)), ("b", ("a",)), ("c", ("b",)), ("d", ())))
    assert cycle.value.step_id == "a"
    with pytest.raises(PlanError, match="cycle"):
        Plan(steps(("a", ("a",))))
    with pytest.raises(PlanError, match="at least one step"):
        Plan([])
    with pytest.raises(PlanError, match="listed twice"):
        PlanStep("a", "A", ("b", "b"), run=noop)
    with pytest.raises(PlanError, match="non-empty title"):
        PlanStep("a", " ", run=noop)
    with pytest.raises(PlanError, match="revision must be an integer >= 1"):
        Plan(steps(("a", ())), revision=0)


def test_step_id_title_and_count_bounds_exact_and_one_past() -> None:
    PlanStep("i" * MAX_STEP_ID_CHARS, "t" * MAX_TITLE_CHARS, run=noop)
    with pytest.raises(PlanError, match=f"limit is {MAX_STEP_ID_CHARS}"):
        PlanStep("i" * (MAX_STEP_ID_CHARS + 1), "t", run=noop)
    with pytest.raises(PlanError, match=f"limit is {MAX_TITLE_CHARS}"):
        PlanStep("a", "t" * (MAX_TITLE_CHARS + 1), run=noop)
    for bad in ("", " a", "a\nb"):
        with pytest.raises(PlanError):
            PlanStep(bad, "t", run=noop)
    many = steps(*[(f"s{i}", ()) for i in range(MAX_PLAN_STEPS)])
    assert len(Plan(many)) == MAX_PLAN_STEPS
    with pytest.raises(PlanError, match=f"at most {MAX_PLAN_STEPS} steps") as past:
        Plan([*many, PlanStep("extra", "t", run=noop)])
    assert past.value.step_id == "extra"


def test_plan_is_immutable_and_revise_copies() -> None:
    first = Plan(steps(("a", ()), ("b", ("a",))))
    with pytest.raises(AttributeError, match="immutable"):
        first.revision = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.steps[0].id = "z"  # type: ignore[misc]
    second = first.revise(steps(("a", ()), ("c", ("a",))))
    assert (first.revision, second.revision) == (1, 2)
    assert [s.id for s in first.steps] == ["a", "b"]
    assert [s.id for s in second.steps] == ["a", "c"]
    assert second.revise(steps(("z", ()))).revision == 3
    with pytest.raises(PlanError):
        first.revise(steps(("a", ("a",))))
    assert first.revision == 1


# --- M-02 / M-03 / M-05: run ------------------------------------------------------------------------


async def test_steps_run_in_dependency_order_with_ties_by_declaration() -> None:
    order: list[str] = []

    async def record(ctx: StepContext[Any]) -> dict[str, Any]:
        order.append(ctx.step.id)
        return {"id": ctx.step.id, "seen": sorted(ctx.outputs)}

    plan = Plan(
        [
            PlanStep("report", "Report", ("b", "a"), run=record),
            PlanStep("b", "B", ("root",), run=record),
            PlanStep("a", "A", ("root",), run=record),
            PlanStep("root", "Root", run=record),
            PlanStep("solo", "Solo", run=record),
        ]
    )
    # Whenever several steps are ready, the earliest declared one runs first.
    assert plan.order == ("root", "b", "a", "report", "solo")
    outcome = await run(plan)
    assert isinstance(outcome, PlanOutcome)
    assert order == list(plan.order)
    assert list(outcome.outputs) == list(plan.order)
    assert outcome.outputs["report"] == {"id": "report", "seen": ["a", "b", "root"]}
    with pytest.raises(TypeError):
        outcome.outputs["x"] = 1  # type: ignore[index]


async def test_missing_decisions_pause_listing_every_gated_step_and_nothing_runs() -> None:
    ran: list[str] = []

    def side_effect(ctx: StepContext[Any]) -> None:
        ran.append(ctx.step.id)

    plan = Plan(
        [
            PlanStep("read", "Read", run=side_effect),
            PlanStep("pay", "Pay", ("read",), True, run=side_effect),
            PlanStep("mail", "Mail", ("pay",), True, run=side_effect),
        ]
    )
    events: list[PlanEvent] = []
    paused = await run(plan, decisions={"pay": True}, observer=events.append)
    assert isinstance(paused, PlanPaused)
    assert paused.pending == ("pay", "mail")
    assert ran == []
    assert [(e.step_id, e.decision) for e in events if isinstance(e, ApprovalEvent)] == [
        ("pay", "approved"),
        ("mail", "pending"),
    ]
    assert isinstance(await run(plan), PlanPaused)
    outcome = await run(plan, decisions={"pay": Approved(), "mail": True})
    assert isinstance(outcome, PlanOutcome)
    assert ran == ["read", "pay", "mail"]


async def test_explicit_denial_raises_before_anything_runs() -> None:
    ran: list[str] = []
    plan = Plan(
        [PlanStep("a", "A", run=lambda ctx: ran.append("a")), PlanStep("b", "B", ("a",), True, run=noop)]
    )
    with pytest.raises(PlanDenied, match="'b' was denied: not today") as denied:
        await run(plan, decisions={"b": Denied(message="not today")})
    assert denied.value.step_id == "b"
    with pytest.raises(PlanDenied):
        await run(plan, decisions={"b": False})
    assert ran == []


async def test_bad_decisions_are_refused() -> None:
    plan = Plan(steps(("a", ()), ("b", ()), gated=["b"]))
    with pytest.raises(UserError, match="does not require approval"):
        await run(plan, decisions={"a": True})
    with pytest.raises(UserError, match="not a step of the plan"):
        await run(plan, decisions={"zz": True})
    with pytest.raises(UserError, match="must be True, False"):
        await run(plan, decisions={"b": "yes"})  # type: ignore[dict-item]
    with pytest.raises(UserError, match="override_args"):
        await run(plan, decisions={"b": Approved(override_args={"x": 1})})


async def test_revised_event_comes_before_advice_and_execution_and_events_are_trace_linked() -> None:
    events: list[PlanEvent] = []

    async def observer(event: PlanEvent) -> None:
        events.append(event)

    def advisor(plan: Plan) -> str:
        assert not [e for e in events if isinstance(e, StepStartEvent)]
        return f"revision {plan.revision} looks fine"

    first = Plan(steps(("a", ())))
    second = first.revise(steps(("a", ()), ("b", ("a",))))
    outcome = await run(second, advisors=[advisor], observer=observer, trace="00-abc-def-01")
    assert isinstance(outcome, PlanOutcome)
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "PlanRevisedEvent",
        "AdviceEvent",
        "StepStartEvent",
        "StepEndEvent",
        "StepStartEvent",
        "StepEndEvent",
        "PlanCompletedEvent",
    ]
    revised = events[0]
    assert isinstance(revised, PlanRevisedEvent)
    assert (revised.revision, revised.step_ids) == (2, ("a", "b"))
    assert {e.trace for e in events} == {"00-abc-def-01"}
    assert {e.run_id for e in events} == {outcome.run_id}
    assert {e.revision for e in events} == {2}
    assert [e.output for e in events if isinstance(e, StepEndEvent)] == ["a", "b"]
    assert outcome.advice[0].text == "revision 2 looks fine"
    events.clear()
    await run(first, observer=observer)
    assert not any(isinstance(e, PlanRevisedEvent) for e in events)
    assert isinstance(events[-1], PlanCompletedEvent)


async def test_advice_is_bounded_and_advisors_are_counted() -> None:
    exact = "x" * MAX_ADVICE_CHARS
    events: list[PlanEvent] = []
    outcome = await run(
        Plan(steps(("a", ()))),
        advisors=[lambda p: exact, lambda p: exact + "y", lambda p: None, lambda p: ""],
        observer=events.append,
    )
    assert isinstance(outcome, PlanOutcome)
    assert [(a.text == exact, a.truncated) for a in outcome.advice] == [(True, False), (True, True)]
    assert [a.advisor for a in outcome.advice] == ["advisor-1", "advisor-2"]
    assert len([e for e in events if isinstance(e, AdviceEvent)]) == 2
    await run(Plan(steps(("a", ()))), advisors=[silent] * MAX_ADVISORS)
    with pytest.raises(UserError, match=f"at most {MAX_ADVISORS} advisors"):
        await run(Plan(steps(("a", ()))), advisors=[silent] * (MAX_ADVISORS + 1))
    with pytest.raises(UserError, match="returned int"):
        await run(Plan(steps(("a", ()))), advisors=[lambda p: 3])  # type: ignore[list-item]


async def test_advisors_run_under_the_shared_deadline() -> None:
    async def slow(plan: Plan) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    with pytest.raises(PlanTimeoutError):
        await run(Plan(steps(("a", ()))), advisors=[slow], timeout=0.05)


async def test_a_failing_step_propagates_unchanged_after_a_failed_event() -> None:
    class Broken(Exception):
        pass

    error = Broken("disk full")

    def explode(ctx: StepContext[Any]) -> None:
        raise error

    events: list[PlanEvent] = []
    plan = Plan(
        [
            PlanStep("a", "A", run=noop),
            PlanStep("b", "B", ("a",), run=explode),
            PlanStep("c", "C", ("b",), run=noop),
        ]
    )
    with pytest.raises(Broken) as raised:
        await run(plan, observer=events.append)
    assert raised.value is error
    assert "plan step 'b' (revision 1) failed" in raised.value.__notes__
    failed = events[-1]
    assert isinstance(failed, PlanFailedEvent)
    assert (failed.step_id, failed.error) == ("b", "Broken: disk full")
    assert not any(isinstance(e, StepStartEvent) and e.step_id == "c" for e in events)


async def test_deadline_cancels_the_running_step() -> None:
    reached: list[str] = []

    async def forever(ctx: StepContext[Any]) -> None:
        assert ctx.deadline is not None
        reached.append("started")
        await anyio.sleep_forever()

    events: list[PlanEvent] = []
    with pytest.raises(PlanTimeoutError, match="deadline passed"):
        await run(Plan([PlanStep("a", "A", run=forever)]), timeout=0.05, observer=events.append)
    assert reached == ["started"]
    assert isinstance(events[-1], PlanFailedEvent)
    with pytest.raises(PlanTimeoutError):
        await run(Plan([PlanStep("a", "A", run=forever)]), deadline=anyio.current_time() + 0.05)


async def test_cancelling_the_shared_cancel_scope_stops_the_run() -> None:
    async def cancel(ctx: StepContext[Any]) -> None:
        ctx.cancel_scope.cancel()
        await anyio.sleep_forever()

    with pytest.raises(RunCancelledError):
        await run(Plan([PlanStep("a", "A", run=cancel), PlanStep("b", "B", ("a",), run=noop)]))


# --- M-04: StepContext -----------------------------------------------------------------------------


def _answer(text: str) -> Agent[Any, str]:
    def reply(messages: Sequence[Message], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)], usage=RequestUsage(input_tokens=7, output_tokens=3))

    return Agent(FunctionModel(reply), name=text)


async def test_step_context_carries_plan_outputs_control_trace_scope_and_usage() -> None:
    session = Session(timeout=30)
    scope = session.root(deps={"user": "ann"})
    seen: dict[str, Any] = {}

    async def first(ctx: StepContext[Any]) -> str:
        result = await ctx.run_agent(_answer("draft"), "write")
        return result.output

    async def second(ctx: StepContext[Any]) -> str:
        seen.update(
            plan=ctx.plan,
            revision=ctx.revision,
            outputs=dict(ctx.outputs),
            deadline=ctx.deadline,
            trace=ctx.trace,
            scope=ctx.scope,
            deps=ctx.deps,
        )
        result = await ctx.run_agent(_answer("final"), "polish")
        return result.output

    plan = Plan([PlanStep("one", "One", run=first), PlanStep("two", "Two", ("one",), run=second)]).revise(
        [PlanStep("one", "One", run=first), PlanStep("two", "Two", ("one",), run=second)]
    )
    before = anyio.current_time()
    outcome = await run(plan, scope=scope, trace="t-1", deps={"user": "ann"}, timeout=20)
    assert isinstance(outcome, PlanOutcome)
    assert seen["plan"] is plan
    assert seen["revision"] == 2
    assert seen["outputs"] == {"one": "draft"}
    assert seen["trace"] == "t-1"
    assert seen["scope"] is scope
    assert seen["deps"] == {"user": "ann"}
    # The plan's own deadline (timeout=20) is tighter than the session's (30 s, fixed at its first run).
    assert before + 20 <= seen["deadline"] <= anyio.current_time() + 20
    assert session.deadline is not None
    assert seen["deadline"] < session.deadline
    assert outcome.outputs == {"one": "draft", "two": "final"}
    # Usage of nested agents: summed in the outcome and shared with the session.
    assert (outcome.usage.requests, outcome.usage.input_tokens, outcome.usage.output_tokens) == (2, 14, 6)
    assert session.usage.requests == 2
    assert [(r.transition, r.depth, r.agent_name) for r in session.records] == [
        ("delegate", 1, "draft"),
        ("delegate", 1, "final"),
    ]


async def test_session_cancellation_reaches_nested_agents() -> None:
    session = Session()
    scope = session.root()

    async def cancel_then_delegate(ctx: StepContext[Any]) -> None:
        session.cancel()
        await ctx.run_agent(_answer("never"), "go")

    with pytest.raises(RunCancelledError):
        await run(Plan([PlanStep("a", "A", run=cancel_then_delegate)]), scope=scope)
    assert session.records == []
