"""Pictures of a graph: `Visualization` (data) and Mermaid `stateDiagram-v2` documents."""

from __future__ import annotations

import json
from typing import Literal
from typing import TypeAlias

import msgspec

from ._errors import GraphVisualizationTooLarge
from ._node import DECISION
from ._node import END
from ._node import FAN_OUT
from ._node import KIND_NAMES
from ._node import GraphShape
from ._node import Node
from ._types import NodeMetadata
from ._types import SourceLocation

__all__ = [
    "VISUALIZATION_FORMAT_VERSION",
    "MermaidDirection",
    "Visualization",
    "VisualizationEdge",
    "VisualizationNode",
    "VisualizationNodeId",
    "VisualizationNodeKind",
    "escape_mermaid",
]

VISUALIZATION_FORMAT_VERSION = 1
"""The schema version of `Visualization`."""

VisualizationNodeKind: TypeAlias = Literal["start", "end", "step", "decision", "fan_out"]
"""The kinds of nodes in a picture (`start` and `end` are the synthetic callbacks)."""
MermaidDirection: TypeAlias = Literal["TB", "BT", "LR", "RL"]
"""The layout direction of a Mermaid document."""


class VisualizationNodeId(msgspec.Struct, frozen=True):
    """A node's identity in a picture: its kind and name (start and end are synthetic)."""

    kind: VisualizationNodeKind
    """The node's kind."""
    name: str
    """The node's name (`start`, `end` for the synthetic nodes)."""


class VisualizationNode(msgspec.Struct, frozen=True, kw_only=True):
    """One node of the picture."""

    id: VisualizationNodeId
    """The node's identity."""
    label: str
    """What to show (the metadata label, else the name)."""
    description: str | None = None
    """The metadata description."""
    group: str | None = None
    """The metadata group."""
    source: SourceLocation | None = None
    """Where it is defined."""
    mode: Literal["broadcast", "map"] | None = None
    """A fan-out's mode."""
    branches: tuple[str, ...] = ()
    """A fan-out's parallel branch names, in order."""


class VisualizationEdge(msgspec.Struct, frozen=True, kw_only=True):
    """One route (or the synthetic edge from start to the entry)."""

    source: VisualizationNodeId
    """Where it leaves."""
    target: VisualizationNodeId
    """Where it arrives."""
    branch: str | None = None
    """A decision branch's identity (never a presentation label)."""
    label: str | None = None
    """The metadata label."""
    description: str | None = None
    """The metadata description."""
    location: SourceLocation | None = None
    """Where the route is registered."""


class Visualization(msgspec.Struct, frozen=True, kw_only=True):
    """A graph as data: nodes in source order between synthetic start and end, edges in order."""

    format_version: int
    """`VISUALIZATION_FORMAT_VERSION`."""
    definition_sha256: str
    """The graph's definition fingerprint."""
    nodes: tuple[VisualizationNode, ...]
    """Start, the registered nodes in definition order, end."""
    edges: tuple[VisualizationEdge, ...]
    """Start → entry, then every node's routes in definition and registration order."""


START_ID = VisualizationNodeId("start", "start")
END_ID = VisualizationNodeId("end", "end")


def _node_id(node: Node) -> VisualizationNodeId:
    return VisualizationNodeId(KIND_NAMES[node.kind], node.name)


def _synthetic(node_id: VisualizationNodeId, metadata: NodeMetadata | None) -> VisualizationNode:
    m = metadata or NodeMetadata()
    return VisualizationNode(
        id=node_id, label=m.label or node_id.name, description=m.description, group=m.group, source=m.source
    )


