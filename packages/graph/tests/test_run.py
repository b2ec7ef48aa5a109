"""Running graphs (A-04, A-05, A-07, A-08, A-13, A-14, A-16) on both anyio backends."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import TypeAlias
from typing import assert_type

import anyio
import pytest

from ferrule.graph import DecisionResult
from ferrule.graph import End
from ferrule.graph import Graph
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphCancelledError
from ferrule.graph import GraphContext
from ferrule.graph import GraphEvent
from ferrule.graph import GraphLimits
from ferrule.graph import GraphOptionsError
from ferrule.graph import GraphRun
from ferrule.graph import GraphRunError
from ferrule.graph import GraphRunStateError
from ferrule.graph import GraphStepLimitExceeded
from ferrule.graph import Join
from ferrule.graph import NextNode
from ferrule.graph import ParallelBranch
from ferrule.graph import RunOptions
from ferrule.graph import UnmatchedRouteError

from ._support import chain

pytestmark = pytest.mark.anyio


@dataclass
class State:
    visits: list[str] = field(default_factory=list[str])


@dataclass
class Deps:
    step_size: int


Ctx = GraphContext[State, Deps]


def counter_graph(rounds_branch: str = "again", limits: GraphLimits | None = None):
    """start → add (async) → check (decision) → add ... → finish after `ctx.deps` rounds."""
    g = GraphBuilder[State, Deps, int, int, str]()

    def start(ctx: Ctx, n: int) -> int:
        ctx.state.visits.append("start")
        return n

    async def add(ctx: Ctx, n: int) -> int:
        ctx.state.visits.append(f"add@{ctx.step}")
        await anyio.lowlevel.checkpoint()
        return n + ctx.deps.step_size

    def check(ctx: Ctx, n: int) -> DecisionResult[int]:
        ctx.state.visits.append("check")
        return DecisionResult("done" if n >= 10 else rounds_branch, n)

    async def end(ctx: Ctx, n: int) -> str:
        return f"total={n}"

    g.start(start)
    g.step("add", add)
    g.decision("check", check)
    g.end(end)
    g.entry("add")
    g.connect("add", "check")
    g.branch("check", "again", "add")
    g.branch_finish("check", "done")
    return g.build(limits=limits)


async def test_a_loop_exits_after_n_rounds_with_typed_output() -> None:
    graph = counter_graph()
    state = State()
    output = await graph.run(4, state=state, deps=Deps(step_size=2))
    assert_type(output, str)
    assert output == "total=10"
    # 4 -> 6 -> 8 -> 10: three rounds of add + check
    assert state.visits == ["start", "add@0", "check", "add@2", "check", "add@4", "check"]


async def test_linear_graph_with_sync_and_async_steps() -> None:
    g = GraphBuilder[None, None, str, list[str], str]()
    g.start(lambda ctx, text: [text])

    async def shout(ctx: GraphContext[None, None], words: list[str]) -> list[str]:
        return [*words, words[-1].upper()]

    g.step("shout", shout)
    g.step("twice", lambda ctx, words: words + words)
    g.end(lambda ctx, words: "-".join(words))
    chain(g, "shout", "twice")
    assert await g.build().run("hi") == "hi-HI-hi-HI"


async def test_a_decision_with_two_finishing_branches() -> None:
    g = GraphBuilder[None, None, int, int, str]()
    g.start(lambda ctx, n: n)
    g.decision("sign", lambda ctx, n: DecisionResult("neg" if n < 0 else "pos", abs(n)))
    g.end(lambda ctx, n: str(n))
    g.entry("sign")
    g.branch_finish("sign", "neg")
    g.branch_finish("sign", "pos")
    graph = g.build()
    events: list[GraphEvent] = []
    assert await graph.run(-5, options=RunOptions(event_sinks=(events.append,))) == "5"
    assert await graph.run(7) == "7"
    assert [e.branch for e in events if e.kind == "decision"] == ["neg"]


async def test_iter_and_next_step_by_step() -> None:
    graph = counter_graph()
    run = await graph.iter(7, state=State(), deps=Deps(step_size=3))
    assert run.completed_steps == 0
    assert run.next_node == NextNode("add", 0)
    assert run.value == 7
    first = await run.next()
    assert first == NextNode("check", 1)
    assert run.value == 10
    assert run.completed_steps == 1
    with pytest.raises(GraphRunStateError, match="not reached the end"):
        _ = run.output
    last = await run.next()
    assert isinstance(last, End)
    assert last.output == "total=10"
    assert run.output == "total=10"
    assert run.done
    assert run.next_node is None
    assert run.completed_steps == 2
    # A finished run keeps answering with the same end.
    assert await run.next() is last


async def test_each_callback_gets_one_context_with_run_identity() -> None:
    seen: list[tuple[str, str, int]] = []
    g = GraphBuilder[State, Deps, int, int, int]()

    def record(ctx: Ctx, n: int) -> int:
        seen.append((ctx.run_id, ctx.node, ctx.step))
        return n

    g.start(lambda ctx, n: n)
    g.step("a", record)
    g.step("b", record)
    g.end(lambda ctx, n: n)
    chain(g, "a", "b")
    run = await g.build().iter(1, state=State(), deps=Deps(1), options=RunOptions(run_id="run-42"))
    assert run.run_id == "run-42"
    assert await run.run_to_end() == 1
    assert seen == [("run-42", "a", 0), ("run-42", "b", 1)]


# --- latching (A-07) ----------------------------------------------------------------------------


class Boom(Exception):
    pass


async def test_a_failure_is_latched_and_nothing_else_runs() -> None:
    calls: list[str] = []
    error = Boom("no")
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)

    def fail(ctx: GraphContext[None, None], n: int) -> int:
        calls.append("fail")
        raise error

    def after(ctx: GraphContext[None, None], n: int) -> int:
        calls.append("after")
        return n

    g.step("fail", fail)
    g.step("after", after)
    g.end(lambda ctx, n: n)
    chain(g, "fail", "after")
    run = await g.build().iter(1)
    for _ in range(3):
        with pytest.raises(Boom) as info:
            await run.next()
        assert info.value is error
    assert calls == ["fail"]
    assert run.error is error
    assert run.next_node is None


async def test_an_unmatched_branch_latches_unmatched_route() -> None:
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.decision("d", lambda ctx, n: DecisionResult("missing", n))
    g.end(lambda ctx, n: n)
    g.entry("d")
    g.branch_finish("d", "there")
    run = await g.build().iter(1)
    with pytest.raises(UnmatchedRouteError) as info:
        await run.next()
    assert (info.value.decision, info.value.branch) == ("d", "missing")
    with pytest.raises(UnmatchedRouteError) as again:
        await run.next()
    assert again.value is info.value


async def test_a_decision_must_return_a_decision_result() -> None:
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.decision("d", lambda ctx, n: "yes")  # type: ignore[arg-type,return-value]
    g.end(lambda ctx, n: n)
    g.entry("d")
    g.branch_finish("d", "yes")
    with pytest.raises(GraphRunError, match="not a DecisionResult"):
        await g.build().run(1)


Callback: TypeAlias = Callable[[GraphContext[None, None], int], Any]


def passed_on(ctx: GraphContext[None, None], n: int) -> int:
    return n


def one_step(
    step: Callback = passed_on, *, name: str = "a", start: Callback = passed_on, end: Callback = passed_on
) -> Graph[None, None, int, int, int]:
    """The graph start -> `name` -> end with these callbacks (each passes the value on unless given)."""
    g = GraphBuilder[None, None, int, int, int]()
    g.start(start)
    g.step(name, step)
    g.end(end)
    g.entry(name)
    g.finish(name)
    return g.build()


async def test_start_and_end_failures_propagate_unchanged() -> None:
    def bad_start(ctx: GraphContext[None, None], n: int) -> int:
        raise Boom("start")

    with pytest.raises(Boom, match="start"):
        await one_step(start=bad_start).run(1)

    def bad_end(ctx: GraphContext[None, None], n: int) -> int:
        raise Boom("end")

    run = await one_step(end=bad_end).iter(1)
    with pytest.raises(Boom, match="end"):
        await run.next()
    with pytest.raises(Boom, match="end"):
        await run.next()


async def cancel_once_blocked(run: GraphRun[None, None, int, int, int], started: anyio.Event) -> None:
    """Advance `run` until its callback blocks (`started`), check that a second `next()` is refused
    while it runs, then cancel it."""
    async with anyio.create_task_group() as tg:

        async def drive() -> None:
            await run.next()

        tg.start_soon(drive)
        await started.wait()
        with pytest.raises(GraphRunStateError, match="already running"):
            await run.next()
        tg.cancel_scope.cancel()


def blocking(started: anyio.Event) -> Callback:
    """A callback that sets `started`, then waits until it is cancelled."""

    async def block(ctx: GraphContext[None, None], n: int) -> int:
        started.set()
        await anyio.sleep_forever()
        return n

    return block


async def test_cancellation_in_a_node_latches_graph_cancelled() -> None:
    started = anyio.Event()
    run = await one_step(blocking(started), name="slow").iter(1)
    await cancel_once_blocked(run, started)
    with pytest.raises(GraphCancelledError, match="slow"):
        await run.next()


async def test_cancellation_in_the_end_callback_latches_graph_cancelled_naming_it() -> None:
    started = anyio.Event()
    run = await one_step(end=blocking(started)).iter(1)
    await cancel_once_blocked(run, started)
    with pytest.raises(GraphCancelledError, match="while the end callback ran") as info:
        await run.next()
    assert info.value.node is None


# --- step ceilings (A-08) -----------------------------------------------------------------------


async def test_max_steps_exact_limit_passes_and_one_less_stops_before_the_node() -> None:
    # 4 -> 10 with step 2: add, check three times = 6 steps.
    state = State()
    assert (
        await counter_graph().run(4, state=state, deps=Deps(2), options=RunOptions(max_steps=6)) == "total=10"
    )
    state = State()
    with pytest.raises(GraphStepLimitExceeded) as info:
        await counter_graph().run(4, state=state, deps=Deps(2), options=RunOptions(max_steps=5))
    assert info.value.max_steps == 5
    assert info.value.node == "check"
    assert state.visits.count("check") == 2  # the sixth node never ran


async def test_the_definition_ceiling_exact_and_one_past() -> None:
    assert (
        await counter_graph(limits=GraphLimits(max_steps=6)).run(4, state=State(), deps=Deps(2)) == "total=10"
    )
    with pytest.raises(GraphStepLimitExceeded):
        await counter_graph(limits=GraphLimits(max_steps=5)).run(4, state=State(), deps=Deps(2))


async def test_run_options_may_tighten_but_never_widen() -> None:
    graph = counter_graph(limits=GraphLimits(max_steps=6))
    await graph.run(4, state=State(), deps=Deps(2), options=RunOptions(max_steps=6))
    state = State()
    with pytest.raises(GraphOptionsError, match="widen"):
        await graph.run(4, state=state, deps=Deps(2), options=RunOptions(max_steps=7))
    assert state.visits == []  # refused before the start callback
    with pytest.raises(GraphOptionsError, match="positive"):
        await graph.run(4, state=State(), deps=Deps(2), options=RunOptions(max_steps=0))


async def test_a_cycle_is_bounded_by_max_steps() -> None:
    with pytest.raises(GraphStepLimitExceeded):
        # Always "again": the loop only ends at the ceiling.
        await counter_graph(rounds_branch="again").run(-(10**9), state=State(), deps=Deps(0))


async def test_max_concurrency_exact_and_one_past() -> None:
    graph = counter_graph(limits=GraphLimits(max_concurrency=3))
    await graph.run(4, state=State(), deps=Deps(2), options=RunOptions(max_concurrency=3))
    with pytest.raises(GraphOptionsError, match="max_concurrency=3"):
        await graph.run(4, state=State(), deps=Deps(2), options=RunOptions(max_concurrency=4))
    with pytest.raises(GraphOptionsError):
        await graph.run(4, state=State(), deps=Deps(2), options=RunOptions(max_concurrency=0))


async def test_async_event_sinks_are_refused() -> None:
    async def sink(event: GraphEvent) -> None:
        return None

    with pytest.raises(GraphOptionsError, match="synchronous"):
        await counter_graph().run(4, state=State(), deps=Deps(2), options=RunOptions(event_sinks=(sink,)))  # type: ignore[arg-type]


# --- events (A-13) ------------------------------------------------------------------------------


async def test_events_arrive_in_execution_order() -> None:
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.step("a", lambda ctx, n: n + 1)
    g.decision("d", lambda ctx, n: DecisionResult("go", n))
    g.fan_out("f", branches=[ParallelBranch("x", lambda ctx, n: n)], join=Join(lambda: 0, lambda a, r: a + r))
    g.end(lambda ctx, n: n)
    g.entry("a")
    g.connect("a", "d")
    g.branch("d", "go", "f")
    g.finish("f")
    events: list[GraphEvent] = []
    assert await g.build().run(1, options=RunOptions(event_sinks=(events.append,), run_id="r")) == 2
    assert [(e.kind, e.node, e.step) for e in events] == [
        ("run_start", None, 0),
        ("step_start", "a", 0),
        ("step_end", "a", 1),
        ("step_start", "d", 1),
        ("decision", "d", 1),
        ("step_end", "d", 2),
        ("step_start", "f", 2),
        ("fan_out_start", "f", 2),
        ("fan_out_end", "f", 2),
        ("step_end", "f", 3),
        ("run_end", None, 3),
    ]
    assert {e.run_id for e in events} == {"r"}
    assert [e.tasks for e in events if e.kind == "fan_out_end"] == [1]


async def test_failure_events_and_a_raising_sink_is_logged_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kinds: list[str] = []

    def broken(event: GraphEvent) -> None:
        raise RuntimeError("sink bug")

    def fail(ctx: GraphContext[None, None], n: int) -> int:
        raise Boom("x")

    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.step("ok", lambda ctx, n: n)
    g.step("bad", fail)
    g.end(lambda ctx, n: n)
    chain(g, "ok", "bad")
    with caplog.at_level(logging.WARNING, logger="ferrule.graph"), pytest.raises(Boom):
        await g.build().run(1, options=RunOptions(event_sinks=(broken, lambda e: kinds.append(e.kind))))
    assert kinds == ["run_start", "step_start", "step_end", "step_start", "step_error", "run_error"]
    assert "sink bug" in caplog.text


async def test_a_failing_start_callback_emits_run_start_then_run_error() -> None:
    def bad_start(ctx: GraphContext[None, None], n: int) -> int:
        raise Boom("start")

    events: list[GraphEvent] = []
    with pytest.raises(Boom, match="start"):
        await one_step(start=bad_start).iter(1, options=RunOptions(event_sinks=(events.append,), run_id="r"))
    assert [(e.kind, e.node, e.step, e.run_id) for e in events] == [
        ("run_start", None, 0, "r"),
        ("run_error", None, 0, "r"),
    ]
    assert isinstance(events[1].error, Boom)
