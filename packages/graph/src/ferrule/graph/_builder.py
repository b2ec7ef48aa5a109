"""`GraphBuilder`: registers callbacks and routes; `build()` validates them all and compiles a `Graph`."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import Generic
from typing import Literal
from typing import cast
from typing import overload

from typing_extensions import TypeVar

from ._errors import DefinitionLimitError
from ._errors import DuplicateBranchError
from ._errors import DuplicateNodeError
from ._errors import IncompleteGraphError
from ._errors import InvalidFanOutError
from ._errors import InvalidMetadataError
from ._errors import InvalidNodeNameError
from ._errors import InvalidRouteError
from ._errors import MissingRouteError
from ._errors import UnknownNodeError
from ._errors import UnreachableNodeError
from ._limits import GraphLimits
from ._node import DECISION
from ._node import END
from ._node import FAN_OUT
from ._node import KIND_NAMES
from ._node import STEP
from ._node import FanOutMode
from ._node import Node
from ._node import Route
from ._types import DecisionResult
from ._types import EdgeMetadata
from ._types import GraphContext
from ._types import Join
from ._types import NodeMetadata
from ._types import ParallelBranch
from ._types import is_async_callable

if TYPE_CHECKING:
    from ._fanout import Emitter
    from ._graph import Graph

__all__ = ["FanOutMode", "GraphBuilder"]

StateT = TypeVar("StateT", default=None)
DepsT = TypeVar("DepsT", default=None)
InputT = TypeVar("InputT", default=None)
ValueT = TypeVar("ValueT", default=Any)
OutputT = TypeVar("OutputT", default=Any)
ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


class _Def:
    __slots__ = ("branches", "dispose", "fn", "join", "kind", "map_fn", "metadata", "mode", "name", "routes")

    def __init__(self, kind: int, name: str, fn: Any, metadata: NodeMetadata | None) -> None:
        self.kind = kind
        self.name = name
        self.fn = fn
        self.metadata = metadata
        self.routes: list[tuple[str, Route]] = []  # (how it was registered, route)
        self.mode: Any = "broadcast"
        self.branches: Sequence[Any] = ()
        self.join: Any = None
        self.map_fn: Any = None
        self.dispose: Any = None


class GraphBuilder(Generic[StateT, DepsT, InputT, ValueT, OutputT]):
    """Registers a graph: one start and one end callback, named steps, decisions and fan-outs,
    their routes and the entry node; `build()` checks everything and returns an immutable `Graph`.

    ```python
    g = GraphBuilder[State, Deps, str, int, str]()
    g.start(lambda ctx, text: len(text))
    g.step("double", lambda ctx, n: n * 2)
    g.end(lambda ctx, n: f"n={n}")
    g.entry("double")
    g.finish("double")
    graph = g.build()
    ```

    Registration calls only record; every error is raised by `build()` (a `GraphDefinitionError`
    naming the node). Set `definition_id` to enable snapshots.
    """

    def __init__(
        self,
        *,
        state_type: type[StateT] | None = None,
        deps_type: type[DepsT] | None = None,
        input_type: type[InputT] | None = None,
        value_type: type[ValueT] | None = None,
        output_type: type[OutputT] | None = None,
        definition_id: str | None = None,
    ) -> None:
        self.definition_id = definition_id
        """A stable identity of this definition; set it to enable snapshots (change it when
        callbacks or types change incompatibly)."""
        self._types: list[Any] = [state_type, deps_type, input_type, value_type, output_type]
        self._defs: list[_Def] = []
        self._starts: list[tuple[Any, NodeMetadata | None]] = []
        self._ends: list[tuple[Any, NodeMetadata | None]] = []
        self._entries: list[str] = []
        self._orphans: list[tuple[str, str, Route]] = []  # routes added to unregistered nodes

    # --- callbacks -------------------------------------------------------------------------------

    def start(
        self,
        fn: Callable[[GraphContext[StateT, DepsT], InputT], ValueT | Awaitable[ValueT]],
        *,
        metadata: NodeMetadata | None = None,
    ) -> None:
        """The start callback: `fn(ctx, input) -> value` (sync or async), run by `iter`/`run`."""
        self._starts.append((fn, metadata))

    def end(
        self,
        fn: Callable[[GraphContext[StateT, DepsT], ValueT], OutputT | Awaitable[OutputT]],
        *,
        metadata: NodeMetadata | None = None,
    ) -> None:
        """The end callback: `fn(ctx, value) -> output`, run when a route finishes."""
        self._ends.append((fn, metadata))

    def step(
        self,
        name: str,
        fn: Callable[[GraphContext[StateT, DepsT], ValueT], ValueT | Awaitable[ValueT]],
        *,
        metadata: NodeMetadata | None = None,
    ) -> str:
        """A step `fn(ctx, value) -> value` with exactly one route (`connect` or `finish`)."""
        self._defs.append(_Def(STEP, name, fn, metadata))
        return name

    def decision(
        self,
        name: str,
        fn: Callable[
            [GraphContext[StateT, DepsT], ValueT],
            DecisionResult[ValueT] | Awaitable[DecisionResult[ValueT]],
        ],
        *,
        metadata: NodeMetadata | None = None,
    ) -> str:
        """A decision `fn(ctx, value) -> DecisionResult(branch, value)` with one or more named
        branches (`branch` or `branch_finish`)."""
        self._defs.append(_Def(DECISION, name, fn, metadata))
        return name

    @overload
    def fan_out(
        self,
        name: str,
        *,
        mode: Literal["broadcast"] = "broadcast",
        branches: Sequence[ParallelBranch[StateT, DepsT, ValueT, ResultT]],
        join: Join[ValueT, ResultT],
        dispose: Callable[[Any], None] | None = None,
        metadata: NodeMetadata | None = None,
    ) -> str: ...
    @overload
    def fan_out(
        self,
        name: str,
        *,
        mode: Literal["map"],
        map: Callable[
            [GraphContext[StateT, DepsT], ValueT, Emitter[ItemT]],
            Awaitable[None] | None,
        ],
        branches: Sequence[ParallelBranch[StateT, DepsT, ItemT, ResultT]],
        join: Join[ValueT, ResultT],
        dispose: Callable[[Any], None] | None = None,
        metadata: NodeMetadata | None = None,
    ) -> str: ...
    def fan_out(
        self,
        name: str,
        *,
        mode: FanOutMode = "broadcast",
        map: Any = None,
        branches: Sequence[ParallelBranch[Any, Any, Any, Any]],
        join: Join[Any, Any],
        dispose: Callable[[Any], None] | None = None,
        metadata: NodeMetadata | None = None,
    ) -> str:
        """A parallel node with one route: runs `branches` on the value (`broadcast`) or on every
        item `map(ctx, value, emit)` emits (`map`), then folds the results with `join` in source
        order. `dispose(x)`, when given, is called for emitted items and branch results after
        reduction, and for an accumulator a failure abandoned."""
        d = _Def(FAN_OUT, name, None, metadata)
        d.mode = mode
        d.map_fn = map
        d.branches = branches
        d.join = join
        d.dispose = dispose
        self._defs.append(d)
        return name

    def entry(self, name: str) -> None:
        """The node the run starts at (after the start callback)."""
        self._entries.append(name)

    # --- routes ----------------------------------------------------------------------------------

    def _route(self, how: str, node: str, route: Route) -> None:
        for d in reversed(self._defs):
            if d.name == node:
                d.routes.append((how, route))
                return
        self._orphans.append((how, node, route))

    def connect(self, node: str, target: str, *, metadata: EdgeMetadata | None = None) -> None:
        """The unconditional route of a step or fan-out to another node."""
        self._route("connect", node, Route(None, target, metadata))

    def finish(self, node: str, *, metadata: EdgeMetadata | None = None) -> None:
        """The unconditional route of a step or fan-out to the end callback."""
        self._route("finish", node, Route(None, None, metadata))

    def branch(
        self, decision: str, branch: str, target: str, *, metadata: EdgeMetadata | None = None
    ) -> None:
        """A decision's named route to another node."""
        self._route("branch", decision, Route(branch, target, metadata))

    def branch_finish(self, decision: str, branch: str, *, metadata: EdgeMetadata | None = None) -> None:
        """A decision's named route to the end callback."""
        self._route("branch_finish", decision, Route(branch, None, metadata))

    # --- build -----------------------------------------------------------------------------------

    def build(self, *, limits: GraphLimits | None = None) -> Graph[StateT, DepsT, InputT, ValueT, OutputT]:
        """Check the whole definition and compile it; raises a `GraphDefinitionError` subclass."""
        from ._graph import Graph

        limits = limits or GraphLimits()
        start, end = self._callbacks()
        if len(self._defs) > limits.max_nodes:
            raise DefinitionLimitError(
                f"the graph has {len(self._defs)} nodes, past max_nodes={limits.max_nodes}"
            )
        for how, node, _ in self._orphans:
            raise UnknownNodeError(f"{how}() names node {node!r}, which is not registered", node=node)
        index: dict[str, int] = {}
        for d in self._defs:
            _check_name(d.name, limits, "node")
            if d.name in index:
                raise DuplicateNodeError(f"two nodes are named {d.name!r}", node=d.name)
            index[d.name] = len(index)
        _check_metadata(start[1], limits, "the start callback")
        _check_metadata(end[1], limits, "the end callback")
        nodes: list[Node] = []
        total_routes = 0
        for d in self._defs:
            node = Node(d.kind, d.name, index[d.name], d.fn, d.metadata)
            _check_metadata(d.metadata, limits, d.name)
            if d.kind == FAN_OUT:
                _compile_fan_out(d, node, limits)
            elif not callable(d.fn):
                raise InvalidRouteError(
                    f"node {d.name!r}: the callback {d.fn!r} is not callable", node=d.name
                )
            total_routes += _compile_routes(d, node, index, limits)
            nodes.append(node)
        if total_routes > limits.max_routes:
            raise DefinitionLimitError(
                f"the graph has {total_routes} routes, past max_routes={limits.max_routes}"
            )
        if len(self._entries) != 1:
            raise IncompleteGraphError(
                "register the entry node with builder.entry(name)"
                if not self._entries
                else f"the entry is registered {len(self._entries)} times; register it once"
            )
        entry = self._entries[0]
        if entry not in index:
            raise UnknownNodeError(f"the entry {entry!r} is not a registered node", node=entry)
        _check_reachable(nodes, index[entry])
        return Graph(
            nodes=tuple(nodes),
            entry=index[entry],
            start=start,
            end=end,
            limits=limits,
            definition_id=self.definition_id,
            types=tuple(self._types),
            builder=self,
        )

    def _callbacks(self) -> tuple[tuple[Any, NodeMetadata | None], tuple[Any, NodeMetadata | None]]:
        for what, items in (("start", self._starts), ("end", self._ends)):
            if len(items) != 1:
                raise IncompleteGraphError(
                    f"register the {what} callback with builder.{what}(fn)"
                    if not items
                    else f"the {what} callback is registered {len(items)} times; register it once"
                )
            if not callable(items[0][0]):
                raise IncompleteGraphError(f"the {what} callback {items[0][0]!r} is not callable")
        return self._starts[0], self._ends[0]


