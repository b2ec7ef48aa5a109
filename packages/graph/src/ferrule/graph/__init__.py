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

from ._builder import FanOutMode
from ._builder import GraphBuilder
from ._errors import DefinitionLimitError
from ._errors import DuplicateBranchError
from ._errors import DuplicateNodeError
from ._errors import FanOutLimitExceeded
from ._errors import GraphCancelledError
from ._errors import GraphDefinitionError
from ._errors import GraphError
from ._errors import GraphInterrupted
from ._errors import GraphOptionsError
from ._errors import GraphRunError
from ._errors import GraphRunStateError
from ._errors import GraphStepLimitExceeded
from ._errors import GraphVisualizationTooLarge
from ._errors import IncompleteGraphError
from ._errors import InvalidFanOutError
from ._errors import InvalidMetadataError
from ._errors import InvalidNodeNameError
from ._errors import InvalidRouteError
from ._errors import MissingRouteError
from ._errors import SnapshotDefinitionError
from ._errors import SnapshotError
from ._errors import SnapshotFormatError
from ._errors import SnapshotLimitError
from ._errors import SnapshotMigrationError
from ._errors import SnapshotNodeError
from ._errors import SnapshotPayloadVersionError
from ._errors import SnapshotsDisabledError
from ._errors import SnapshotStateError
from ._errors import SnapshotVersionError
from ._errors import StepFailed
from ._errors import UnknownNodeError
from ._errors import UnmatchedRouteError
from ._errors import UnreachableNodeError
from ._fanout import Emitter
from ._graph import Graph
from ._graph import GraphRun
from ._limits import GraphLimits
from ._snapshot import SNAPSHOT_FORMAT
from ._snapshot import SNAPSHOT_VERSION
from ._snapshot import JsonCodec
from ._snapshot import SnapshotCodec
from ._types import DecisionResult
from ._types import EdgeMetadata
from ._types import End
from ._types import EventSink
from ._types import GraphContext
from ._types import GraphEvent
from ._types import GraphEventKind
from ._types import Interrupt
from ._types import Interrupted
from ._types import Join
from ._types import NextNode
from ._types import NodeMetadata
from ._types import ParallelBranch
from ._types import RunOptions
from ._types import SourceLocation
from ._visual import VISUALIZATION_FORMAT_VERSION
from ._visual import MermaidDirection
from ._visual import Visualization
from ._visual import VisualizationEdge
from ._visual import VisualizationNode
from ._visual import VisualizationNodeId
from ._visual import VisualizationNodeKind
from ._visual import escape_mermaid

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