def visualization(graph: GraphShape) -> Visualization:
    """The graph's `Visualization`."""
    nodes = [_synthetic(START_ID, graph.start_metadata)]
    edges = [VisualizationEdge(source=START_ID, target=_node_id(graph.nodes[graph.entry]))]
    for node in graph.nodes:
        m = node.metadata or NodeMetadata()
        nodes.append(
            VisualizationNode(
                id=_node_id(node),
                label=m.label or node.name,
                description=m.description,
                group=m.group,
                source=m.source,
                mode=node.mode if node.kind == FAN_OUT else None,
                branches=tuple(b.name for b in node.branches),
            )
        )
        targets = (
            [node.branch_targets[r.branch] for r in node.route_defs if r.branch is not None]
            if node.kind == DECISION
            else [node.target]
        )
        for route, target in zip(node.route_defs, targets, strict=True):
            em = route.metadata
            edges.append(
                VisualizationEdge(
                    source=_node_id(node),
                    target=END_ID if target == END else _node_id(graph.nodes[target]),
                    branch=route.branch,
                    label=em.label if em is not None else None,
                    description=em.description if em is not None else None,
                    location=em.source if em is not None else None,
                )
            )
    nodes.append(_synthetic(END_ID, graph.end_metadata))
    return Visualization(
        format_version=VISUALIZATION_FORMAT_VERSION,
        definition_sha256=graph.fingerprint,
        nodes=tuple(nodes),
        edges=tuple(edges),
    )


# Everything that could end a label, start markup or an entity, or break a line is written as a
# Mermaid entity code (`#34;`), which Mermaid turns back into the character as text.
_SPECIAL = frozenset('"<>&#;:{}[]|\\`%=')


def escape_mermaid(text: str) -> str:
    """`text` with quotes, markup characters, newlines and control characters as entity codes."""
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if ch in _SPECIAL or code < 32 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029):
            out.append(f"#{code};")
        else:
            out.append(ch)
    return "".join(out)


def _title(text: str) -> str:
    # A JSON string is a YAML double-quoted scalar; markup characters are escaped on top of that.
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _has(metadata: NodeMetadata | None) -> bool:
    return metadata is not None and metadata != NodeMetadata()


def render_mermaid(
    graph: GraphShape,
    *,
    title: str | None = None,
    direction: MermaidDirection = "TB",
    edge_labels: bool = True,
) -> str:
    """The Mermaid `stateDiagram-v2` document of `graph`."""
    if direction not in ("TB", "BT", "LR", "RL"):
        raise ValueError(f"direction must be 'TB', 'BT', 'LR' or 'RL', got {direction!r}")
    lines: list[str] = []
    if title is not None:
        lines += ["---", f"title: {_title(title)}", "---"]
    lines += ["stateDiagram-v2", f"    direction {direction}"]
    diagram = _Mermaid(graph, edge_labels)
    diagram.declare_states()
    lines += diagram.declarations()
    diagram.connect()
    lines += diagram.edges
    lines += diagram.notes
    document = "\n".join(lines) + "\n"
    size = len(document.encode("utf-8", "surrogatepass"))
    limit = graph.limits.max_visualization_bytes
    if size > limit:
        raise GraphVisualizationTooLarge(
            f"the Mermaid document is {size} bytes, past max_visualization_bytes={limit}"
        )
    return document