def _check_name(name: Any, limits: GraphLimits, what: str, node: str | None = None) -> None:
    owner = node if node is not None else name if isinstance(name, str) and name else None
    if not isinstance(name, str) or not name:
        raise InvalidNodeNameError(f"a {what} name must be a non-empty string, got {name!r}", node=owner)
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > limits.max_name_bytes:
        raise InvalidNodeNameError(
            f"the {what} name {name[:40]!r}... is {size} bytes, past max_name_bytes={limits.max_name_bytes}",
            node=owner,
        )
    if not _NAME.match(name):
        raise InvalidNodeNameError(
            f"the {what} name {name!r} must start with a letter or '_' and use only letters, digits, "
            "'_', '.' and '-'",
            node=owner,
        )


def _check_text(value: Any, limits: GraphLimits, field: str, owner: str) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value:
        raise InvalidMetadataError(
            f"{owner}: metadata {field} must be a non-empty string or None", node=owner
        )
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limits.max_metadata_bytes:
        raise InvalidMetadataError(
            f"{owner}: metadata {field} is {size} bytes, past max_metadata_bytes={limits.max_metadata_bytes}",
            node=owner,
        )


def _check_source(source: Any, limits: GraphLimits, owner: str) -> None:
    if source is None:
        return
    _check_text(source.file, limits, "source.file", owner)
    if type(source.line) is not int or source.line < 1:
        raise InvalidMetadataError(f"{owner}: metadata source.line must be a positive int", node=owner)


