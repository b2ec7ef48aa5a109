"""The compiled node every graph module reads, the route it is built from, and `GraphShape`: what the
snapshot and picture modules read of a compiled `Graph` (named here so they need not import it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Literal
from typing import Protocol

from ._limits import GraphLimits
from ._types import EdgeMetadata
from ._types import Join
from ._types import NextNode
from ._types import NodeMetadata
from ._types import ParallelBranch
from ._types import is_async_callable

FanOutMode = Literal["broadcast", "map"]
"""`broadcast`: every branch gets the current value; `map`: every branch gets every emitted item."""

STEP = 0
DECISION = 1
FAN_OUT = 2
END = -1
"""The route target index of the end callback."""

KIND_NAMES = ("step", "decision", "fan_out")


class Route:
    """One registered route of a node: its branch name (decisions), target name and edge metadata."""

    __slots__ = ("branch", "metadata", "target")

    def __init__(self, branch: str | None, target: str | None, metadata: EdgeMetadata | None) -> None:
        self.branch = branch
        self.target = target  # None: the end callback
        self.metadata = metadata


class Node:
    """One compiled node: what the runner reads per step (kept flat, built once)."""

    __slots__ = (
        "branch_targets",
        "branches",
        "dispose",
        "fn",
        "index",
        "is_async",
        "join",
        "kind",
        "map_async",
        "map_fn",
        "marker",
        "metadata",
        "mode",
        "name",
        "route_defs",
        "target",
    )

    def __init__(self, kind: int, name: str, index: int, fn: Any, metadata: NodeMetadata | None) -> None:
        self.kind = kind
        self.name = name
        self.index = index
        self.fn = fn
        self.is_async = is_async_callable(fn) if fn is not None else False
        self.metadata = metadata
        self.marker = NextNode(name, index)
        self.target = END
        self.branch_targets: dict[str, int] = {}
        self.route_defs: list[Route] = []
        self.mode: FanOutMode = "broadcast"
        self.branches: tuple[ParallelBranch[Any, Any, Any, Any], ...] = ()
        self.join: Join[Any, Any] | None = None
        self.map_fn: Any = None
        self.map_async = False
        self.dispose: Callable[[Any], None] | None = None


class GraphShape(Protocol):
    """The parts of a compiled `Graph` its snapshots, fingerprint and pictures are made from."""

    @property
    def nodes(self) -> tuple[Node, ...]:
        """The compiled nodes in definition order."""
        ...

    @property
    def entry(self) -> int:
        """The entry node's index."""
        ...

    @property
    def limits(self) -> GraphLimits:
        """The limits it was built with."""
        ...

    @property
    def definition_id(self) -> str | None:
        """The identity snapshots are bound to."""
        ...

    @property
    def types(self) -> tuple[Any, ...]:
        """The type parameters (state, deps, input, value, output)."""
        ...

    @property
    def builder(self) -> object:
        """The builder it came from (for its type parameters)."""
        ...

    @property
    def start_metadata(self) -> NodeMetadata | None:
        """The start callback's metadata."""
        ...

    @property
    def end_metadata(self) -> NodeMetadata | None:
        """The end callback's metadata."""
        ...

    @property
    def fingerprint(self) -> str:
        """The SHA-256 (hex) of the definition."""
        ...
