"""Typed graphs: steps, decisions and bounded fan-outs over one typed value, with agent nodes,
fingerprinted snapshots and Mermaid pictures.

```python
from ferrule.graph import DecisionResult, GraphBuilder

g = GraphBuilder[None, None, int, int, str]()
g.start(lambda ctx, n: n)
g.step("double", lambda ctx, n: n * 2)
g.decision("big", lambda ctx, n: DecisionResult("yes" if n > 100 else "no", n))
g.end(lambda ctx, n: f"{n}")
g.entry("double")
g.connect("double", "big")
g.branch("big", "no", "double")
g.branch_finish("big", "yes")
graph = g.build()
assert await graph.run(3) == "192"
```

`GraphBuilder[State, Deps, Input, Value, Output]` registers the callbacks (sync or async) and
routes; `build()` refuses every malformed definition with a `GraphDefinitionError` naming the node.
`Graph.run` runs to the end; `Graph.iter` returns a `GraphRun` advanced by `await run.next()`.
Agent nodes are in `ferrule.graph.agent`.
"""

from __future__ import annotations

from ._builder import FanOutMode, GraphBuilder
from ._errors import (
    DefinitionLimitError,
    DuplicateBranchError,
    DuplicateNodeError,
    FanOutLimitExceeded,
    GraphCancelledError,
    GraphDefinitionError,
    GraphError,
    GraphInterrupted,
    GraphOptionsError,
    GraphRunError,
    GraphRunStateError,
    GraphStepLimitExceeded,
    GraphVisualizationTooLarge,
    IncompleteGraphError,
    InvalidFanOutError,
    InvalidMetadataError,
    InvalidNodeNameError,
    InvalidRouteError,
    MissingRouteError,
    SnapshotDefinitionError,
    SnapshotError,
    SnapshotFormatError,
    SnapshotLimitError,
    SnapshotMigrationError,
    SnapshotNodeError,
    SnapshotPayloadVersionError,
    SnapshotsDisabledError,
    SnapshotStateError,
    SnapshotVersionError,
    StepFailed,
    UnknownNodeError,
    UnmatchedRouteError,
    UnreachableNodeError,
)
from ._fanout import Emitter
from ._graph import Graph, GraphRun
from ._limits import GraphLimits
from ._snapshot import SNAPSHOT_FORMAT, SNAPSHOT_VERSION, JsonCodec, SnapshotCodec
from ._types import (
    DecisionResult,
    EdgeMetadata,
    End,
    EventSink,
    GraphContext,
    GraphEvent,
    GraphEventKind,
    Interrupt,
    Interrupted,
    Join,
    NextNode,
    NodeMetadata,
    ParallelBranch,
    RunOptions,
    SourceLocation,
)
from ._visual import (
    VISUALIZATION_FORMAT_VERSION,
    MermaidDirection,
    Visualization,
    VisualizationEdge,
    VisualizationNode,
    VisualizationNodeId,
    VisualizationNodeKind,
    escape_mermaid,
)

__version__ = "0.1.0"

__all__ = [
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_VERSION",
    "VISUALIZATION_FORMAT_VERSION",
    "DecisionResult",
    "DefinitionLimitError",
    "DuplicateBranchError",
    "DuplicateNodeError",
    "EdgeMetadata",
    "Emitter",
    "End",
    "EventSink",
    "FanOutLimitExceeded",
    "FanOutMode",
    "Graph",
    "GraphBuilder",
    "GraphCancelledError",
    "GraphContext",
    "GraphDefinitionError",
    "GraphError",
    "GraphEvent",
    "GraphEventKind",
    "GraphInterrupted",
    "GraphLimits",
    "GraphOptionsError",
    "GraphRun",
    "GraphRunError",
    "GraphRunStateError",
    "GraphStepLimitExceeded",
    "GraphVisualizationTooLarge",
    "IncompleteGraphError",
    "Interrupt",
    "Interrupted",
    "InvalidFanOutError",
    "InvalidMetadataError",
    "InvalidNodeNameError",
    "InvalidRouteError",
    "Join",
    "JsonCodec",
    "MermaidDirection",
    "MissingRouteError",
    "NextNode",
    "NodeMetadata",
    "ParallelBranch",
    "RunOptions",
    "SnapshotCodec",
    "SnapshotDefinitionError",
    "SnapshotError",
    "SnapshotFormatError",
    "SnapshotLimitError",
    "SnapshotMigrationError",
    "SnapshotNodeError",
    "SnapshotPayloadVersionError",
    "SnapshotStateError",
    "SnapshotVersionError",
    "SnapshotsDisabledError",
    "SourceLocation",
    "StepFailed",
    "UnknownNodeError",
    "UnmatchedRouteError",
    "UnreachableNodeError",
    "Visualization",
    "VisualizationEdge",
    "VisualizationNode",
    "VisualizationNodeId",
    "VisualizationNodeKind",
    "escape_mermaid",
    "__version__",
]
