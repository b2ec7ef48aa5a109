"""The exceptions of `ferrule.graph`: definition errors (raised by `build()`), run errors and
snapshot errors. Every one says what was wrong and, where it is a node's fault, which node."""

from __future__ import annotations

from typing import Any

from ferrule.core.errors import FerruleError
from ferrule.core.errors import UserError

__all__ = [
    "DefinitionLimitError",
    "DuplicateBranchError",
    "DuplicateNodeError",
    "FanOutLimitExceeded",
    "GraphCancelledError",
    "GraphDefinitionError",
    "GraphError",
    "GraphInterrupted",
    "GraphOptionsError",
    "GraphRunError",
    "GraphRunStateError",
    "GraphStepLimitExceeded",
    "GraphVisualizationTooLarge",
    "IncompleteGraphError",
    "InvalidFanOutError",
    "InvalidMetadataError",
    "InvalidNodeNameError",
    "InvalidRouteError",
    "MissingRouteError",
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
    "StepFailed",
    "UnknownNodeError",
    "UnmatchedRouteError",
    "UnreachableNodeError",
]


class GraphError(FerruleError):
    """Base class of every exception `ferrule.graph` raises on purpose."""


# --- definition ---------------------------------------------------------------------------------


class GraphDefinitionError(GraphError, UserError):
    """`GraphBuilder.build()` refused the definition; `node` names the node at fault (if one is)."""

    def __init__(self, message: str, *, node: str | None = None) -> None:
        self.node = node
        """The node the error is about, or `None` for graph-wide problems."""
        super().__init__(message)


class DuplicateNodeError(GraphDefinitionError):
    """Two nodes (or two branches of one fan-out) share a name."""


class DuplicateBranchError(GraphDefinitionError):
    """A decision registers the same branch name twice."""


class InvalidNodeNameError(GraphDefinitionError):
    """A node or branch name is empty, too long, or has characters outside `[A-Za-z0-9_.-]`."""


class InvalidRouteError(GraphDefinitionError):
    """A route does not fit its node's kind (`branch` on a step, a second route on a step, ...)."""


class MissingRouteError(GraphDefinitionError):
    """A step or fan-out has no route, or a decision has no branch."""


class UnknownNodeError(GraphDefinitionError):
    """A route or the entry names a node that was never registered."""


class IncompleteGraphError(GraphDefinitionError):
    """The start callback, the end callback or the entry is missing (or registered twice)."""


class UnreachableNodeError(GraphDefinitionError):
    """A node cannot be reached from the entry."""


class DefinitionLimitError(GraphDefinitionError):
    """The definition exceeds one of its `GraphLimits`."""


class InvalidFanOutError(GraphDefinitionError):
    """A fan-out is malformed: unknown mode, missing or unexpected `map`, no branches, an agent
    node used as a branch."""


class InvalidMetadataError(GraphDefinitionError):
    """A metadata string is empty or longer than `GraphLimits.max_metadata_bytes`."""


class GraphVisualizationTooLarge(GraphError):
    """A rendered document would exceed `GraphLimits.max_visualization_bytes`."""


# --- run ----------------------------------------------------------------------------------------


class GraphOptionsError(GraphError, UserError):
    """`RunOptions` ask for more than the graph's limits allow (raised before the start callback)."""


class GraphRunError(GraphError):
    """A run failed in the graph itself (not in an application callback)."""

    def __init__(self, message: str, *, node: str | None = None) -> None:
        self.node = node
        """The node the run was at."""
        super().__init__(message)


class GraphStepLimitExceeded(GraphRunError):
    """The run reached its step ceiling; the node past it did not run."""

    def __init__(self, message: str, *, node: str | None, max_steps: int) -> None:
        self.max_steps = max_steps
        """The effective ceiling."""
        super().__init__(message, node=node)


class UnmatchedRouteError(GraphRunError):
    """A decision returned a branch name it never registered."""

    def __init__(self, decision: str, branch: Any) -> None:
        self.decision = decision
        """The decision's name."""
        self.branch = branch
        """The branch it returned."""
        super().__init__(
            f"decision {decision!r} returned branch {branch!r}, which it does not register; "
            "add it with builder.branch(...) or builder.branch_finish(...)",
            node=decision,
        )


class FanOutLimitExceeded(GraphRunError):
    """A map emitted more items, or would start more tasks, than the limits allow."""


class GraphCancelledError(GraphRunError):
    """The run was cancelled in the middle of a node; it cannot continue."""


class GraphRunStateError(GraphError):
    """The run cannot do that now (`next()` while another `next()` runs, while interrupted, ...)."""


class StepFailed(GraphRunError):
    """An agent node failed; `phase` says where and `__cause__` is the original exception."""

    def __init__(self, node: str, phase: str, error: BaseException) -> None:
        self.phase = phase
        """`prepare`, `agent`, `stream` or `apply`."""
        self.error_type = type(error).__name__
        """The original exception's type name."""
        super().__init__(f"agent node {node!r} failed in {phase}: {self.error_type}: {error}", node=node)


class GraphInterrupted(GraphError):
    """`Graph.run` met an agent node that paused for decisions: decide them on `run`."""

    def __init__(self, run: Any) -> None:
        self.run = run
        """The paused `GraphRun`: `run.interrupt.pending`, `run.snapshot(...)`, `await run.resume(...)`."""
        node = run.interrupt.node if run.interrupt is not None else "?"
        super().__init__(
            f"the graph run paused at agent node {node!r} for decisions on deferred tool calls; "
            "use graph.iter(...) and run.resume(decisions), or snapshot error.run"
        )


# --- snapshots ----------------------------------------------------------------------------------


class SnapshotError(GraphError):
    """A snapshot cannot be written or read."""


class SnapshotsDisabledError(SnapshotError):
    """The graph has no `definition_id`, so snapshots are off."""


class SnapshotStateError(SnapshotError):
    """The run is not settled and running (a `next()` is in progress, or the run ended)."""


class SnapshotFormatError(SnapshotError):
    """The envelope is malformed: invalid JSON, unknown, duplicate or missing fields, wrong types."""


class SnapshotVersionError(SnapshotError):
    """The envelope's format version is newer than this release reads."""


class SnapshotPayloadVersionError(SnapshotError):
    """The payload version is newer than the codec's, or older without a migration."""


class SnapshotDefinitionError(SnapshotError):
    """The snapshot was written by a different graph definition (definition drift)."""


class SnapshotNodeError(SnapshotError):
    """The snapshot's next node (index and name) does not exist in this definition."""


class SnapshotLimitError(SnapshotError):
    """The snapshot or one of its payload documents exceeds a snapshot limit."""


class SnapshotMigrationError(SnapshotError):
    """A payload migration failed or returned something other than the two JSON documents."""
