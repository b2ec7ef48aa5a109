"""Build-time checks (A-01 … A-03, A-06, A-15 definition limits, D-01, D-02)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ferrule.graph import DecisionResult
from ferrule.graph import DefinitionLimitError
from ferrule.graph import DuplicateBranchError
from ferrule.graph import DuplicateNodeError
from ferrule.graph import EdgeMetadata
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import GraphDefinitionError
from ferrule.graph import GraphLimits
from ferrule.graph import IncompleteGraphError
from ferrule.graph import InvalidFanOutError
from ferrule.graph import InvalidMetadataError
from ferrule.graph import InvalidNodeNameError
from ferrule.graph import InvalidRouteError
from ferrule.graph import Join
from ferrule.graph import MissingRouteError
from ferrule.graph import NodeMetadata
from ferrule.graph import ParallelBranch
from ferrule.graph import SourceLocation
from ferrule.graph import UnknownNodeError
from ferrule.graph import UnreachableNodeError

from ._support import chain

Ctx = GraphContext[None, None]


def inc(ctx: Ctx, n: int) -> int:
    return n + 1


def choose(ctx: Ctx, n: int) -> DecisionResult[int]:
    return DecisionResult("done", n)


def skeleton() -> GraphBuilder[None, None, int, int, int]:
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.end(lambda ctx, n: n)
    return g


def linear(count: int) -> GraphBuilder[None, None, int, int, int]:
    g = skeleton()
    names = [f"s{i}" for i in range(count)]
    for name in names:
        g.step(name, inc)
    chain(g, *names)
    return g


def test_a_valid_graph_builds_and_is_reusable() -> None:
    graph = linear(3).build()
    assert [n.name for n in graph.nodes] == ["s0", "s1", "s2"]
    assert graph.nodes[graph.entry].name == "s0"
    assert graph.node_index("s2") == 2


B = GraphBuilder[None, None, int, int, int]
MUTATIONS: list[tuple[Callable[[B], object], type[Exception], str | None]] = [
    (lambda g: g.step("s0", inc), DuplicateNodeError, "s0"),
    (lambda g: g.step("", inc), InvalidNodeNameError, None),
    (lambda g: g.step("has space", inc), InvalidNodeNameError, "has space"),
    (lambda g: g.step("9lives", inc), InvalidNodeNameError, "9lives"),
    (lambda g: g.step("naïve", inc), InvalidNodeNameError, "naïve"),
    (lambda g: g.branch("s0", "x", "s1"), InvalidRouteError, "s0"),
    (lambda g: g.connect("s0", "s1"), InvalidRouteError, "s0"),
    (lambda g: g.connect("s2", "nowhere"), UnknownNodeError, "s2"),
    (lambda g: g.connect("ghost", "s1"), UnknownNodeError, "ghost"),
    (lambda g: g.step("island", inc), MissingRouteError, "island"),
    (lambda g: g.entry("s1"), IncompleteGraphError, None),
]


@pytest.mark.parametrize(("mutate", "error", "node"), MUTATIONS)
def test_each_malformed_definition_is_refused_naming_the_node(
    mutate: Callable[[B], object], error: type[Exception], node: str | None
) -> None:
    g = linear(3)  # valid: s0 -> s1 -> s2 -> end, apart from what `mutate` adds
    mutate(g)
    with pytest.raises(error) as info:
        g.build()
    assert isinstance(info.value, GraphDefinitionError)
    assert info.value.node == node
    assert str(info.value)


def test_missing_start_end_or_entry_and_duplicates() -> None:
    g = GraphBuilder[None, None, int, int, int]()
    g.step("a", inc)
    g.finish("a")
    g.entry("a")
    with pytest.raises(IncompleteGraphError, match="start callback"):
        g.build()
    g.start(lambda ctx, n: n)
    with pytest.raises(IncompleteGraphError, match="end callback"):
        g.build()
    g.end(lambda ctx, n: n)
    g.build()
    g.end(lambda ctx, n: n)
    with pytest.raises(IncompleteGraphError, match="registered 2 times"):
        g.build()
    h = skeleton()
    h.step("a", inc)
    h.finish("a")
    with pytest.raises(IncompleteGraphError, match="entry"):
        h.build()
    h.entry("zzz")
    with pytest.raises(UnknownNodeError) as info:
        h.build()
    assert info.value.node == "zzz"
    h.entry("a")
    with pytest.raises(IncompleteGraphError, match="registered 2 times"):
        h.build()


def test_decision_rules() -> None:
    g = skeleton()
    g.step("a", inc)
    g.decision("d", choose)
    g.connect("a", "d")
    g.entry("a")
    with pytest.raises(MissingRouteError) as missing:
        g.build()
    assert missing.value.node == "d"
    g.branch_finish("d", "done")
    g.build()
    g.branch("d", "done", "a")
    with pytest.raises(DuplicateBranchError) as duplicate:
        g.build()
    assert duplicate.value.node == "d"
    h = skeleton()
    h.decision("d", choose)
    h.entry("d")
    h.finish("d")
    with pytest.raises(InvalidRouteError, match="unconditional"):
        h.build()
    k = skeleton()
    k.decision("d", choose)
    k.entry("d")
    k.branch_finish("d", "bad name")
    with pytest.raises(InvalidNodeNameError):
        k.build()


def test_a_step_with_two_routes_is_refused() -> None:
    g = linear(2)
    g.finish("s0")
    with pytest.raises(InvalidRouteError, match="exactly one") as info:
        g.build()
    assert info.value.node == "s0"


def test_unreachable_nodes_are_refused() -> None:
    g = linear(2)
    g.step("orphan", inc)
    g.connect("orphan", "s1")
    with pytest.raises(UnreachableNodeError) as info:
        g.build()
    assert info.value.node == "orphan"


def test_cycles_are_allowed_and_nodes_behind_a_cycle_are_reachable() -> None:
    g = skeleton()
    g.step("a", inc)
    g.decision("d", choose)
    g.step("b", inc)
    g.connect("a", "d")
    g.branch("d", "again", "a")
    g.branch("d", "done", "b")
    g.finish("b")
    g.entry("a")
    assert len(g.build().nodes) == 3


def total(acc: int, result: int) -> int:
    return acc + result


def fan_out_builder(**overrides: Any) -> GraphBuilder[None, None, int, int, int]:
    g = skeleton()
    spec: dict[str, Any] = {
        "mode": "broadcast",
        "branches": [ParallelBranch("x", inc)],
        "join": Join(lambda: 0, total),
    }
    spec.update(overrides)
    g.fan_out("f", **spec)
    g.finish("f")
    g.entry("f")
    return g


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"mode": "scatter"}, InvalidFanOutError, "mode"),
        ({"mode": "map"}, InvalidFanOutError, "map="),
        ({"map": inc}, InvalidFanOutError, "only used with mode='map'"),
        ({"branches": []}, InvalidFanOutError, "no branches"),
        (
            {"branches": [ParallelBranch("x", inc), ParallelBranch("x", inc)]},
            DuplicateNodeError,
            "two branches",
        ),
        ({"branches": [ParallelBranch("bad name", inc)]}, InvalidNodeNameError, "parallel branch"),
        ({"branches": ["not a branch"]}, InvalidFanOutError, "ParallelBranch"),
        ({"join": "nope"}, InvalidFanOutError, "Join"),
        ({"dispose": 3}, InvalidFanOutError, "dispose"),
    ],
)
def test_malformed_fan_outs(overrides: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        fan_out_builder(**overrides).build()
    assert getattr(info.value, "node", None) == "f"


def test_fan_out_routes_like_a_step() -> None:
    g = fan_out_builder()
    g.branch("f", "b", "f")
    with pytest.raises(InvalidRouteError, match="named branches"):
        g.build()


# --- definition limits: exactly at the limit builds, one past does not (A-15) -------------------


def test_max_nodes_exact_and_one_past() -> None:
    linear(5).build(limits=GraphLimits(max_nodes=5))
    with pytest.raises(DefinitionLimitError, match="max_nodes=4"):
        linear(5).build(limits=GraphLimits(max_nodes=4))


def test_max_routes_exact_and_one_past() -> None:
    linear(5).build(limits=GraphLimits(max_routes=5))
    with pytest.raises(DefinitionLimitError, match="max_routes=4"):
        linear(5).build(limits=GraphLimits(max_routes=4))


def decision_with(branches: int) -> GraphBuilder[None, None, int, int, int]:
    g = skeleton()
    g.decision("d", choose)
    g.entry("d")
    for i in range(branches):
        g.branch_finish("d", f"b{i}")
    return g


def test_max_branches_per_decision_exact_and_one_past() -> None:
    decision_with(3).build(limits=GraphLimits(max_branches_per_decision=3))
    with pytest.raises(DefinitionLimitError, match="max_branches_per_decision=2") as info:
        decision_with(3).build(limits=GraphLimits(max_branches_per_decision=2))
    assert info.value.node == "d"


def test_max_name_bytes_exact_and_one_past() -> None:
    g = skeleton()
    g.step("a" * 8, inc)
    g.finish("a" * 8)
    g.entry("a" * 8)
    g.build(limits=GraphLimits(max_name_bytes=8))
    g = skeleton()
    g.step("a" * 9, inc)
    g.finish("a" * 9)
    g.entry("a" * 9)
    with pytest.raises(InvalidNodeNameError, match="max_name_bytes=8"):
        g.build(limits=GraphLimits(max_name_bytes=8))


def test_max_parallel_branches_exact_and_one_past() -> None:
    three = [ParallelBranch(f"b{i}", inc) for i in range(3)]
    fan_out_builder(branches=three).build(limits=GraphLimits(max_parallel_branches=3))
    with pytest.raises(DefinitionLimitError, match="max_parallel_branches=2"):
        fan_out_builder(branches=three).build(limits=GraphLimits(max_parallel_branches=2))


def test_limits_must_be_positive_ints() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        GraphLimits(max_steps=0)
    with pytest.raises(ValueError, match="max_nodes"):
        GraphLimits(max_nodes=True)


# --- metadata (D-01, D-02) ----------------------------------------------------------------------


def test_metadata_is_optional_and_checked_at_build() -> None:
    g = skeleton()
    g.step(
        "a",
        inc,
        metadata=NodeMetadata(label="A", description="does a", group="G", source=SourceLocation("x.py", 3)),
    )
    g.finish("a", metadata=EdgeMetadata(label="done"))
    g.entry("a")
    g.build(limits=GraphLimits(max_metadata_bytes=6))  # "does a" is exactly 6 bytes
    with pytest.raises(InvalidMetadataError, match="max_metadata_bytes=5") as info:
        g.build(limits=GraphLimits(max_metadata_bytes=5))
    assert info.value.node == "a"


@pytest.mark.parametrize(
    "metadata",
    [
        NodeMetadata(label=""),
        NodeMetadata(description=""),
        NodeMetadata(group=""),
        NodeMetadata(source=SourceLocation("", 1)),
        NodeMetadata(source=SourceLocation("f.py", 0)),
    ],
)
def test_empty_metadata_strings_are_refused(metadata: NodeMetadata) -> None:
    g = skeleton()
    g.step("a", inc, metadata=metadata)
    g.finish("a")
    g.entry("a")
    with pytest.raises(InvalidMetadataError):
        g.build()


def test_edge_and_callback_metadata_are_checked() -> None:
    g = skeleton()
    g.step("a", inc)
    g.finish("a", metadata=EdgeMetadata(description=""))
    g.entry("a")
    with pytest.raises(InvalidMetadataError):
        g.build()
    h = GraphBuilder[None, None, int, int, int]()
    h.start(lambda ctx, n: n, metadata=NodeMetadata(label="x" * 10))
    h.end(lambda ctx, n: n)
    h.step("a", inc)
    h.finish("a")
    h.entry("a")
    with pytest.raises(InvalidMetadataError, match="start callback"):
        h.build(limits=GraphLimits(max_metadata_bytes=9))


def test_source_location_here_points_at_the_caller() -> None:
    here = SourceLocation.here()
    assert here.file.endswith("test_definition.py")
    assert here.line > 1
