"""Pictures (D-03 … D-05): the Visualization data and golden Mermaid text, escaping, size cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ferrule.graph import VISUALIZATION_FORMAT_VERSION
from ferrule.graph import DecisionResult
from ferrule.graph import EdgeMetadata
from ferrule.graph import Emitter
from ferrule.graph import Graph
from ferrule.graph import GraphBuilder
from ferrule.graph import GraphContext
from ferrule.graph import GraphLimits
from ferrule.graph import GraphVisualizationTooLarge
from ferrule.graph import Join
from ferrule.graph import NodeMetadata
from ferrule.graph import ParallelBranch
from ferrule.graph import SourceLocation
from ferrule.graph import VisualizationNodeId
from ferrule.graph import escape_mermaid

GOLDEN = Path(__file__).resolve().parent / "golden" / "every_kind.mmd"

Ctx = GraphContext[None, None]


def every_kind(limits: GraphLimits | None = None) -> Graph[None, None, int, int, int]:
    g = GraphBuilder[None, None, int, int, int](definition_id="every-kind")
    g.start(lambda ctx, n: n, metadata=NodeMetadata(label="Begin", description="takes the input"))
    g.step(
        "load", lambda ctx, n: n, metadata=NodeMetadata(group="Prepare", source=SourceLocation("flow.py", 12))
    )
    g.step("clean", lambda ctx, n: n, metadata=NodeMetadata(label="Clean up", group="Prepare"))

    def split(ctx: Ctx, n: int, emit: Emitter[int]) -> None:
        emit(n)

    g.fan_out(
        "score",
        mode="map",
        map=split,
        branches=[
            ParallelBranch[None, None, int, int]("fast", lambda ctx, n: n),
            ParallelBranch[None, None, int, int]("careful", lambda ctx, n: n),
        ],
        join=Join[int, int](lambda: 0, lambda a, r: a + r),
        metadata=NodeMetadata(description="scores every item twice"),
    )
    g.decision("good", lambda ctx, n: DecisionResult("yes", n))
    g.end(lambda ctx, n: n)
    g.entry("load")
    g.connect("load", "clean")
    g.connect("clean", "score")
    g.connect("score", "good")
    g.branch("good", "no", "load", metadata=EdgeMetadata(label="try again", description="at most 3 times"))
    g.branch_finish("good", "yes")
    return g.build(limits=limits)


def test_visualization_data() -> None:
    graph = every_kind()
    view = graph.visualization()
    assert view.format_version == VISUALIZATION_FORMAT_VERSION == 1
    assert view.definition_sha256 == graph.fingerprint
    assert [(n.id.kind, n.id.name) for n in view.nodes] == [
        ("start", "start"),
        ("step", "load"),
        ("step", "clean"),
        ("fan_out", "score"),
        ("decision", "good"),
        ("end", "end"),
    ]
    assert view.nodes[0].label == "Begin"
    assert view.nodes[2].label == "Clean up"
    assert view.nodes[3].mode == "map"
    assert view.nodes[3].branches == ("fast", "careful")
    edges = [(e.source.name, e.target.name, e.branch, e.label) for e in view.edges]
    assert edges == [
        ("start", "load", None, None),
        ("load", "clean", None, None),
        ("clean", "score", None, None),
        ("score", "good", None, None),
        ("good", "load", "no", "try again"),  # the branch identity stays apart from its label
        ("good", "end", "yes", None),
    ]
    assert view.edges[-1].target == VisualizationNodeId("end", "end")
    assert graph.visualization() == view  # deterministic


def test_mermaid_matches_the_golden_file() -> None:
    text = every_kind().render_mermaid(title="Every kind", direction="LR")
    if os.environ.get("FERRULE_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
    assert text.splitlines()[3:5] == ["stateDiagram-v2", "    direction LR"]
    assert "state n3_fork <<fork>>" in text
    assert "state n3_join <<join>>" in text
    assert "state n4_choice <<choice>>" in text
    assert 'state "Prepare" as g1 {' in text


def test_edge_labels_can_be_hidden() -> None:
    text = every_kind().render_mermaid(edge_labels=False)
    assert "n4_choice --> n1\n" in text
    assert "try again" not in text.split("note")[0]
    assert text.startswith("stateDiagram-v2\n    direction TB\n")


def test_every_label_is_escaped() -> None:
    hostile = 'x"\n--> [*]\nend note\n<script>alert(1)</script>&#59;:{}\x00\x1b'
    g = GraphBuilder[None, None, int, int, int]()
    g.start(lambda ctx, n: n)
    g.step("a", lambda ctx, n: n, metadata=NodeMetadata(label=hostile, description=hostile, group=hostile))
    g.decision("d", lambda ctx, n: DecisionResult("yes", n))
    g.end(lambda ctx, n: n)
    g.entry("a")
    g.connect("a", "d", metadata=EdgeMetadata(label=hostile, description=hostile))
    g.branch_finish("d", "yes", metadata=EdgeMetadata(label=hostile))
    text = g.build().render_mermaid(title=hostile)
    body = text.split("---\n", 2)[2]
    lines = body.splitlines()
    # No line was injected: every line is one the renderer writes.
    for line in lines:
        stripped = line.strip()
        assert stripped in ("stateDiagram-v2", "direction TB", "}", "end note") or stripped.startswith(
            ("state ", "n", "[*]", "note right of ", "x#34;")
        ), line
    assert lines.count("    end note") == 2
    for forbidden in ("<script>", '"\n', "\x00", "\x1b", "&#59;"):
        assert forbidden not in body
    assert text.splitlines()[1].startswith('title: "x\\"\\n--\\u003e [*]')
    assert "\\u003cscript\\u003e" in text.splitlines()[1]


def test_escape_mermaid() -> None:
    assert escape_mermaid('a"b') == "a#34;b"
    assert escape_mermaid("a\nb") == "a#10;b"
    assert escape_mermaid("<b>") == "#60;b#62;"
    assert escape_mermaid("plain text, ok!") == "plain text, ok!"


def test_max_visualization_bytes_exact_and_one_past() -> None:
    size = len(every_kind().render_mermaid().encode())
    every_kind(GraphLimits(max_visualization_bytes=size)).render_mermaid()
    with pytest.raises(GraphVisualizationTooLarge, match=f"max_visualization_bytes={size - 1}"):
        every_kind(GraphLimits(max_visualization_bytes=size - 1)).render_mermaid()