def _check_metadata(metadata: NodeMetadata | None, limits: GraphLimits, owner: str) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, NodeMetadata):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidMetadataError(f"{owner}: metadata must be a NodeMetadata, got {metadata!r}", node=owner)
    _check_text(metadata.label, limits, "label", owner)
    _check_text(metadata.description, limits, "description", owner)
    _check_text(metadata.group, limits, "group", owner)
    _check_source(metadata.source, limits, owner)


def _check_edge_metadata(metadata: EdgeMetadata | None, limits: GraphLimits, owner: str) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, EdgeMetadata):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidMetadataError(
            f"{owner}: edge metadata must be an EdgeMetadata, got {metadata!r}", node=owner
        )
    _check_text(metadata.label, limits, "label", owner)
    _check_text(metadata.description, limits, "description", owner)
    _check_source(metadata.source, limits, owner)


def _compile_fan_out(d: _Def, node: Node, limits: GraphLimits) -> None:
    name = d.name
    if d.mode not in ("broadcast", "map"):
        raise InvalidFanOutError(
            f"fan-out {name!r}: mode must be 'broadcast' or 'map', got {d.mode!r}", node=name
        )
    if d.mode == "map" and not callable(d.map_fn):
        raise InvalidFanOutError(f"fan-out {name!r}: mode='map' needs map=fn(ctx, value, emit)", node=name)
    if d.mode == "broadcast" and d.map_fn is not None:
        raise InvalidFanOutError(
            f"fan-out {name!r}: map= is only used with mode='map' (broadcast sends the value itself)",
            node=name,
        )
    branches = tuple(d.branches)
    if not branches:
        raise InvalidFanOutError(f"fan-out {name!r} has no branches", node=name)
    if len(branches) > limits.max_parallel_branches:
        raise DefinitionLimitError(
            f"fan-out {name!r} has {len(branches)} branches, past max_parallel_branches="
            f"{limits.max_parallel_branches}",
            node=name,
        )
    seen: set[str] = set()
    branch: Any
    for branch in branches:
        if not isinstance(branch, ParallelBranch):
            raise InvalidFanOutError(
                f"fan-out {name!r}: branches must be ParallelBranch, got {branch!r}", node=name
            )
        _check_name(branch.name, limits, "parallel branch", node=name)
        if branch.name in seen:
            raise DuplicateNodeError(f"fan-out {name!r} has two branches named {branch.name!r}", node=name)
        seen.add(branch.name)
        fn: Any = cast("Any", branch).fn
        if getattr(fn, "__ferrule_agent_node__", False):
            raise InvalidFanOutError(
                f"fan-out {name!r}: branch {branch.name!r} is an agent node; agent nodes are ordinary "
                "steps, never fan-out branches (run agents sequentially as steps)",
                node=name,
            )
        if not callable(fn):
            raise InvalidFanOutError(f"fan-out {name!r}: branch {branch.name!r} is not callable", node=name)
    join: Any = d.join
    if (
        not isinstance(join, Join)
        or not callable(cast("Join[Any, Any]", join).initial)
        or not callable(cast("Join[Any, Any]", join).reduce)
    ):
        raise InvalidFanOutError(f"fan-out {name!r}: join must be Join(initial, reduce)", node=name)
    if d.dispose is not None and not callable(d.dispose):
        raise InvalidFanOutError(f"fan-out {name!r}: dispose must be callable", node=name)
    node.mode = d.mode
    node.branches = branches
    node.join = join
    node.map_fn = d.map_fn
    node.map_async = is_async_callable(d.map_fn) if d.map_fn is not None else False
    dispose: Any = d.dispose
    node.dispose = dispose