class _Mermaid:
    """The parts of one Mermaid document: state declarations by group, edges, and notes."""

    def __init__(self, graph: GraphShape, edge_labels: bool) -> None:
        self.graph = graph
        self.edge_labels = edge_labels
        self.ids = {node.index: f"n{node.index + 1}" for node in graph.nodes}
        self.start_state = "start" if _has(graph.start_metadata) else None
        self.end_state = "end" if _has(graph.end_metadata) else None
        self.groups: dict[str, list[list[str]]] = {}  # in first-appearance order
        self.loose: list[list[str]] = []
        self.edges: list[str] = []
        self.notes: list[str] = []

    def declare(self, group: str | None, decl: list[str]) -> None:
        if group is None:
            self.loose.append(decl)
        else:
            self.groups.setdefault(group, []).append(decl)

    def note(self, state: str, texts: list[str]) -> None:
        if texts:
            self.notes.append(f"    note right of {state}")
            self.notes.extend(f"        {escape_mermaid(t)}" for t in texts)
            self.notes.append("    end note")

    def node_notes(self, state: str, metadata: NodeMetadata | None) -> None:
        if metadata is None:
            return
        texts: list[str] = []
        if metadata.description is not None:
            texts.append(metadata.description)
        if metadata.source is not None:
            texts.append(f"defined at {metadata.source.file}:{metadata.source.line}")
        self.note(state, texts)

    def declare_states(self) -> None:
        graph = self.graph
        for state, metadata, default in (
            (self.start_state, graph.start_metadata, "start"),
            (self.end_state, graph.end_metadata, "end"),
        ):
            if state is not None and metadata is not None:
                self.declare(
                    metadata.group, [f'state "{escape_mermaid(metadata.label or default)}" as {state}']
                )
                self.node_notes(state, metadata)
        for node in graph.nodes:
            sid = self.ids[node.index]
            m = node.metadata
            decl = [f'state "{escape_mermaid(m.label if m is not None and m.label else node.name)}" as {sid}']
            if node.kind == DECISION:
                decl.append(f"state {sid}_choice <<choice>>")
            elif node.kind == FAN_OUT:
                decl.append(f"state {sid}_fork <<fork>>")
                decl += [
                    f'state "{escape_mermaid(b.name)}" as {sid}_b{i + 1}' for i, b in enumerate(node.branches)
                ]
                decl.append(f"state {sid}_join <<join>>")
            self.declare(m.group if m is not None else None, decl)
            self.node_notes(sid, m)

    def declarations(self) -> list[str]:
        lines: list[str] = []
        for index, (group, decls) in enumerate(self.groups.items()):
            lines.append(f'    state "{escape_mermaid(group)}" as g{index + 1} {{')
            lines.extend(f"        {line}" for decl in decls for line in decl)
            lines.append("    }")
        lines.extend(f"    {line}" for decl in self.loose for line in decl)
        return lines

    def edge(self, source: str, target: str, label: str | None) -> None:
        if self.edge_labels and label:
            self.edges.append(f"    {source} --> {target}: {escape_mermaid(label)}")
        else:
            self.edges.append(f"    {source} --> {target}")

    def connect(self) -> None:
        entry = self.ids[self.graph.entry]
        if self.start_state is not None:
            self.edge("[*]", self.start_state, None)
            self.edge(self.start_state, entry, None)
        else:
            self.edge("[*]", entry, None)
        for node in self.graph.nodes:
            self.routes(node, self.node_exit(node))
        if self.end_state is not None:
            self.edge(self.end_state, "[*]", None)

    def node_exit(self, node: Node) -> str:
        """The state a node's routes leave from, after its choice or its fork and join."""
        sid = self.ids[node.index]
        if node.kind == DECISION:
            self.edge(sid, f"{sid}_choice", None)
            return f"{sid}_choice"
        if node.kind == FAN_OUT:
            self.edge(sid, f"{sid}_fork", "each item" if node.mode == "map" else None)
            for i in range(len(node.branches)):
                self.edge(f"{sid}_fork", f"{sid}_b{i + 1}", None)
                self.edge(f"{sid}_b{i + 1}", f"{sid}_join", None)
            return f"{sid}_join"
        return sid

    def routes(self, node: Node, source: str) -> None:
        sid = self.ids[node.index]
        end_target = self.end_state or "[*]"
        for route in node.route_defs:
            target_index = node.branch_targets[route.branch] if route.branch is not None else node.target
            target = end_target if target_index == END else self.ids[target_index]
            em = route.metadata
            label = em.label if em is not None and em.label else route.branch
            self.edge(source, target, label)
            if em is not None:
                texts: list[str] = []
                if em.description is not None:
                    texts.append(f"{label or 'route'}: {em.description}")
                if em.source is not None:
                    texts.append(f"{label or 'route'} defined at {em.source.file}:{em.source.line}")
                self.note(sid, texts)
