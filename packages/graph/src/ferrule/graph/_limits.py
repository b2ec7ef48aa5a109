"""`GraphLimits`: the bounds of one graph definition and of every run of it."""

from __future__ import annotations

import msgspec

__all__ = ["GraphLimits"]

_MIB = 1024 * 1024


class GraphLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Inclusive bounds checked when the graph is built, when it runs and when snapshots are read.

    Every limit is inclusive: a definition or run exactly at a limit is accepted, one past it is not.
    """

    max_nodes: int = 1024
    """Registered nodes (steps, decisions and fan-outs; start and end are not counted)."""
    max_routes: int = 4096
    """Routes of all nodes together (one per step and fan-out, one per decision branch)."""
    max_branches_per_decision: int = 64
    """Branches of one decision."""
    max_name_bytes: int = 128
    """UTF-8 bytes of a node, branch or parallel-branch name."""
    max_steps: int = 10_000
    """Nodes one run may execute; `RunOptions.max_steps` may only lower it."""
    max_concurrency: int = 64
    """The largest `RunOptions.max_concurrency` (concurrent fan-out tasks)."""
    max_fan_out_items: int = 10_000
    """Items one map may emit."""
    max_fan_out_tasks: int = 10_000
    """Tasks of one fan-out (items times branches)."""
    max_parallel_branches: int = 64
    """Branches of one fan-out."""
    max_metadata_bytes: int = 4096
    """UTF-8 bytes of one metadata string (label, description, group, file)."""
    max_visualization_bytes: int = 1 * _MIB
    """Bytes of a rendered Mermaid document."""
    max_snapshot_bytes: int = 64 * _MIB
    """Bytes of a whole snapshot envelope."""
    max_snapshot_payload_bytes: int = 32 * _MIB
    """Bytes of one payload document (state, value, agent state)."""
    max_snapshot_depth: int = 64
    """Nesting depth of a payload document."""
    max_snapshot_collection_items: int = 100_000
    """Members of any one object or array in a payload document."""

    def __post_init__(self) -> None:
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if type(value) is not int or value < 1:
                raise ValueError(f"GraphLimits.{field} must be a positive int, got {value!r}")
        if self.max_snapshot_depth > 512:
            raise ValueError("GraphLimits.max_snapshot_depth must be at most 512 (the JSON decoder's bound)")