def _compile_routes(d: _Def, node: Node, index: dict[str, int], limits: GraphLimits) -> int:
    name = d.name
    kind = KIND_NAMES[d.kind]
    for how, route in d.routes:
        if d.kind == DECISION and how in ("connect", "finish"):
            raise InvalidRouteError(
                f"decision {name!r} cannot have an unconditional route ({how}); use branch() or branch_finish()",
                node=name,
            )
        if d.kind != DECISION and how in ("branch", "branch_finish"):
            raise InvalidRouteError(
                f"{kind} {name!r} cannot have named branches ({how}); use connect() or finish()", node=name
            )
        if route.target is not None and route.target not in index:
            raise UnknownNodeError(
                f"{kind} {name!r} routes to {route.target!r}, which is not registered", node=name
            )
        if route.branch is not None:
            _check_name(route.branch, limits, "branch", node=name)
        _check_edge_metadata(route.metadata, limits, name)
    if d.kind == DECISION:
        if not d.routes:
            raise MissingRouteError(
                f"decision {name!r} has no branches; add branch() or branch_finish()", node=name
            )
        if len(d.routes) > limits.max_branches_per_decision:
            raise DefinitionLimitError(
                f"decision {name!r} has {len(d.routes)} branches, past max_branches_per_decision="
                f"{limits.max_branches_per_decision}",
                node=name,
            )
        for _, route in d.routes:
            assert route.branch is not None
            if route.branch in node.branch_targets:
                raise DuplicateBranchError(
                    f"decision {name!r} registers branch {route.branch!r} twice", node=name
                )
            node.branch_targets[route.branch] = END if route.target is None else index[route.target]
    else:
        if not d.routes:
            raise MissingRouteError(f"{kind} {name!r} has no route; add connect() or finish()", node=name)
        if len(d.routes) > 1:
            raise InvalidRouteError(
                f"{kind} {name!r} has {len(d.routes)} routes; a {kind} has exactly one unconditional route",
                node=name,
            )
        target = d.routes[0][1].target
        node.target = END if target is None else index[target]
    node.route_defs = [route for _, route in d.routes]
    return len(d.routes)


def _check_reachable(nodes: list[Node], entry: int) -> None:
    seen = [False] * len(nodes)
    seen[entry] = True
    stack = [entry]
    while stack:
        node = nodes[stack.pop()]
        targets = node.branch_targets.values() if node.kind == DECISION else (node.target,)
        for target in targets:
            if target != END and not seen[target]:
                seen[target] = True
                stack.append(target)
    for node, reached in zip(nodes, seen, strict=True):
        if not reached:
            raise UnreachableNodeError(
                f"{KIND_NAMES[node.kind]} {node.name!r} cannot be reached from the entry; route to it or remove it",
                node=node.name,
            )
