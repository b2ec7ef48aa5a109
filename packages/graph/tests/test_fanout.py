"""Fan-out (A-09 … A-12, A-15 fan-out limits, A-17, A-18) on both anyio backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import cast

import anyio
import pytest

from ferrule.graph import Emitter
from ferrule.graph import FanOutLimitExceeded
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import GraphLimits
from ferrule.graph import Join
from ferrule.graph import ParallelBranch
from ferrule.graph import RunOptions

pytestmark = pytest.mark.anyio

Ctx = GraphContext[None, None]


def append(acc: list[Any], result: Any) -> list[Any]:
    return [*acc, result]


def graph_with(
    *,
    mode: str = "broadcast",
    branches: list[ParallelBranch[None, None, Any, Any]],
    map_fn: Any = None,
    join: Join[Any, Any] | None = None,
    dispose: Callable[[Any], None] | None = None,
    limits: GraphLimits | None = None,
):
    g = GraphBuilder[None, None, Any, Any, Any]()
    g.start(lambda ctx, value: value)
    spec: dict[str, Any] = {"branches": branches, "join": join or Join(list, append), "dispose": dispose}
    if mode == "map":
        spec["map"] = map_fn
    g.fan_out("fan", mode=mode, **spec)  # type: ignore[call-overload]
    g.end(lambda ctx, value: value)
    g.entry("fan")
    g.finish("fan")
    return g.build(limits=limits)


def tagged(tag: str) -> ParallelBranch[None, None, Any, str]:
    return ParallelBranch(tag, lambda ctx, item: f"{tag}:{item}")


async def test_broadcast_sends_the_value_to_every_branch() -> None:
    graph = graph_with(branches=[tagged("a"), tagged("b"), tagged("c")])
    assert await graph.run(7) == ["a:7", "b:7", "c:7"]


async def test_map_is_item_major_then_branch_major() -> None:
    def emit_three(ctx: Ctx, value: int, emit: Emitter[int]) -> None:
        for i in range(3):
            emit(value + i)

    graph = graph_with(mode="map", map_fn=emit_three, branches=[tagged("a"), tagged("b")])
    assert await graph.run(10) == ["a:10", "b:10", "a:11", "b:11", "a:12", "b:12"]


async def test_an_empty_map_still_creates_the_accumulator_once() -> None:
    created: list[int] = []

    def initial() -> list[Any]:
        created.append(1)
        return ["initial"]

    reduced: list[Any] = []

    def reduce(acc: list[Any], result: Any) -> list[Any]:
        reduced.append(result)
        return [*acc, result]

    async def emit_nothing(ctx: Ctx, value: Any, emit: Emitter[Any]) -> None:
        return None

    graph = graph_with(mode="map", map_fn=emit_nothing, branches=[tagged("a")], join=Join(initial, reduce))
    assert await graph.run(1) == ["initial"]
    assert created == [1]
    assert reduced == []


async def test_emit_after_the_map_returned_is_refused() -> None:
    kept: list[Emitter[Any]] = []

    def keep(ctx: Ctx, value: Any, emit: Emitter[Any]) -> None:
        kept.append(emit)

    await graph_with(mode="map", map_fn=keep, branches=[tagged("a")]).run(1)
    with pytest.raises(Exception, match="after the map returned"):
        kept[0](2)


async def test_reducer_order_is_source_order_even_when_branches_finish_in_reverse() -> None:
    # 2 items x 2 branches = 4 tasks, all running at once (max_concurrency=4). Task i waits until
    # task i + 1 has finished, so they finish strictly in reverse source order.
    total = 4
    done = [anyio.Event() for _ in range(total)]
    finished: list[int] = []

    def branch(offset: int) -> ParallelBranch[None, None, int, int]:
        async def run(ctx: Ctx, item: int) -> int:
            index = item * 2 + offset
            if index + 1 < total:
                await done[index + 1].wait()
            finished.append(index)
            done[index].set()
            return index

        return ParallelBranch(f"b{offset}", run)

    def emit_items(ctx: Ctx, value: int, emit: Emitter[int]) -> None:
        for i in range(value):
            emit(i)

    reduced: list[int] = []

    def reduce(acc: list[int], result: int) -> list[int]:
        reduced.append(result)
        return [*acc, result]

    graph = graph_with(
        mode="map", map_fn=emit_items, branches=[branch(0), branch(1)], join=Join(list, reduce)
    )
    assert await graph.run(2, options=RunOptions(max_concurrency=4)) == [0, 1, 2, 3]
    assert finished == [3, 2, 1, 0]
    assert reduced == [0, 1, 2, 3]


async def test_concurrency_is_bounded() -> None:
    running = [0]
    peak = [0]

    async def work(ctx: Ctx, item: int) -> int:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        await anyio.sleep(0.005)
        running[0] -= 1
        return item

    def emit_items(ctx: Ctx, value: int, emit: Emitter[int]) -> None:
        for i in range(value):
            emit(i)

    graph = graph_with(mode="map", map_fn=emit_items, branches=[ParallelBranch("w", work)])
    assert await graph.run(12, options=RunOptions(max_concurrency=3)) == list(range(12))
    assert peak[0] == 3
    peak[0] = 0
    assert await graph.run(5) == list(range(5))
    assert peak[0] == 1  # the default is one task at a time


class Broken(Exception):
    pass


async def test_a_failing_branch_cancels_and_drains_its_siblings() -> None:
    drained: list[str] = []
    started = [0]

    async def sleeper(ctx: Ctx, item: Any) -> str:
        started[0] += 1
        try:
            await anyio.sleep_forever()
        finally:
            drained.append("sleeper")
        return "never"

    async def failing(ctx: Ctx, item: Any) -> str:
        await anyio.sleep(0.01)
        raise Broken("branch failed")

    graph = graph_with(branches=[ParallelBranch("sleep", sleeper), ParallelBranch("fail", failing)])
    run = await graph.iter(1, options=RunOptions(max_concurrency=2))
    with pytest.raises(Broken, match="branch failed"):
        await run.next()
    # The sibling's finally ran before next() raised: nothing is left running.
    assert drained == ["sleeper"]
    assert started[0] == 1
    with pytest.raises(Broken):  # latched
        await run.next()


async def test_after_a_failure_no_further_task_is_admitted() -> None:
    ran: list[int] = []

    async def work(ctx: Ctx, item: int) -> int:
        ran.append(item)
        if item == 1:
            raise Broken("one")
        await anyio.sleep(0.01)
        return item

    def emit_items(ctx: Ctx, value: int, emit: Emitter[int]) -> None:
        for i in range(value):
            emit(i)

    graph = graph_with(mode="map", map_fn=emit_items, branches=[ParallelBranch("w", work)])
    with pytest.raises(Broken):
        await graph.run(50, options=RunOptions(max_concurrency=2))
    assert sorted(ran) == [0, 1]  # items 2..49 were never started


# --- dispose (A-12) ------------------------------------------------------------------------------


class Resource:
    def __init__(self, name: str) -> None:
        self.name = name


def keep_first(acc: Resource, result: Resource) -> Resource:
    return acc


async def test_dispose_after_reduction_never_for_the_handed_on_accumulator() -> None:
    disposed: list[str] = []

    def emit_two(ctx: Ctx, value: Any, emit: Emitter[Resource]) -> None:
        emit(Resource("item0"))
        emit(Resource("item1"))

    def out(ctx: Ctx, item: Resource) -> Resource:
        return Resource(f"out-{item.name}")

    branch = ParallelBranch("r", out)
    join = Join(lambda: Resource("acc"), keep_first)
    graph = graph_with(
        mode="map",
        map_fn=emit_two,
        branches=[branch],
        join=join,
        dispose=lambda r: disposed.append(cast("Resource", r).name),
    )
    result = await graph.run(None)
    assert result.name == "acc"
    assert sorted(disposed) == ["item0", "item1", "out-item0", "out-item1"]


async def test_dispose_on_failure_includes_the_abandoned_accumulator(
    caplog: pytest.LogCaptureFixture,
) -> None:
    disposed: list[str] = []

    def emit_two(ctx: Ctx, value: Any, emit: Emitter[Resource]) -> None:
        emit(Resource("item0"))
        emit(Resource("item1"))

    def maybe(ctx: Ctx, item: Resource) -> Resource:
        if item.name == "item1":
            raise Broken("second")
        return Resource(f"out-{item.name}")

    def dispose(r: Resource) -> None:
        disposed.append(r.name)
        if r.name == "acc":
            raise RuntimeError("dispose bug")  # logged, never changes the failure

    graph = graph_with(
        mode="map",
        map_fn=emit_two,
        branches=[ParallelBranch("r", maybe)],
        join=Join(lambda: Resource("acc"), keep_first),
        dispose=dispose,
    )
    with pytest.raises(Broken):
        await graph.run(None)
    assert sorted(disposed) == ["acc", "item0", "item1", "out-item0"]
    assert "dispose bug" in caplog.text


async def test_a_failing_reducer_abandons_the_accumulator() -> None:
    disposed: list[str] = []

    def reduce(acc: Resource, r: Resource) -> Resource:
        raise Broken("reduce")

    graph = graph_with(
        branches=[ParallelBranch[None, None, Any, Resource]("r", lambda ctx, item: Resource("out"))],
        join=Join(lambda: Resource("acc"), reduce),
        dispose=lambda r: disposed.append(cast("Resource", r).name),
    )
    with pytest.raises(Broken, match="reduce"):
        await graph.run(None)
    assert sorted(disposed) == ["acc", "out"]


# --- fan-out limits, exactly at the limit and one past, checked before any task (A-15) ---------


def emitting(count: int, calls: list[int]) -> Any:
    def emit_items(ctx: Ctx, value: Any, emit: Emitter[int]) -> None:
        for i in range(count):
            emit(i)

    return emit_items


async def test_max_fan_out_items_exact_and_one_past() -> None:
    calls: list[int] = []
    branch = ParallelBranch[None, None, int, None]("b", lambda ctx, item: calls.append(item))
    limits = GraphLimits(max_fan_out_items=5)
    await graph_with(mode="map", map_fn=emitting(5, calls), branches=[branch], limits=limits).run(None)
    assert len(calls) == 5
    calls.clear()
    with pytest.raises(FanOutLimitExceeded, match="max_fan_out_items=5"):
        await graph_with(mode="map", map_fn=emitting(6, calls), branches=[branch], limits=limits).run(None)
    assert calls == []  # no branch task was admitted


async def test_max_fan_out_tasks_exact_and_one_past() -> None:
    calls: list[int] = []
    branches = [
        ParallelBranch[None, None, int, None](f"b{i}", lambda ctx, item: calls.append(item)) for i in range(3)
    ]
    limits = GraphLimits(max_fan_out_tasks=6)
    await graph_with(mode="map", map_fn=emitting(2, calls), branches=branches, limits=limits).run(None)
    assert len(calls) == 6
    calls.clear()
    with pytest.raises(FanOutLimitExceeded, match="max_fan_out_tasks=6"):
        await graph_with(mode="map", map_fn=emitting(3, calls), branches=branches, limits=limits).run(None)
    assert calls == []


async def test_broadcast_tasks_are_bounded_too() -> None:
    calls: list[int] = []
    branches = [
        ParallelBranch[None, None, int, None](f"b{i}", lambda ctx, item: calls.append(item)) for i in range(3)
    ]
    await graph_with(branches=branches, limits=GraphLimits(max_fan_out_tasks=3)).run(1)
    calls.clear()
    with pytest.raises(FanOutLimitExceeded):
        await graph_with(branches=branches, limits=GraphLimits(max_fan_out_tasks=2)).run(1)
    assert calls == []


async def test_cancelling_the_caller_drains_every_running_branch() -> None:
    started: list[int] = []
    drained: list[int] = []

    async def sleeper(ctx: Ctx, item: int) -> int:
        started.append(item)
        try:
            await anyio.sleep_forever()
        finally:
            drained.append(item)
        return item

    def emit_items(ctx: Ctx, value: int, emit: Emitter[int]) -> None:
        for i in range(value):
            emit(i)

    graph = graph_with(mode="map", map_fn=emit_items, branches=[ParallelBranch("s", sleeper)])
    run = await graph.iter(4, options=RunOptions(max_concurrency=4))
    with anyio.CancelScope() as scope:

        async def cancel_when_all_started() -> None:
            while len(started) < 4:
                await anyio.lowlevel.checkpoint()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_all_started)
            await run.next()
    assert sorted(drained) == [0, 1, 2, 3]
    from ferrule.graph import GraphCancelledError

    with pytest.raises(GraphCancelledError, match="fan"):
        await run.next()


async def test_anyio_cancel_scopes_work_inside_concurrent_branches() -> None:
    async def bounded(ctx: Ctx, item: int) -> str:
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep_forever()
        return "timed out" if scope.cancelled_caught else "no"

    graph = graph_with(branches=[ParallelBranch("a", bounded), ParallelBranch("b", bounded)])
    assert await graph.run(1, options=RunOptions(max_concurrency=2)) == ["timed out", "timed out"]
